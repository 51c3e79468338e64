import CLinux
import Glibc
import ScanCore
import ScanLoop
import ScanPlatform

/// The reader's tag key: 32 random bytes that key the tag every outside-facing form shows for a
/// payload (console LAST and WATCH, the journal, the audit log, fleet events) instead of its
/// SHA-256. tag = HMAC-SHA-256(tag key, SHA-256(payload)); 8 bytes of it are shown
/// (`PayloadTag`). Without the key a tag tests nothing offline; with it (`scangate tag`, as root)
/// an administrator finds which tag a badge has.
///
/// Kept like the audit chain key: a secret file (`SecretFile` rules: owned by root or the service
/// user, mode 0600) holding 64 hex digits and a newline, `<log.path>.tag-key` in the state
/// directory, made from libsodium's CSPRNG at the first start and never replaced. Held in memory
/// that is zeroed when the key is released; never written to a log or an error message.
public final class TagKey: PayloadTagger, CustomStringConvertible, @unchecked Sendable {
  public static let byteCount = 32
  private let storage: UnsafeMutableRawBufferPointer
  /// Kept in a file (false: made for this run only, so tags change at every start).
  public let isPersistent: Bool

  /// A key from exactly 32 bytes.
  public init(bytes: UnsafeRawBufferPointer, persistent: Bool = true) {
    precondition(bytes.count == Self.byteCount, "a tag key is 32 bytes")
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    storage = .allocate(byteCount: Self.byteCount, alignment: 16)
    storage.copyMemory(from: bytes)
    isPersistent = persistent
  }

  deinit {
    sg_memzero(storage.baseAddress, storage.count)
    storage.deallocate()
  }

  public var description: String { isPersistent ? "tag key" : "tag key (this run only)" }

  /// HMAC-SHA-256 under the key over the 32 bytes of `digest`. No allocation (the loop's thread).
  public func tag(_ digest: Digest) -> Digest {
    withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { buffer in
      for i in 0..<32 { buffer[i] = digest.byte(i) }
      let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
      sg_hmac_sha256(storage.baseAddress!.assumingMemoryBound(to: UInt8.self), storage.count, base, 32, base + 32)
      let tag = Digest(bytes: UnsafeRawBufferPointer(rebasing: buffer[32..<64]))
      sg_memzero(buffer.baseAddress, 32)
      return tag
    }
  }

  /// A key for one purpose, derived from this one with libsodium's KDF (BLAKE2b keyed by this key,
  /// over the purpose's 8-byte context and subkey id): no data the reader is shown (a payload, a
  /// subject, a message) is ever an input to it, so no tag or identity can equal a derived key
  /// (docs/credentials.md, "The key tree").
  public func derived(_ purpose: KeyPurpose) -> TagKey {
    withUnsafeTemporaryAllocation(byteCount: Self.byteCount, alignment: 16) { out in
      let rc = purpose.context.withCString { context in
        sg_kdf_derive(
          out.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.byteCount, purpose.subkeyID, context,
          storage.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
      precondition(rc == 0, "libsodium's KDF refused its arguments")
      defer { sg_memzero(out.baseAddress, out.count) }
      return TagKey(bytes: UnsafeRawBufferPointer(out), persistent: false)
    }
  }

  /// A public name for this key (8 bytes of its own derived subkey, as 16 hex digits): readers
  /// compare it to tell "another site key" from a forged message, and a site rotating its key
  /// sees which readers still hold the old one. It reveals nothing of the key.
  public var keyID: String {
    let id = derived(.keyID)
    return id.storage.prefix(8).map { String(decoding: [Hex.digit($0 >> 4), Hex.digit($0)], as: UTF8.self) }.joined()
  }

  /// The tag of a payload (allocates nothing itself; the digester decides).
  public func tag(payload: UnsafeRawBufferPointer, digester: some PayloadDigester) -> Digest { tag(digester.sha256(payload)) }

  /// The key file of a reader whose audit log is at `logPath`: `<log path>.tag-key`.
  public static func defaultPath(forLog logPath: String) -> String { logPath + ".tag-key" }

  /// Reads the key from a secret file (64 hex digits, trailing newline allowed). `owner` is one
  /// more acceptable owner (root reading the service user's key).
  public static func load(_ path: String, owner: uid_t? = nil) throws(FileError) -> TagKey {
    var raw = try SecretKeyFile.read(path, byteCount: byteCount, owner: owner)
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    return raw.withUnsafeBytes { TagKey(bytes: $0) }
  }

  /// A site key (`turnstile.site_key_file`, the same file on every reader of a site): a secret
  /// file (`SecretFile` rules) holding exactly 32 random bytes, or 64 hex digits and a newline.
  public static func loadSiteKey(_ path: String) throws(FileError) -> TagKey {
    var raw = try SecretFile.read(path)
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    if raw.count == byteCount { return raw.withUnsafeBytes { TagKey(bytes: $0) } }
    return try load(path)
  }

  /// Makes a new key and writes it to `path` (0600); fails if the file exists.
  public static func generate(_ path: String) throws(FileError) -> TagKey {
    var raw = try SecretKeyFile.create(path, byteCount: byteCount)
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    return raw.withUnsafeBytes { TagKey(bytes: $0) }
  }

  /// A key for this run only (never written): tags stay keyed, but change at every start.
  public static func ephemeral() -> TagKey {
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    var raw = [UInt8](repeating: 0, count: byteCount)
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    raw.withUnsafeMutableBufferPointer { sg_random_bytes($0.baseAddress, $0.count) }
    return raw.withUnsafeBytes { TagKey(bytes: $0, persistent: false) }
  }

  /// The service's key: `<log path>.tag-key`, made at the first start. Without a log path, or
  /// when the file is refused or cannot be made, the reader runs with a key for this run only and
  /// says so on standard error (tags are then keyed but change at every start). `stableTags`:
  /// state kept by tag outlives a run (a turnstile's anti-passback records): then a key that
  /// cannot be the one that state was kept under is refused instead (nil, said why): a deleted
  /// key file that this reader had, or one it cannot read or make. A new key would let everyone
  /// the records hold back through again.
  public static func forService(logPath: String, stableTags: Bool = false) -> TagKey? {
    guard !logPath.isEmpty else {
      if stableTags { writeStandardError("scangate: refused: anti-passback keeps its records by tag, and without a log path the tag key cannot be kept\n") }
      return stableTags ? nil : ephemeral()
    }
    let path = defaultPath(forLog: logPath)
    do throws(FileError) {
      if fileExists(path) { return try load(path) }
      if StateFileList.names(path) {
        if stableTags {
          writeStandardError(
            "scangate: refused: tag key \(path) is missing (this reader had one), and anti-passback keeps its records by tag: "
              + "a new key would let everyone they hold back through again; restore it, or remove its line from "
              + "\(StateFileList.path(beside: path)) and the anti-passback file to start both empty\n")
          return nil
        }
        // Deleted: every badge's tag changes from now on. Said, never silent.
        writeStandardError("scangate: tag key \(path) is missing (this reader had one): a new key is made, and every badge's tag changes\n")
      }
      let key = try generate(path)
      try? StateFileList.add(path)
      return key
    } catch {
      if stableTags {
        writeStandardError("scangate: refused: tag key \(error); anti-passback keeps its records by tag and needs a key that lasts\n")
        return nil
      }
      writeStandardError("scangate: tag key \(error); tags are keyed for this run only\n")
      return ephemeral()
    }
  }

  /// Writes this key back to `path` when the file is gone (deleted while the reader runs, its
  /// folder too): the key it had, never a new one, so that a restart keeps every tag. True when
  /// it had to. A key for this run only is never written.
  @discardableResult
  public func restoreIfMissing(_ path: String) -> Bool {
    guard isPersistent, !fileExists(path) else { return false }
    let folder = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
    if !folder.isEmpty && !isDirectory(folder) { _ = try? syscall("mkdir \(folder)", { mkdir(folder, 0o750) }) }
    var raw = [UInt8](UnsafeRawBufferPointer(storage))
    defer { raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    do throws(FileError) { try SecretKeyFile.write(path, raw) } catch {
      writeStandardError("scangate: tag key \(path) was deleted while in use and cannot be written again: \(error.reason)\n")
      return false
    }
    try? StateFileList.add(path)
    writeStandardError("scangate: tag key \(path) was deleted while in use: written again from memory (every tag stays)\n")
    return true
  }
}

/// What a key derived from a parent key is for: its own KDF context (8 bytes, libsodium's
/// `crypto_kdf` rule) and subkey id. One purpose, one context: a new purpose is a new case.
public enum KeyPurpose: Sendable {
  /// The site key's identities of credentials (site-wide anti-passback): HMAC-SHA-256 under it.
  case passageIdentity
  /// The site key's MAC over site passages.
  case passageMAC
  /// The site key's identities of counted passes (visitors' uses counted site-wide).
  case useIdentity
  /// The site key's MAC over counted uses.
  case useMAC
  /// The site key's public key id (`keyID`).
  case keyID

  var context: String {
    switch self {
    case .passageIdentity: "SGpassid"
    case .passageMAC: "SGpassmc"
    case .useIdentity: "SGuseid_"
    case .useMAC: "SGusemac"
    case .keyID: "SGkeyid_"
    }
  }
  var subkeyID: UInt64 { 1 }
}

/// A secret file that holds one key as hex digits and a newline (`SecretFile` rules).
enum SecretKeyFile {
  /// The key's bytes; the caller zeroes them once it has what it needs.
  static func read(_ path: String, byteCount: Int, owner: uid_t?) throws(FileError) -> [UInt8] {
    var text = try SecretFile.read(path, owner: owner)
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    guard text.count == byteCount * 2 else {
      throw FileError(path: path, reason: "must hold the key as \(byteCount * 2) hex digits (it holds \(text.count) bytes)")
    }
    var raw = [UInt8](repeating: 0, count: byteCount)
    for i in 0..<byteCount {
      guard let high = Hex.value(of: text[2 * i]), let low = Hex.value(of: text[2 * i + 1]) else {
        raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) }
        throw FileError(path: path, reason: "must hold the key as \(byteCount * 2) hex digits (found a character that is not one)")
      }
      raw[i] = high << 4 | low
    }
    return raw
  }

  /// A new key from libsodium's CSPRNG, written to `path` (0600, never over an existing file).
  static func create(_ path: String, byteCount: Int) throws(FileError) -> [UInt8] {
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    var raw = [UInt8](repeating: 0, count: byteCount)
    raw.withUnsafeMutableBufferPointer { sg_random_bytes($0.baseAddress, $0.count) }
    do throws(FileError) { try write(path, raw) } catch {
      raw.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) }
      throw error
    }
    return raw
  }

  /// Writes `raw` to `path` as hex digits and a newline (0600, never over an existing file).
  static func write(_ path: String, _ raw: [UInt8]) throws(FileError) {
    var text = [UInt8](repeating: 0, count: raw.count * 2 + 1)
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    for i in 0..<raw.count {
      text[2 * i] = Hex.digit(raw[i] >> 4)
      text[2 * i + 1] = Hex.digit(raw[i])
    }
    text[raw.count * 2] = 0x0A
    try SecretFile.create(path, text)
  }
}

/// The service's tag key and its file, for the loop's once-a-second look (`StateFileWatch`): a
/// file deleted while the reader runs is written back from memory. The path is a C string made
/// once, so a look allocates nothing.
public final class TagKeyFile: StateFileKeeper {
  public let key: TagKey
  public let path: String
  private let cPath: UnsafeMutablePointer<CChar>

  public init(key: TagKey, path: String) {
    self.key = key
    self.path = path
    cPath = strdup(path)
  }

  deinit { free(cPath) }

  public func restoreIfMissing() {
    guard !pathExists(cPath) else { return }
    key.restoreIfMissing(path)
  }
}
