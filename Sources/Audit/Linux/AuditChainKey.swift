import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// The audit log's chain key: 32 random bytes, kept in a secret file (`SecretFile` rules: owned
/// by root or the service user, mode 0600) as 64 hex digits and a newline. Every record's chain
/// value is HMAC-SHA-256 under it, so whoever can write the database but has not got the key
/// cannot re-chain it. The key is held in memory that is zeroed when the key is released, and
/// is never written to the database, a log or an error message: only its `identifier` is.
public final class AuditChainKey: RecordAuthenticator, CustomStringConvertible, @unchecked Sendable {
  public static let byteCount = 32
  private let storage: UnsafeMutableRawBufferPointer
  /// A public fingerprint: hex of the first 8 bytes of HMAC-SHA-256(key, "scangate audit key id").
  /// It tells which key a log was written with and reveals nothing about the key.
  public private(set) var identifier = ""

  /// A key from exactly 32 bytes.
  public init(bytes: UnsafeRawBufferPointer) {
    precondition(bytes.count == Self.byteCount, "an audit chain key is 32 bytes")
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    storage = .allocate(byteCount: Self.byteCount, alignment: 16)
    storage.copyMemory(from: bytes)
    let id = Array("scangate audit key id".utf8).withUnsafeBytes { authenticate($0) }
    identifier = EventText.digestPrefix(id)
  }

  deinit {
    sg_memzero(storage.baseAddress, storage.count)
    storage.deallocate()
  }

  public var description: String { "audit chain key \(identifier)" }

  public func authenticate(_ bytes: UnsafeRawBufferPointer) -> Digest {
    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { out in
      let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1)!
      sg_hmac_sha256(
        storage.baseAddress!.assumingMemoryBound(to: UInt8.self), storage.count, data, bytes.count,
        out.baseAddress!.assumingMemoryBound(to: UInt8.self))
      return Digest(bytes: UnsafeRawBufferPointer(out))
    }
  }

  /// The key file next to the database when `log.chain_key_file` is empty: `<log path>.key`.
  public static func defaultPath(forLog logPath: String) -> String { logPath + ".key" }

  /// Reads the key from a secret file: 64 hex digits (trailing newline allowed). Refuses a file
  /// others could read or that is not owned by root, the current user or `owner`.
  public static func load(_ path: String, owner: uid_t? = nil) throws(FileError) -> AuditChainKey {
    var text = try SecretFile.read(path, owner: owner)
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    guard text.count == byteCount * 2 else {
      throw FileError(path: path, reason: "must hold the key as 64 hex digits (it holds \(text.count) bytes)")
    }
    var raw = [UInt8](repeating: 0, count: byteCount)
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    for i in 0..<byteCount {
      guard let high = Hex.value(of: text[2 * i]), let low = Hex.value(of: text[2 * i + 1]) else {
        throw FileError(path: path, reason: "must hold the key as 64 hex digits (found a character that is not one)")
      }
      raw[i] = high << 4 | low
    }
    return raw.withUnsafeBytes { AuditChainKey(bytes: $0) }
  }

  /// Makes a new key from libsodium's CSPRNG and writes it to `path` (0600, owned by the current
  /// user). Fails if the file exists: a key is never replaced.
  public static func generate(_ path: String) throws(FileError) -> AuditChainKey {
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    var raw = [UInt8](repeating: 0, count: byteCount)
    var text = [UInt8](repeating: 0, count: byteCount * 2 + 1)
    defer {
      raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) }
      text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) }
    }
    raw.withUnsafeMutableBufferPointer { sg_random_bytes($0.baseAddress, $0.count) }
    let digits = Array("0123456789abcdef".utf8)
    for i in 0..<byteCount {
      text[2 * i] = digits[Int(raw[i] >> 4)]
      text[2 * i + 1] = digits[Int(raw[i] & 0xF)]
    }
    text[byteCount * 2] = 0x0A
    try SecretFile.create(path, text)
    return raw.withUnsafeBytes { AuditChainKey(bytes: $0) }
  }

  /// Writes this key to a new secret file at `path` (the form `generate` writes; fails if the
  /// file exists). The log's writer puts a deleted key file back with it, from memory.
  public func write(to path: String) throws(FileError) {
    var text = [UInt8](repeating: 0, count: Self.byteCount * 2 + 1)
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    let digits = Array("0123456789abcdef".utf8)
    for i in 0..<Self.byteCount {
      text[2 * i] = digits[Int(storage[i] >> 4)]
      text[2 * i + 1] = digits[Int(storage[i] & 0xF)]
    }
    text[Self.byteCount * 2] = 0x0A
    try SecretFile.create(path, text)
  }
}

/// Where the keyed chain ends: the newest record's sequence and chain value. Published (STATUS,
/// the journal, later the fleet link) as `SEQ:HEX` with the first 8 bytes of the value, so a
/// reader can later prove the log was not cut or re-chained behind it (`scangate log verify
/// --head SEQ:HEX`).
public struct AuditChainHead: Equatable, Sendable {
  public var sequence: Int64
  public var value: Digest
  public static let publishedBytes = 8
  public init(sequence: Int64, value: Digest) {
    self.sequence = sequence
    self.value = value
  }
  public static let empty = AuditChainHead(sequence: 0, value: .zero)

  /// Writes `SEQ:HEX16` without allocating.
  public func write(into w: inout ByteWriter) {
    w.write(sequence)
    w.write(":")
    w.writeHex(value, bytes: Self.publishedBytes)
  }

  /// `SEQ:HEX16`.
  public var text: String { "\(sequence):\(EventText.digestPrefix(value))" }
}

/// A chain head as a reader passes it back to `scangate log verify --head`: a sequence and a
/// prefix (8 to 32 bytes) of that record's chain value.
public struct PublishedChainHead: Equatable, Sendable {
  public var sequence: Int64
  public var prefix: [UInt8]

  /// Parses `SEQ:HEX` (16 to 64 hex digits, an even number).
  public init?(_ text: some StringProtocol) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let sequence = Int64(parts[0]), sequence >= 0 else { return nil }
    let hex = Array(parts[1].utf8)
    guard hex.count >= 16, hex.count <= 64, hex.count % 2 == 0 else { return nil }
    var prefix: [UInt8] = []
    for i in stride(from: 0, to: hex.count, by: 2) {
      guard let high = Hex.value(of: hex[i]), let low = Hex.value(of: hex[i + 1]) else { return nil }
      prefix.append(high << 4 | low)
    }
    self.sequence = sequence
    self.prefix = prefix
  }
}
