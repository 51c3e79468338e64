import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The console's BACKUP on the built binary: an operator gets the archive sealed to the key it
/// sent (made here from a passphrase the reader never sees), which opens with that passphrase and
/// holds the configuration and lists but no secret; it is recorded with who; without AUTH, or
/// with a key that is not hex, it is refused.
@Suite struct ConsoleBackupTests {
  func console(_ child: Child, _ dir: String, _ line: String, secret: Bool = true) -> (Int32, String) {
    let port =
      child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?.split(separator: ":").last.map(String.init)
      ?? "0"
    let auth = secret ? ["--secret-file", dir + "/secret"] : []
    return runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port] + auth + ["--command", line])
  }

  @Test("BACKUP: sealed to the caller's key, opened with its passphrase: config and lists, never a secret; recorded; refused without AUTH")
  func backup() throws {
    let (dir, config) = hankReader("console-backup", state: true)
    defer { removeTree(dir) }
    var child = Child.start([scangateBinary, "run", "--config", config])
    defer {
      _ = kill(child.pid, SIGTERM)
      _ = child.wait()
    }
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    let pass = Array("the web page's passphrase".utf8)
    let derivation = BackupArchive.Derivation.fresh(ops: 1, mem: 8 << 20)
    let pair = try BackupArchive.keyPair(passphrase: pass, derivation)
    let line = "BACKUP \(BackupArchive.hex(pair.public)) \(BackupArchive.hex(derivation.salt)) 1 8192"
    var (status, out) = console(child, dir, line, secret: false)
    #expect(status != 0 && out.contains("ERR 401"), "\(out)")
    (status, out) = console(child, dir, "BACKUP \(String(repeating: "zz", count: 32)) \(BackupArchive.hex(derivation.salt)) 1 8192")
    #expect(out.contains("ERR 400"), "\(out)")
    (status, out) = console(child, dir, line)
    #expect(status == 0 && out.contains(" backup ") && out.contains(" files "), "\(out)")
    let body = out.split(separator: "\n").filter { $0.hasPrefix("| ") }.map { $0.dropFirst(2) }.joined()
    let sealed = try #require(ConsoleClient.decodeBase64(body), "\(out.prefix(300))")
    #expect(!String(decoding: sealed, as: UTF8.self).contains("HANK-0001"))
    let archive = try BackupArchive.open(sealed, passphrase: pass)
    #expect(archive.files.contains { $0.kind == .config && $0.path == config })
    #expect(archive.files.contains { $0.role == "allow_list.path" && $0.bytes == Array("text:HANK-0001 label=hank\n".utf8) })
    #expect(!archive.files.contains { $0.kind == .secret }, "\(archive.files.map(\.role))")
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(sealed, passphrase: Array("another passphrase here".utf8)) }
    #expect(
      child.waitForOutput("command BACKUP by ", timeoutSeconds: 10) && child.output.contains("files, \(sealed.count) bytes, no secrets"), "\(child.output)")
    #expect(console(child, dir, "STATUS", secret: false).1.contains("OK status"))
  }
}
