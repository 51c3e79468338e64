import Glibc

/// A server CA and certificate (SAN IP:127.0.0.1), a separate client CA with one client
/// certificate, and a client certificate from the wrong CA; made once with the openssl CLI.
package struct TestPKI: Sendable {
  package let directory: String
  package var serverCA: String { directory + "/ca.pem" }
  package var serverCert: String { directory + "/server.pem" }
  package var serverKey: String { directory + "/server.key" }
  package var clientCA: String { directory + "/client-ca.pem" }
  package var clientCert: String { directory + "/client.pem" }
  package var clientKey: String { directory + "/client.key" }
  package var strangerCert: String { directory + "/stranger.pem" }
  package var strangerKey: String { directory + "/stranger.key" }
}

extension TestPKI {
  /// Made once per test run; removed at exit (test keys do not outlive the run).
  package static let shared: TestPKI = {
    let d = temporaryDirectory("tls-pki")
    func run(_ arguments: [String]) {
      let (status, output) = runCommand(["/usr/bin/openssl"] + arguments)
      precondition(status == 0, "openssl \(arguments.joined(separator: " ")): \(output)")
    }
    func ca(_ name: String, _ subject: String) {
      run([
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(d)/\(name).key",
        "-out", "\(d)/\(name).pem", "-days", "2", "-subj", subject,
      ])
    }
    func leaf(_ name: String, _ subject: String, signedBy issuer: String, extensions: String) {
      writeFile("\(d)/\(name).ext", extensions)
      run([
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(d)/\(name).key",
        "-out", "\(d)/\(name).csr", "-subj", subject,
      ])
      run([
        "x509", "-req", "-in", "\(d)/\(name).csr", "-CA", "\(d)/\(issuer).pem", "-CAkey", "\(d)/\(issuer).key",
        "-CAcreateserial", "-out", "\(d)/\(name).pem", "-days", "2", "-extfile", "\(d)/\(name).ext",
      ])
      chmod("\(d)/\(name).key", 0o600)
    }
    ca("ca", "/CN=ScanGate test server CA")
    ca("client-ca", "/CN=ScanGate test client CA")
    leaf(
      "server", "/CN=127.0.0.1", signedBy: "ca",
      extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    leaf("client", "/CN=technician", signedBy: "client-ca", extensions: "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    leaf("stranger", "/CN=stranger", signedBy: "ca", extensions: "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    atexit { removeTree(TestPKI.shared.directory) }  // test keys do not outlive the run
    return TestPKI(directory: d)
  }()
}
