import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// The accounts of the web admin page (`admin.users_file`, default /etc/scangate/admin-users):
/// `scangate admin user add|passwd|remove|list` writes them, `scangate admin` reads them. Mode
/// 0600, a line per account: `name role hash`, the hash an Argon2id string from libsodium's
/// `crypto_pwhash_str` (64 MiB, 2 passes: a Pi 3 computes one in under a second). Read whole
/// and refused whole when any line is wrong.
public enum AdminAccounts {
  public enum Role: String, CaseIterable, Comparable, Sendable {
    case viewer, `operator`, admin
    public static func < (a: Role, b: Role) -> Bool { allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)! }
  }

  public struct Account: Equatable, Sendable {
    public var name: String
    public var role: Role
    public var hash: String
    public init(name: String, role: Role, hash: String) {
      self.name = name
      self.role = role
      self.hash = hash
    }
  }

  public static let accountsMax = 256
  public static let passwordBytes = 12...128

  /// `name`: 1 to 32 of a-z, 0-9, '.', '_', '-', starting with a letter.
  public static func nameProblem(_ name: String) -> String? {
    let bytes = Array(name.utf8)
    guard (1...32).contains(bytes.count), let first = bytes.first, (0x61...0x7A).contains(first) else {
      return "a name is 1 to 32 characters, starting with a-z"
    }
    let ok = bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    return ok ? nil : "a name holds only a-z, 0-9, '.', '_' and '-'"
  }

  /// The file's accounts; refused whole (with the line) when any line is wrong.
  public static func parse(_ text: String) throws(ParseError) -> [Account] {
    var accounts: [Account] = []
    for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line = raw.trimmingPrefix { $0 == " " }
      if line.isEmpty || line.hasPrefix("#") { continue }
      let fields = line.split(separator: " ")
      guard fields.count == 3, nameProblem(String(fields[0])) == nil, let role = Role(rawValue: String(fields[1])),
        fields[2].hasPrefix("$argon2id$"), fields[2].utf8.count < 128
      else { throw ParseError(message: "line \(i + 1): want 'name role $argon2id$...' (the file is refused whole)") }
      guard !accounts.contains(where: { $0.name == fields[0] }) else { throw ParseError(message: "line \(i + 1): \(fields[0]) twice") }
      accounts.append(Account(name: String(fields[0]), role: role, hash: String(fields[2])))
    }
    guard accounts.count <= accountsMax else { throw ParseError(message: "more than \(accountsMax) accounts") }
    return accounts
  }

  public static func text(_ accounts: [Account]) -> String {
    "# ScanGate web admin accounts (scangate admin user add|passwd|remove): name role Argon2id\n"
      + accounts.map { "\($0.name) \($0.role.rawValue) \($0.hash)\n" }.joined()
  }

  /// The page's own user (scangate-admin.service runs as it): it owns the accounts file, so that
  /// the page can read it and nobody else can.
  public static let serviceUser = "scangate-admin"
  public static var serviceIDs: (uid: uid_t, gid: gid_t)? { getpwnam(serviceUser).map { ($0.pointee.pw_uid, $0.pointee.pw_gid) } }

  /// The file's accounts (a secret file: root's, or the page's user's, alone).
  public static func load(_ path: String) throws(ParseError) -> [Account] {
    let bytes: [UInt8]
    do { bytes = try SecretFile.read(path, maxBytes: 64 * 1024, owner: serviceIDs?.uid) } catch { throw ParseError(message: "\(error)") }
    return try parse(String(decoding: bytes, as: UTF8.self))
  }

  /// Whether `password` is the one `hash` was made from (libsodium, constant time).
  public static func verify(_ password: [UInt8], hash: String) -> Bool {
    password.withUnsafeBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { sg_pwhash_verify(hash, $0.baseAddress, $0.count) == 0 }
    }
  }

  /// The Argon2id string for `password` (libsodium's crypto_pwhash_str: 64 MiB, 2 passes).
  public static func hash(_ password: [UInt8]) throws(ParseError) -> String {
    var out = [CChar](repeating: 0, count: 128)
    let rc = password.withUnsafeBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { sg_pwhash_str(&out, $0.baseAddress, $0.count) }
    }
    guard rc == 0 else { throw ParseError(message: "the password could not be hashed (out of memory: Argon2id takes 64 MiB)") }
    return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
