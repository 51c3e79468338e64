/// One file in a backup: where it lives on the reader, what it is, and its bytes.
public struct BackupFile: Equatable, Sendable {
  /// What restoring it means (docs/backup.md, "What a restore writes").
  public enum Kind: String, Sendable, CaseIterable {
    /// The configuration file itself.
    case config
    /// A list or public file the configuration names: allow-list, schedules, trust, revocation,
    /// certificates. Restored as they were.
    case list
    /// A key or password file: restored 0600.
    case secret
    /// State that protects decisions (used passes, rotating steps, the clock floor, a lockdown's
    /// latch...): restored only where the reader has none, never over newer state.
    case state
  }

  /// The configuration key that names it (`allow_list.path`), or a state file's name.
  public var role: String
  public var path: String
  public var kind: Kind
  public var mode: UInt32
  /// `user:group` by name, or "-" when the names were not known.
  public var owner: String
  public var bytes: [UInt8]

  public init(role: String, path: String, kind: Kind, mode: UInt32, owner: String, bytes: [UInt8]) {
    self.role = role
    self.path = path
    self.kind = kind
    self.mode = mode
    self.owner = owner
    self.bytes = bytes
  }
}

/// A backup archive's format (docs/backup.md; sealing and opening: BackupArchive+Sealing in
/// Sources/Platform): a short plain header (what it is, the reader, when, and the
/// key derivation's salt and limits), then everything else sealed with libsodium's crypto_box_seal
/// to an X25519 key pair made from the passphrase by Argon2id. Opening needs the passphrase; a
/// changed byte anywhere, the header included (it is repeated inside the sealed part), refuses
/// the whole archive. Sealing needs only the public key, so a reader can seal an archive for a
/// passphrase it never sees.
public struct BackupArchive: Equatable, Sendable {
  public var reader: String
  public var created: Int64
  public var files: [BackupFile]

  public init(reader: String, created: Int64, files: [BackupFile]) {
    self.reader = reader
    self.created = created
    self.files = files
  }

  /// Why an archive was refused, whole.
  public struct Refusal: Error, Equatable, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
  }

  /// The key derivation recorded in the header: Argon2id13 over `mem` bytes, `ops` passes.
  public struct Derivation: Equatable, Sendable {
    public var salt: [UInt8]
    public var ops: UInt64
    public var mem: Int
    public init(salt: [UInt8], ops: UInt64, mem: Int) {
      self.salt = salt
      self.ops = ops
      self.mem = mem
    }
    public static let opsMax: UInt64 = 10
    public static let memMax = 1 << 30
  }

  public static let magic = "scangate-backup 1"
  /// An archive is at most 64 MiB (a 100,000-entry allow-list is under 10 MiB).
  public static let bytesMax = 64 << 20
  /// A passphrase is at least 12 bytes: the archive can be attacked offline.
  public static let passphraseMin = 12

  /// The header's text, blank line included.
  public func header(_ d: Derivation) -> [UInt8] {
    let secrets = files.filter { $0.kind == .secret }.count
    return Array(
      """
      \(Self.magic)
      kdf argon2id13 salt=\(Self.hex(d.salt)) ops=\(d.ops) mem=\(d.mem)
      reader=\(Self.safeName(reader)) created=\(created) files=\(files.count) secrets=\(secrets)


      """.utf8)
  }

  /// The body that is sealed: the header again, then each file's line and bytes, then `end`.
  public func body(_ derivation: Derivation) throws(Refusal) -> [UInt8] {
    var body = header(derivation)
    for f in files {
      guard Self.isSafePath(f.path), Self.isSafeWord(f.role), Self.isSafeWord(f.owner) else {
        throw Refusal("\(f.role) \(f.path): a name that cannot be archived (a relative path, a space in a role or owner)")
      }
      body += Array("file \(f.role) \(f.kind.rawValue) \(String(f.mode & 0o7777, radix: 8)) \(f.owner) \(f.bytes.count) \(f.path)\n".utf8)
      body += f.bytes
      body.append(0x0A)
    }
    return body + Array("end\n".utf8)
  }

  /// What the plain header says: the derivation, the reader, when, how many files and secrets.
  public struct Header: Equatable, Sendable {
    public var derivation: Derivation
    public var reader: String
    public var created: Int64
    public var files: Int
    public var secrets: Int
    /// The header's bytes (the sealed part starts after them).
    public var length: Int
  }

  /// Reads the plain header only (no passphrase needed; nothing in it is trusted until `open`).
  public static func header(_ archive: [UInt8]) throws(Refusal) -> Header {
    guard archive.count <= bytesMax else { throw Refusal("over 64 MiB") }
    var r = BackupReader(archive)
    guard r.line() == magic else { throw Refusal("not a ScanGate backup (or a newer version of one)") }
    let kdf = BackupReader.fields(r.line())
    let about = BackupReader.fields(r.line())
    guard r.line() == "", kdf.first == "kdf", kdf.dropFirst().first == "argon2id13",
      let salt = unhex(kdf["salt"] ?? ""), salt.count == 16, let ops = kdf["ops"].flatMap({ UInt64($0) }),
      let mem = kdf["mem"].flatMap({ Int($0) }), let reader = about["reader"], let created = about["created"].flatMap({ Int64($0) }),
      let files = about["files"].flatMap({ Int($0) }), let secrets = about["secrets"].flatMap({ Int($0) })
    else { throw Refusal("its header is damaged") }
    return Header(
      derivation: Derivation(salt: salt, ops: ops, mem: mem), reader: reader, created: created, files: files, secrets: secrets,
      length: r.offset)
  }

  /// The files of an opened body, checked against the header it must start with; refused whole.
  public static func parseBody(_ body: [UInt8], header: [UInt8], _ head: Header) throws(Refusal) -> BackupArchive {
    guard body.starts(with: header) else { throw Refusal("its header does not match its sealed copy") }
    var r = BackupReader(body)
    r.offset = header.count
    var files: [BackupFile] = []
    while true {
      guard let line = r.line() else { throw Refusal("it ends without its end line") }
      if line == "end" { break }
      let words = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: false).map(String.init)
      guard words.count == 7, words[0] == "file", let kind = BackupFile.Kind(rawValue: words[2]), isSafeWord(words[1]),
        let mode = UInt32(words[3], radix: 8), mode <= 0o7777, isSafeWord(words[4]), let size = Int(words[5]), size >= 0,
        isSafePath(words[6]), let bytes = r.take(size), r.take(1) == [0x0A]
      else { throw Refusal("file \(files.count + 1) is damaged") }
      guard !files.contains(where: { $0.path == words[6] }) else { throw Refusal("\(words[6]) is in it twice") }
      files.append(BackupFile(role: words[1], path: words[6], kind: kind, mode: mode, owner: words[4], bytes: bytes))
    }
    guard r.offset == body.count else { throw Refusal("bytes after its end line") }
    guard files.count == head.files, files.filter({ $0.kind == .secret }).count == head.secrets else {
      throw Refusal("its header's counts do not match its files")
    }
    return BackupArchive(reader: head.reader, created: head.created, files: files)
  }

  // MARK: Names and hex

  /// An absolute path without `.` or `..` components, NUL or line breaks.
  public static func isSafePath(_ path: String) -> Bool {
    path.hasPrefix("/") && path.utf8.count < 4_096 && !path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
      && !path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })
  }

  /// A word without spaces or control bytes (a role, an owner).
  public static func isSafeWord(_ word: String) -> Bool {
    !word.isEmpty && word.utf8.count <= 128 && word.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
  }

  static func safeName(_ name: String) -> String {
    let kept = String(
      name.unicodeScalars.prefix(64).map { $0.isASCII && ($0.properties.isAlphabetic || "0123456789.-_".unicodeScalars.contains($0)) ? Character($0) : "_" })
    return kept.isEmpty ? "reader" : kept
  }

  public static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
  }

  public static func unhex(_ text: String) -> [UInt8]? {
    let u = Array(text.utf8)
    guard u.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
      switch c {
      case 0x30...0x39: c - 0x30
      case 0x61...0x66: c - 0x61 + 10
      default: nil
      }
    }
    var out: [UInt8] = []
    for i in stride(from: 0, to: u.count, by: 2) {
      guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
      out.append(hi << 4 | lo)
    }
    return out
  }
}

/// Lines and counted bytes out of a buffer, bounded: a line is at most 4 KiB.
struct BackupReader {
  let bytes: [UInt8]
  var offset = 0
  init(_ bytes: [UInt8]) { self.bytes = bytes }

  mutating func line() -> String? {
    guard let end = bytes[offset...].prefix(4_097).firstIndex(of: 0x0A) else { return nil }
    let text = String(decoding: bytes[offset..<end], as: UTF8.self)
    offset = end + 1
    return text
  }

  mutating func take(_ count: Int) -> [UInt8]? {
    guard count <= bytes.count - offset else { return nil }
    defer { offset += count }
    return Array(bytes[offset..<offset + count])
  }

  /// `word key=value key=value`: the first word under "", then each key's value.
  static func fields(_ line: String?) -> Fields {
    Fields(words: (line ?? "").split(separator: " ").map(String.init))
  }

  struct Fields {
    let words: [String]
    var first: String? { words.first }
    func dropFirst() -> ArraySlice<String> { words.dropFirst() }
    subscript(key: String) -> String? {
      words.first(where: { $0.hasPrefix(key + "=") }).map { String($0.dropFirst(key.count + 1)) }
    }
  }
}
