import CLinux
import Glibc
import ScanBase

/// Sealing and opening a backup archive with libsodium (docs/backup.md, "The format"): the key
/// pair Argon2id makes of the passphrase, crypto_box_seal to its public key.
extension BackupArchive {
  /// The X25519 pair `passphrase` and `derivation` make. Slow on purpose (Argon2id).
  public static func keyPair(passphrase: [UInt8], _ derivation: Derivation) throws(Refusal) -> (public: [UInt8], secret: [UInt8]) {
    guard passphrase.count >= passphraseMin else { throw Refusal("the passphrase is shorter than \(passphraseMin) characters") }
    guard derivation.salt.count == 16, derivation.ops >= 1, derivation.ops <= Derivation.opsMax, derivation.mem <= Derivation.memMax
    else { throw Refusal("the key derivation's limits are out of range") }
    var pk = [UInt8](repeating: 0, count: 32), sk = [UInt8](repeating: 0, count: 32)
    let rc = passphrase.withUnsafeBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { c in
        sg_backup_keypair(&pk, &sk, c.baseAddress, c.count, derivation.salt, derivation.ops, derivation.mem)
      }
    }
    guard rc == 0 else { throw Refusal("the key could not be derived (out of memory?)") }
    return (pk, sk)
  }

  /// The archive, sealed to `publicKey` (which `derivation` and the passphrase make).
  public func sealed(to publicKey: [UInt8], _ derivation: Derivation) throws(Refusal) -> [UInt8] {
    let head = header(derivation)
    var body = try body(derivation)
    defer { SecretBytes.wipe(&body) }
    guard publicKey.count == 32, head.count + body.count + 48 <= Self.bytesMax else { throw Refusal("the archive would be over 64 MiB") }
    var sealed = [UInt8](repeating: 0, count: body.count + 48)
    guard sg_backup_seal(&sealed, body, body.count, publicKey) == 0 else { throw Refusal("sealing failed") }
    return head + sealed
  }

  /// The archive sealed under `passphrase` with a fresh salt.
  public func sealed(passphrase: [UInt8], _ derivation: Derivation = .fresh()) throws(Refusal) -> [UInt8] {
    var pair = try Self.keyPair(passphrase: passphrase, derivation)
    defer { SecretBytes.wipe(&pair.secret) }
    return try sealed(to: pair.public, derivation)
  }

  /// Opens `archive` with `passphrase`: every byte checked, every file's line parsed, or refused whole.
  public static func open(_ archive: [UInt8], passphrase: [UInt8]) throws(Refusal) -> BackupArchive {
    let head = try header(archive)
    var pair = try keyPair(passphrase: passphrase, head.derivation)
    defer { SecretBytes.wipe(&pair.secret) }
    let sealed = Array(archive[head.length...])
    guard sealed.count >= 48 else { throw Refusal("it is cut short") }
    var body = [UInt8](repeating: 0, count: sealed.count - 48)
    guard sg_backup_open(&body, sealed, sealed.count, pair.public, pair.secret) == 0 else {
      throw Refusal("the passphrase is wrong, or the archive was changed or cut short")
    }
    defer { SecretBytes.wipe(&body) }
    return try parseBody(body, header: Array(archive[..<head.length]), head)
  }
}

extension BackupArchive.Derivation {
  /// A new salt; 3 passes over 128 MiB (0.43 s on the 2-core x86-64 build machine; an archive
  /// asks for at most 10 passes and 1 GiB).
  public static func fresh(ops: UInt64 = 3, mem: Int = 128 << 20) -> Self {
    Self(salt: SecretBytes.random(16), ops: ops, mem: mem)
  }
}
