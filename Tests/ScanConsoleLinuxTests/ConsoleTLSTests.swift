import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Synchronization
import Testing

/// The console beyond loopback: TLS listeners checked with independent clients (OpenSSL's
/// `s_client`, `socat`), client certificates, the handshake timeout, and the refusal of a
/// plaintext listener that is not loopback. Traffic stays on loopback: the TLS listeners are
/// `tls:127.0.0.1:0`, which is served exactly as a non-loopback listener with TLS configured.
@Suite(.serialized) struct ConsoleTLSTests {
  typealias Rig = ConsoleTests.Rig
  static let secret = "tls-test-secret-1"

  typealias PKI = TestPKI
  static var pki: TestPKI { TestPKI.shared }

  /// A rig whose console has a TLS listener on loopback (and, with `plain`, a plaintext one).
  static func rig(clientCA: Bool = false, plain: Bool = false, _ more: @escaping (inout ConsoleSettings) -> Void = { _ in }) -> Rig {
    let pki = pki
    return Rig(
      consoleSettings: { s in
        s.listen = plain ? ["127.0.0.1:0", "tls:127.0.0.1:0"] : ["tls:127.0.0.1:0"]
        s.tlsCertFile = pki.serverCert
        s.tlsKeyFile = pki.serverKey
        if clientCA { s.tlsClientCAFile = pki.clientCA }
        more(&s)
      }, secret: secret)
  }

  static func tlsPort(_ rig: Rig) -> UInt16 {
    let address = rig.loop.console!.boundAddresses.first { $0.hasPrefix("tls:") }!
    return UInt16(address.split(separator: ":").last!)!
  }

  /// Runs `arguments` while stepping the rig's loop (the server is in this process) until it
  /// exits; returns its status and output (stdout and stderr).
  static func runAgainst(_ rig: Rig, _ arguments: [String], timeoutSeconds: Int = 20) -> (Int32, String) {
    let child = Child.start(arguments)
    let end = SystemMonotonicClock().now().adding(milliseconds: timeoutSeconds * 1000)
    var status: Int32 = 0
    while SystemMonotonicClock().now() < end {
      rig.step()
      if waitpid(child.pid, &status, WNOHANG) == child.pid {
        let signal = status & 0x7f
        return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, child.output)
      }
    }
    kill(child.pid, SIGKILL)
    waitpid(child.pid, &status, 0)
    return (-1, child.output)
  }

  /// A shell line piping the console session `lines` into `client`.
  static func session(_ client: String) -> [String] {
    ["/bin/sh", "-c", "printf 'VERSION\\nAUTH \(secret)\\nSTATUS\\nQUIT\\n' | \(client)"]
  }

  static func sClient(_ port: UInt16, _ extra: String = "") -> String {
    "/usr/bin/openssl s_client -connect 127.0.0.1:\(port) -quiet -CAfile \(pki.serverCA) -verify_return_error -verify_ip 127.0.0.1 \(extra)"
  }

  static func expectWholeSession(_ output: String, _ rig: Rig) {
    #expect(output.contains("! scangate "), "\(output)")
    #expect(output.contains("OK scangate "), "\(output)")
    #expect(output.contains("OK operator"), "\(output)")
    #expect(output.contains("OK status "), "\(output)")
    #expect(output.contains("OK bye"), "\(output)")
  }

  /// Steps the loop until `done` holds or `milliseconds` pass; returns whether it held.
  static func step(_ rig: Rig, untilMilliseconds milliseconds: Int = 5_000, _ done: () -> Bool) -> Bool {
    let end = SystemMonotonicClock().now().adding(milliseconds: milliseconds)
    while SystemMonotonicClock().now() < end {
      rig.step()
      if done() { return true }
    }
    return done()
  }

  /// A plain TCP connection to `port` (not through `Rig.connect`, which waits for the greeting).
  static func rawConnect(_ rig: Rig, port: UInt16) -> ConsoleTests.TestClient { rig.rawConnect(port: port) }

  // MARK: - Address classification and the refusal (nothing is bound)

  @Test("loopback is 127.0.0.0/8 and ::1; wildcards, LAN, link-local and mapped addresses are not")
  func classification() {
    for host in ["127.0.0.1", "127.8.9.10", "127.255.255.255", "::1", "0:0:0:0:0:0:0:1"] {
      #expect(ConsoleListener.isLoopback(host: host) == true, "\(host)")
    }
    for host in ["0.0.0.0", "192.168.1.5", "10.0.0.1", "128.0.0.1", "::", "fe80::1", "::ffff:127.0.0.1", "::2", "1::1"] {
      #expect(ConsoleListener.isLoopback(host: host) == false, "\(host)")
    }
    for host in ["localhost", "", "127.1", "[::1]"] { #expect(ConsoleListener.isLoopback(host: host) == nil, "\(host)") }
  }

  @Test("a plaintext listener that is not loopback is refused unless allowed; TLS serves it when configured")
  func refusal() throws {
    for address in ["0.0.0.0:4570", "192.168.1.5:4570", "[::]:4570", "[fe80::1]:4570"] {
      var s = ConsoleSettings()
      s.listen = ["127.0.0.1:4570", address]
      #expect(throws: SystemError.self) { try ConsoleListener.plan(s) }
      do {
        _ = try ConsoleListener.plan(s)
      } catch {
        #expect(error.code == Errno(EPERM))
        #expect(error.operation.contains("console.listen \"\(address)\" is not loopback"))
        #expect(error.operation.contains("console.allow_plaintext_remote = true"))
      }
      // The server refuses before binding anything: the same error.
      #expect(throws: SystemError.self) { _ = try ConsoleServer(settings: s, clock: SystemMonotonicClock()) }
      s.allowPlaintextRemote = true
      #expect(
        try ConsoleListener.plan(s) == [
          ConsoleListener(address: "127.0.0.1:4570", tls: false, loopback: true),
          ConsoleListener(address: address, tls: false, loopback: false),
        ])
      s.allowPlaintextRemote = false
      s.tlsCertFile = "/c.pem"
      s.tlsKeyFile = "/k.pem"
      #expect(
        try ConsoleListener.plan(s) == [
          ConsoleListener(address: "127.0.0.1:4570", tls: false, loopback: true),
          ConsoleListener(address: address, tls: true, loopback: false),
        ])
    }
    var s = ConsoleSettings()
    s.listen = ["[::1]:4570", "127.8.9.10:1"]
    #expect(try ConsoleListener.plan(s).allSatisfy { !$0.tls && $0.loopback })
    s.listen = ["tls:127.0.0.1:0"]
    #expect(throws: SystemError.self) { try ConsoleListener.plan(s) }  // "tls:" without files
    s.tlsCertFile = "/c.pem"
    #expect(throws: SystemError.self) { try ConsoleListener.plan(s) }  // a cert without its key
    s.tlsKeyFile = "/k.pem"
    #expect(try ConsoleListener.plan(s) == [ConsoleListener(address: "127.0.0.1:0", tls: true, loopback: true)])
    s.listen = ["localhost:4570"]
    #expect(throws: SystemError.self) { try ConsoleListener.plan(s) }
  }

  @Test("the TLS key follows the secret-file rules; a key that does not match the certificate is refused")
  func keyFile() {
    let dir = temporaryDirectory("tls-key")
    defer { removeTree(dir) }
    let key = (try? readWholeFile(Self.pki.serverKey, maxBytes: 16_384)) ?? []
    writeFile(dir + "/open.key", bytes: key)
    chmod(dir + "/open.key", 0o640)
    var s = ConsoleSettings()
    s.listen = ["tls:127.0.0.1:0"]
    s.tlsCertFile = Self.pki.serverCert
    s.tlsKeyFile = dir + "/open.key"
    do {
      _ = try ConsoleServer(settings: s, clock: SystemMonotonicClock())
      Issue.record("a group-readable key was accepted")
    } catch {
      #expect(error.operation.contains("console.tls_key_file \(dir)/open.key: is readable by group or others"), "\(error)")
    }
    s.tlsKeyFile = Self.pki.clientKey  // mode 0600, but not the certificate's key
    do {
      _ = try ConsoleServer(settings: s, clock: SystemMonotonicClock())
      Issue.record("a mismatched key was accepted")
    } catch {
      #expect(error.operation.contains("console.tls_key_file \(Self.pki.clientKey): private key: "), "\(error)")
      #expect(error.operation.contains("key values mismatch"), "\(error)")
    }
    s.tlsKeyFile = Self.pki.serverKey
    #expect((try? ConsoleServer(settings: s, clock: SystemMonotonicClock())) != nil)
  }

  // MARK: - Independent clients

  @Test("openssl s_client: greeting, VERSION, AUTH, STATUS, QUIT over TLS, the server certificate verified")
  func sClientSession() {
    let rig = Self.rig()
    let (status, output) = Self.runAgainst(rig, Self.session(Self.sClient(Self.tlsPort(rig))))
    #expect(status == 0, "\(output)")
    Self.expectWholeSession(output, rig)
    let console = rig.loop.console!
    #expect(console.tlsHandshakes == 1)
    #expect(Self.step(rig) { console.connectedClients == 0 })
  }

  @Test("socat OPENSSL: the same session, verified against the CA")
  func socatSession() {
    let rig = Self.rig()
    let client = "/usr/bin/socat -t 5 - OPENSSL:127.0.0.1:\(Self.tlsPort(rig)),cafile=\(Self.pki.serverCA)"
    let (status, output) = Self.runAgainst(rig, Self.session(client))
    #expect(status == 0, "\(output)")
    Self.expectWholeSession(output, rig)
  }

  @Test("TLS 1.2 negotiates an ECDHE AEAD suite; TLS 1.1 and CBC-only offers are refused")
  func protocolAndCiphers() {
    let rig = Self.rig()
    let port = Self.tlsPort(rig)
    let (status, output) = Self.runAgainst(rig, Self.session(Self.sClient(port, "-tls1_2 -brief")))
    #expect(status == 0, "\(output)")
    #expect(output.contains("Protocol version: TLSv1.2"), "\(output)")
    #expect(output.contains("Ciphersuite: ECDHE-ECDSA-AES256-GCM-SHA384") || output.contains("Ciphersuite: ECDHE-ECDSA-CHACHA20"), "\(output)")
    #expect(output.contains("OK bye"))
    let console = rig.loop.console!
    // The client side allows TLS 1.1 (security level 0), so the refusal is the server's.
    let (_, old) = Self.runAgainst(rig, Self.session(Self.sClient(port, "-tls1_1 -cipher DEFAULT@SECLEVEL=0")))
    #expect(!old.contains("OK scangate"), "\(old)")
    #expect(console.lastTLSFailure.contains("unsupported protocol"), "\(console.lastTLSFailure)")
    let (_, cbc) = Self.runAgainst(rig, Self.session(Self.sClient(port, "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA")))
    #expect(!cbc.contains("OK scangate"), "\(cbc)")
    #expect(console.lastTLSFailure.contains("no shared cipher"), "\(console.lastTLSFailure)")
    #expect(console.tlsHandshakeFailures == 2)
    #expect(Self.step(rig) { console.connectedClients == 0 })
  }

  @Test("a plaintext client on the TLS port gets no console; the handshake fails and the slot is freed")
  func plaintextOnTLSPort() {
    let rig = Self.rig()
    let console = rig.loop.console!
    let client = Self.rawConnect(rig, port: Self.tlsPort(rig))
    client.send("VERSION\nSTATUS\n")
    client.readUntil { _ in false }  // until the server closes (or 5 s)
    #expect(!client.text.contains("scangate"))
    #expect(!client.text.contains("OK"))
    #expect(console.tlsHandshakeFailures == 1)
    #expect(console.tlsHandshakes == 0)
    #expect(console.connectedClients == 0)
    // The server closed: a read now says end of stream.
    var byte: UInt8 = 0
    #expect(Self.step(rig, untilMilliseconds: 1_000) { recv(client.fd, &byte, 1, 0) == 0 })
  }

  @Test("a client that connects and sends nothing loses its slot at the handshake timeout; the loop never waits for it")
  func handshakeTimeout() {
    let rig = Self.rig(plain: true) { $0.tlsHandshakeTimeoutMilliseconds = 400 }
    let console = rig.loop.console!
    let start = SystemMonotonicClock().now()
    let silent = Self.rawConnect(rig, port: Self.tlsPort(rig))
    #expect(Self.step(rig, untilMilliseconds: 1_000) { console.handshakingClients == 1 })
    // Meanwhile the loop serves everyone else: a plaintext loopback client gets its reply at once.
    let other = rig.connect()
    #expect(other.command("VERSION").last?.hasPrefix("OK scangate") == true)
    #expect(console.handshakingClients == 1)
    // One step with a stalled handshake takes no longer than the step's own wait.
    let before = SystemMonotonicClock().now()
    rig.step(10)
    #expect(SystemMonotonicClock().now().milliseconds(since: before) < 300)
    #expect(Self.step(rig, untilMilliseconds: 3_000) { console.tlsHandshakeTimeouts == 1 })
    #expect(SystemMonotonicClock().now().milliseconds(since: start) >= 400)
    #expect(console.handshakingClients == 0)
    #expect(console.connectedClients == 1)  // the plaintext client
    var byte: UInt8 = 0
    #expect(Self.step(rig, untilMilliseconds: 1_000) { recv(silent.fd, &byte, 1, 0) == 0 })
  }

  @Test("with a client CA: no certificate is refused, one from another CA is refused, one from the CA works")
  func clientCertificates() {
    let rig = Self.rig(clientCA: true)
    let console = rig.loop.console!
    let port = Self.tlsPort(rig)
    let (_, none) = Self.runAgainst(rig, Self.session(Self.sClient(port)))
    #expect(!none.contains("OK scangate"), "\(none)")
    #expect(console.lastTLSFailure.contains("peer did not return a certificate"), "\(console.lastTLSFailure)")
    let (_, stranger) = Self.runAgainst(rig, Self.session(Self.sClient(port, "-cert \(Self.pki.strangerCert) -key \(Self.pki.strangerKey)")))
    #expect(!stranger.contains("OK scangate"), "\(stranger)")
    #expect(console.lastTLSFailure.contains("certificate verify failed"), "\(console.lastTLSFailure)")
    #expect(console.tlsHandshakeFailures == 2)
    #expect(console.tlsHandshakes == 0)
    let (status, good) = Self.runAgainst(rig, Self.session(Self.sClient(port, "-cert \(Self.pki.clientCert) -key \(Self.pki.clientKey)")))
    #expect(status == 0, "\(good)")
    Self.expectWholeSession(good, rig)
    #expect(console.tlsHandshakes == 1)
  }

  @Test("AS over TLS: a client whose certificate the client CA signed names its person (openssl s_client)")
  func asOverCertifiedTLS() {
    let lines = "AUTH \(Self.secret)\nAS ada operator\nOPEN 300\nQUIT\n"
    let certified = Self.rig(clientCA: true)
    let client = "-cert \(Self.pki.clientCert) -key \(Self.pki.clientKey)"
    let (_, named) = Self.runAgainst(certified, ["/bin/sh", "-c", "printf '\(lines)' | \(Self.sClient(Self.tlsPort(certified), client))"])
    #expect(named.contains("OK as web:ada operator") && named.contains("OK #"), "\(named)")
    let commands = certified.loop.engine.events.lines { e in
      e.kind == .command ? EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown) : nil
    }
    // On loopback the kernel names the client's user: records say uid, as for the Unix socket
    // (a remote address is ConsoleAsTests').
    #expect(commands.contains { $0.contains("OPEN 300 by web:ada (uid \(getuid()))") }, "\(commands)")
  }

  @Test("the web page's TLS client: the reader checked against its CA and its address, the client certificate presented")
  func pageClient() throws {
    let rig = Self.rig(clientCA: true)
    let address = "127.0.0.1:\(Self.tlsPort(rig))"
    func attempt(ca: String, address: String) throws -> String {
      let context = try ConsoleTLSClientContext(caFile: ca, certFile: Self.pki.clientCert, keyFile: Self.pki.clientKey)
      let result = Mutex<String?>(nil)
      let thread = startThread {
        do {
          let client = try ConsoleClient(tls: address, context: context)
          let reply = client.exchange("VERSION", timeoutSeconds: 5)
          result.withLock { $0 = reply?.status ?? "no reply" }
        } catch { result.withLock { $0 = "\(error)" } }
      }
      _ = Self.step(rig, untilMilliseconds: 10_000) { result.withLock { $0 != nil } }
      pthread_join(thread, nil)
      return result.withLock { $0 ?? "" }
    }
    #expect(try attempt(ca: Self.pki.serverCA, address: address).hasPrefix("OK scangate"))
    #expect(try attempt(ca: Self.pki.strangerCert, address: address).contains("certificate verify failed"))
    // The certificate names 127.0.0.1 and localhost: the same server by another name ("127.1",
    // which resolves to it but is not an address in the certificate's form) is not the reader.
    let named = try attempt(ca: Self.pki.serverCA, address: "127.1:\(Self.tlsPort(rig))")
    #expect(named.contains("certificate verify failed"), "\(named)")
  }

  @Test("AUTH failures over TLS are keyed on the TCP peer (on loopback: the user owning the client socket)")
  func lockoutKey() {
    let rig = Self.rig { $0.auth.firstBackoffMilliseconds = 60_000 }
    let port = Self.tlsPort(rig)
    let wrong = ["/bin/sh", "-c", "printf 'AUTH wrong-secret-0\\nQUIT\\n' | \(Self.sClient(port))"]
    let (_, output) = Self.runAgainst(rig, wrong)
    #expect(output.contains("ERR 403"), "\(output)")
    // The next AUTH from loopback, over a new TLS connection, is in the loopback network's backoff.
    let (_, again) = Self.runAgainst(rig, Self.session(Self.sClient(port)))
    #expect(again.contains("ERR 429"), "\(again)")
    if case .allowed = rig.loop.console!.commands.gate.admit(.localUser(getuid()), at: rig.clock.now()) {
      Issue.record("loopback is not backing off after a failed AUTH over TLS")
    }
  }

  @Test("QUIT closes the connection once OK bye is sent, on plain text too")
  func quitCloses() {
    let rig = Self.rig(plain: true)
    let client = rig.connect()
    #expect(client.command("QUIT").last == "OK bye")
    var byte: UInt8 = 0
    #expect(Self.step(rig, untilMilliseconds: 2_000) { recv(client.fd, &byte, 1, 0) == 0 })
    #expect(rig.loop.console!.connectedClients == 0)
  }

  // MARK: - The service binary

  @Test("scangate run: a TLS listener from config.toml; a plaintext 0.0.0.0 listener disables the console, the door runs; check-config says so")
  func serviceBinary() {
    let dir = temporaryDirectory("tls-svc")
    defer { removeTree(dir) }
    _ = writePNG(path: dir + "/frame.png", pixels: qrFrame("ALICE-0001").pixels, width: 640, height: 480, components: 1)
    writeFile(dir + "/allow-list.txt", "text:ALICE-0001 label=alice\n")
    writeFile(dir + "/secret", Self.secret + "\n")
    chmod(dir + "/secret", 0o600)
    func config(_ console: String) -> String {
      writeFile(
        dir + "/config.toml",
        """
        [camera]
        source = "replay"
        replay_path = "\(dir)"
        replay_fps = 20
        [allow_list]
        path = "\(dir)/allow-list.txt"
        [gpio]
        backend = "sim"
        [log]
        path = ""
        [decoder]
        isolation = "inline"
        [console]
        secret_file = "\(dir)/secret"
        \(console)
        """)
      return dir + "/config.toml"
    }
    let tls = config(
      """
      listen = ["tls:127.0.0.1:0"]
      tls_cert_file = "\(Self.pki.serverCert)"
      tls_key_file = "\(Self.pki.serverKey)"
      tls_client_ca_file = "\(Self.pki.clientCA)"
      """)
    let (checked, report) = runCommand([scangateBinary, "check-config", "--config", tls])
    #expect(report.contains("console: tls:127.0.0.1:0 (TLS, client certificates required)"), "\(report)")
    let child = Child.start([scangateBinary, "run", "--config", tls])
    #expect(child.waitForOutput("console listening on tls:127.0.0.1:"))
    let line = child.output.split(separator: "\n").first { $0.hasPrefix("console listening on tls:") } ?? ""
    let port = UInt16(line.split(separator: ":").last ?? "") ?? 0
    let (status, output) = runCommand(Self.session(Self.sClient(port, "-cert \(Self.pki.clientCert) -key \(Self.pki.clientKey)")), timeoutSeconds: 30)
    #expect(status == 0, "\(output)")
    #expect(output.contains("OK operator") && output.contains("OK bye"), "\(output)")
    kill(child.pid, SIGTERM)
    #expect(child.wait() == 0)
    #expect(checked == 0, "\(report)")

    let plain = config("listen = [\"0.0.0.0:0\"]")
    let (refusedStatus, refused) = runCommand([scangateBinary, "check-config", "--config", plain])
    #expect(refusedStatus == 1)
    #expect(refused.contains("console: refused, the service would run without it: console.listen \"0.0.0.0:0\" is not loopback"), "\(refused)")
    let (ran, runOutput) = runCommand([scangateBinary, "run", "--config", plain, "--frames", "10"])
    #expect(ran == 0, "\(runOutput)")
    #expect(runOutput.contains("scangate: console disabled: console.listen \"0.0.0.0:0\" is not loopback"), "\(runOutput)")
    #expect(!runOutput.contains("console listening"))
    #expect(runOutput.contains("decision granted qr label=alice"), "\(runOutput)")  // the door worked without its console
    let allowed = config("listen = [\"0.0.0.0:0\"]\nallow_plaintext_remote = true")
    let (allowedStatus, allowedReport) = runCommand([scangateBinary, "check-config", "--config", allowed])
    #expect(allowedReport.contains("console: 0.0.0.0:0 (PLAIN TEXT on the network"), "\(allowedReport)")
    #expect(allowedStatus == 0, "\(allowedReport)")
  }
}
