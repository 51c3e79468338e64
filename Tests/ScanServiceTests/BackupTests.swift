import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// Backups (docs/backup.md): the archive opened by PyNaCl (an outside implementation of Argon2id
/// and crypto_box_seal) as well as by the reader; any changed or missing byte, a wrong
/// passphrase, and a sealed body naming a file its configuration does not, refused whole; on the
/// built binary, a restore checked whole before anything is replaced, and state never rolled back.
@Suite struct BackupTests {
  static let pass = Array("a long backup passphrase".utf8)
  /// Fast limits for the tests (the real ones: 3 passes over 128 MiB).
  static func derivation() -> BackupArchive.Derivation { .fresh(ops: 1, mem: 8 << 20) }

  static func sample() -> BackupArchive {
    BackupArchive(
      reader: "door 1", created: 1_700_000_000,
      files: [
        BackupFile(role: "config", path: "/etc/scangate/config.toml", kind: .config, mode: 0o640, owner: "root:scangate", bytes: Array("[gpio]\n".utf8)),
        BackupFile(role: "console.secret_file", path: "/etc/scangate/secret", kind: .secret, mode: 0o600, owner: "-", bytes: Array("s3cret\n".utf8)),
        BackupFile(role: "allow_list.path", path: "/var/lib/scangate/allow-list.txt", kind: .list, mode: 0o640, owner: "-", bytes: []),
      ])
  }

  @Test("sealed and opened again the same; the header names the reader, when, and how many files and secrets, nothing else")
  func roundTrip() throws {
    let archive = Self.sample()
    let sealed = try archive.sealed(passphrase: Self.pass, Self.derivation())
    #expect(try BackupArchive.open(sealed, passphrase: Self.pass) == BackupArchive(reader: "door_1", created: 1_700_000_000, files: archive.files))
    let head = try BackupArchive.header(sealed)
    #expect(head.reader == "door_1" && head.files == 3 && head.secrets == 1 && head.derivation.ops == 1)
    let text = String(decoding: sealed, as: UTF8.self)
    #expect(!text.contains("s3cret") && !text.contains("/etc/scangate"))
  }

  @Test(
    "PyNaCl opens the archive with the passphrase (Argon2id13 seed, crypto_box_seed_keypair, SealedBox)",
    .enabled(if: access(AdminUsersTests.peerPython, X_OK) == 0))
  func outsideImplementation() throws {
    let dir = temporaryDirectory("backup-nacl")
    defer { removeTree(dir) }
    let sealed = try Self.sample().sealed(passphrase: Self.pass, Self.derivation())
    writeFile(dir + "/a.sgbackup", bytes: sealed)
    let script = """
      import sys, nacl.pwhash, nacl.public
      data = open(sys.argv[1], 'rb').read()
      end = data.index(b'\\n\\n') + 2
      kdf = dict(w.split('=') for w in data[:end].split(b'\\n')[1].decode().split()[2:])
      seed = nacl.pwhash.argon2id.kdf(32, sys.argv[2].encode(), bytes.fromhex(kdf['salt']), opslimit=int(kdf['ops']), memlimit=int(kdf['mem']))
      body = nacl.public.SealedBox(nacl.public.PrivateKey.from_seed(seed)).decrypt(data[end:])
      assert body.startswith(data[:end])
      sys.stdout.write(body[end:].decode())
      """
    let (status, out) = runCommand([AdminUsersTests.peerPython, "-c", script, dir + "/a.sgbackup", "a long backup passphrase"])
    #expect(status == 0, "\(out)")
    #expect(out.contains("file console.secret_file secret 600 - 7 /etc/scangate/secret\ns3cret\n") && out.hasSuffix("end\n"), "\(out)")
  }

  @Test("a wrong passphrase, any byte changed (header or sealed part), a cut, or bytes added: refused whole")
  func tampering() throws {
    let sealed = try Self.sample().sealed(passphrase: Self.pass, Self.derivation())
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(sealed, passphrase: Array("another long passphrase".utf8)) }
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(sealed, passphrase: Array("short".utf8)) }
    let length = try BackupArchive.header(sealed).length
    // Every byte of the sealed part's start and end, and the header's reader and counts.
    let positions = Array(length..<(length + 64)) + Array((sealed.count - 32)..<sealed.count) + [length - 3, length - 8, 20]
    for i in positions {
      var changed = sealed
      changed[i] ^= 0x01
      #expect(throws: BackupArchive.Refusal.self, "byte \(i)") { try BackupArchive.open(changed, passphrase: Self.pass) }
    }
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(Array(sealed.dropLast()), passphrase: Self.pass) }
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(sealed + [0], passphrase: Self.pass) }
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(Array(sealed.prefix(length)), passphrase: Self.pass) }
  }

  /// A body sealed here, by hand, to the passphrase's key: what a hostile archive's maker can write.
  func handSealed(_ files: String, count: Int = 1) throws -> [UInt8] {
    let d = Self.derivation()
    let head = Array(
      "scangate-backup 1\nkdf argon2id13 salt=\(BackupArchive.hex(d.salt)) ops=1 mem=\(8 << 20)\nreader=x created=1 files=\(count) secrets=0\n\n".utf8)
    let body = head + Array(files.utf8)
    let pair = try BackupArchive.keyPair(passphrase: Self.pass, d)
    var out = [UInt8](repeating: 0, count: body.count + 48)
    #expect(sg_backup_seal(&out, body, body.count, pair.public) == 0)
    return head + out
  }

  @Test("a sealed body with a relative or dotted path, a file twice, a size past its end, a bad kind or no end line: refused")
  func hostileBodies() throws {
    #expect(try BackupArchive.open(handSealed("file config config 640 - 2 /c.toml\nab\nend\n"), passphrase: Self.pass).files.count == 1)
    for body in [
      "file config config 640 - 2 c.toml\nab\nend\n", "file config config 640 - 2 /etc/../shadow\nab\nend\n",
      "file config config 640 - 9 /c.toml\nab\nend\n", "file config folder 640 - 2 /c.toml\nab\nend\n",
      "file config config 640 - 2 /c.toml\nab\n", "file config config 640 - 2 /c.toml\nab\nend\nmore",
      "file config config 99999 - 2 /c.toml\nab\nend\n",
    ] {
      #expect(throws: BackupArchive.Refusal.self, "\(body)") { try BackupArchive.open(handSealed(body), passphrase: Self.pass) }
    }
    let twice = "file config config 640 - 2 /c.toml\nab\nfile config config 640 - 2 /c.toml\nab\nend\n"
    #expect(throws: BackupArchive.Refusal.self) { try BackupArchive.open(handSealed(twice, count: 2), passphrase: Self.pass) }
    // A well-formed archive whose file is not one its configuration names there: no plan.
    let stray = BackupArchive(
      reader: "x", created: 1,
      files: [
        BackupFile(role: "config", path: "/c.toml", kind: .config, mode: 0o640, owner: "-", bytes: Array("[gpio]\nbackend = \"sim\"\n".utf8)),
        BackupFile(role: "allow_list.path", path: "/etc/cron.d/x", kind: .list, mode: 0o644, owner: "-", bytes: Array("x".utf8)),
      ])
    #expect(throws: BackupArchive.Refusal.self) { try BackupFiles.plan(stray, configPath: "/tmp/none/config.toml") }
  }
}
