import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// The web admin page's accounts (`scangate admin user ...`), on the built binary: Argon2id
/// hashes that libsodium's verifier and PyNaCl (an outside implementation) accept for the
/// password given on standard input and refuse for another; the file 0600, refused whole when a
/// line is wrong; names, roles and passwords checked.
@Suite struct AdminUsersTests {
  static let peerPython = "/var/cache/scangate-peers/venv/bin/python"

  func admin(_ dir: String, _ arguments: String, password: String? = nil) -> (Int32, String) {
    let input = password.map { "printf '%s\\n' '\($0)' | " } ?? ""
    return runCommand(["/bin/sh", "-c", "\(input)'\(scangateBinary)' admin user \(arguments) --users '\(dir)/admin-users'"])
  }

  func hash(_ dir: String, _ name: String) -> String? {
    guard let text = try? readWholeFile(dir + "/admin-users", maxBytes: 65_536) else { return nil }
    return String(decoding: text, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }?.split(separator: " ").last.map(String.init)
  }

  func verifies(_ hash: String, _ password: String) -> Bool {
    sg_pwhash_verify(hash, password, password.utf8.count) == 0
  }

  @Test("add, passwd, remove, list: Argon2id for the password on standard input, 0600, each refusal changing nothing")
  func accounts() throws {
    let dir = temporaryDirectory("admin")
    defer { removeTree(dir) }
    var (status, out) = admin(dir, "add alice --role operator", password: "correct horse battery")
    #expect(status == 0, "\(out)")
    let first = try #require(hash(dir, "alice"))
    #expect(first.hasPrefix("$argon2id$v=19$m=65536,t=2,p=1$"))
    #expect(verifies(first, "correct horse battery") && !verifies(first, "correct horse batterz"))
    var st = stat()
    #expect(stat(dir + "/admin-users", &st) == 0 && st.st_mode & 0o777 == 0o600)
    // Refused, nothing changed: a short password, a second alice, a role that is none, a bad name.
    for (arguments, password, why) in [
      ("add bob --role admin", "short", "12 to 128 bytes"), ("add alice --role admin", "another long password", "alice exists"),
      ("add bob --role root", "another long password", "--role"), ("add Bob --role admin", "another long password", "starting with a-z"),
    ] {
      (status, out) = admin(dir, arguments, password: password)
      #expect(status == 2 && out.contains(why), "\(arguments): \(out)")
    }
    #expect(hash(dir, "alice") == first && hash(dir, "bob") == nil)
    (status, out) = admin(dir, "passwd alice", password: "a new long passphrase")
    #expect(status == 0 && hash(dir, "alice") != first && verifies(hash(dir, "alice")!, "a new long passphrase"), "\(out)")
    #expect(admin(dir, "add bob --role viewer", password: "bobs long password").0 == 0)
    (status, out) = admin(dir, "list")
    #expect(out.contains("alice operator") && out.contains("bob viewer") && !out.contains("argon2"), "\(out)")
    #expect(admin(dir, "remove alice").0 == 0 && hash(dir, "alice") == nil && hash(dir, "bob") != nil)
    // A damaged file is refused whole, never rewritten.
    writeFile(dir + "/admin-users", "bob viewer $argon2id$x\ncarol superuser $argon2id$y\n")
    chmod(dir + "/admin-users", 0o600)
    (status, out) = admin(dir, "remove bob")
    #expect(status == 2 && out.contains("line 2"), "\(out)")
    #expect(String(decoding: try readWholeFile(dir + "/admin-users", maxBytes: 4096), as: UTF8.self).contains("carol superuser"))
  }

  @Test("PyNaCl's argon2id.verify accepts the hash for its password, refuses another", .enabled(if: access(peerPython, X_OK) == 0))
  func outsideVerifier() throws {
    let dir = temporaryDirectory("admin")
    defer { removeTree(dir) }
    #expect(admin(dir, "add dana --role admin", password: "dana long password").0 == 0)
    let h = try #require(hash(dir, "dana"))
    let script =
      "import sys, nacl.pwhash.argon2id as a\ntry:\n  a.verify(sys.argv[1].encode(), sys.argv[2].encode()); print('ok')\nexcept Exception as e:\n  print('refused', type(e).__name__)\n"
    writeFile(dir + "/v.py", script)
    #expect(runCommand([Self.peerPython, dir + "/v.py", h, "dana long password"]).1.contains("ok"))
    #expect(runCommand([Self.peerPython, dir + "/v.py", h, "dana long passwore"]).1.contains("refused"))
  }
}
