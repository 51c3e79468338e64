import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// How far the audit log had committed, kept outside the database (`<log>.committed`): the
/// evidence that finds records lost with a damaged, torn or deleted WAL, which SQLite drops
/// without a word (docs/audit-log.md, "Under faults").
///
/// Two 96-byte slots, written in turn after every commit batch with `pwrite` (synced every few
/// seconds, and at the stop) on a descriptor opened with the log: magic, a generation, the head's sequence and chain value,
/// the log id, and an FNV-1a checksum of the rest. A torn write spoils at most the slot being
/// written, and the other still holds the previous head; the newest sound slot counts. The
/// mark is written after the commit's own sync, so it is never ahead of what the database
/// committed, even after a power cut (then it may be a few seconds behind): a database behind it
/// has lost records. Nothing allocates after `init`.
public final class AuditHeadMark {
  public static let slotBytes = 96
  static let magic: [UInt8] = Array("sgmark01".utf8)
  static let logIDBytes = 32

  /// A committed head: which log, its sequence and chain value (32 bytes).
  public struct Head: Equatable, Sendable {
    public var logID: String
    public var sequence: Int64
    public var value: [UInt8]
    public init(logID: String, sequence: Int64, value: [UInt8]) {
      self.logID = logID
      self.sequence = sequence
      self.value = value
    }
  }

  public let path: String
  /// The newest sound slot the file held when it was opened (nil: new, empty or unreadable).
  public private(set) var loaded: Head?
  /// Why the file's content could not be used (both slots damaged), or nil.
  public private(set) var problem: String?
  public private(set) var writeFailures = 0
  private let descriptor: Int32
  private let slot: UnsafeMutableRawBufferPointer
  private var generation: UInt64 = 0

  /// The mark of the log at `logPath`.
  public static func path(forLog logPath: String) -> String { logPath + ".committed" }

  /// Opens (or creates, 0600) `path` and reads its newest sound slot.
  public init(path: String) throws(FileError) {
    self.path = path
    let (fd, _) = try openSlotFile(path)
    descriptor = fd
    slot = .allocate(byteCount: Self.slotBytes, alignment: 8)
    var bytes = [UInt8](repeating: 0, count: 2 * Self.slotBytes)
    // A read that fails is taken as no mark (as an empty file is).
    let n = bytes.withUnsafeMutableBytes { b in (try? syscall("pread \(path)", { pread(fd, b.baseAddress, b.count, 0) })) ?? 0 }
    let found = Self.decode(Array(bytes.prefix(n)))
    loaded = found.head
    generation = found.generation
    if n > 0 && found.head == nil { problem = "damaged (no sound slot): the log's tail cannot be checked against it this time" }
  }

  deinit {
    closeDescriptor(descriptor)
    slot.deallocate()
  }

  /// Reads the mark at `path` without creating or writing it (`scangate log verify`): nil when
  /// there is none.
  public static func read(_ path: String) throws(FileError) -> Head? {
    guard fileExists(path) else { return nil }
    let bytes = try readWholeFile(path, maxBytes: 4 * slotBytes)
    guard let head = decode(bytes).head else {
      if bytes.isEmpty { return nil }
      throw FileError(path: path, reason: "damaged (no sound slot)")
    }
    return head
  }

  /// Makes `head` the mark: written at once (`pwrite`: in the page cache, so a kill -9 keeps it),
  /// made durable by `sync()` (the writer syncs it every few seconds, not with every commit:
  /// docs/audit-log.md, "What the log writes"). False when it could not be written (counted).
  @discardableResult
  public func write(_ head: Head, sync now: Bool = false) -> Bool {
    generation &+= 1
    Self.encode(head, generation: generation, into: slot)
    let offset = off_t(Int(generation % 2) * Self.slotBytes)
    let written = try? syscall("pwrite \(path)", { pwrite(descriptor, slot.baseAddress, Self.slotBytes, offset) })
    guard written == Self.slotBytes else {
      writeFailures += 1
      return false
    }
    loaded = head
    unsynced = true
    return now ? sync() : true
  }

  /// Written and not yet made durable.
  public private(set) var unsynced = false

  /// Makes the last `write` durable (`fdatasync`); true when there was nothing to do.
  @discardableResult
  public func sync() -> Bool {
    guard unsynced else { return true }
    guard (try? syscall("fdatasync \(path)", { fdatasync(descriptor) })) != nil else {
      writeFailures += 1
      return false
    }
    unsynced = false
    return true
  }

  static func encode(_ head: Head, generation: UInt64, into slot: UnsafeMutableRawBufferPointer) {
    slot.initializeMemory(as: UInt8.self, repeating: 0)
    for (i, b) in magic.enumerated() { slot[i] = b }
    slot.storeBytes(of: generation.littleEndian, toByteOffset: 8, as: UInt64.self)
    slot.storeBytes(of: head.sequence.littleEndian, toByteOffset: 16, as: Int64.self)
    for (i, b) in head.value.prefix(32).enumerated() { slot[24 + i] = b }
    var i = 0
    for b in head.logID.utf8 where i < logIDBytes {
      slot[56 + i] = b
      i += 1
    }
    slot.storeBytes(of: fnv1a(UnsafeRawBufferPointer(rebasing: slot[0..<88])).littleEndian, toByteOffset: 88, as: UInt64.self)
  }

  /// The highest sequence a mark may name (2^62: the log's numbers never come near it).
  static let sequenceMax: Int64 = 1 << 62

  /// The newest sound slot in `bytes` (a whole file's content) and its generation.
  static func decode(_ bytes: [UInt8]) -> (head: Head?, generation: UInt64) {
    var best: (head: Head, generation: UInt64)? = nil
    bytes.withUnsafeBytes { all in
      var start = 0
      while start + slotBytes <= all.count {
        let s = UnsafeRawBufferPointer(rebasing: all[start..<start + slotBytes])
        start += slotBytes
        guard Array(s[0..<8]) == magic, s.loadUnaligned(fromByteOffset: 88, as: UInt64.self) == fnv1a(UnsafeRawBufferPointer(rebasing: s[0..<88])).littleEndian
        else { continue }
        let generation = UInt64(littleEndian: s.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let sequence = Int64(littleEndian: s.loadUnaligned(fromByteOffset: 16, as: Int64.self))
        // A sequence no log reaches (the checksum is no MAC: anyone can write one) is damage,
        // never a cut to record: M + 1 and M + 2 must not overflow.
        guard (0...sequenceMax).contains(sequence) else { continue }
        let id = String(decoding: s[56..<56 + logIDBytes].prefix { $0 != 0 }, as: UTF8.self)
        let head = Head(logID: id, sequence: sequence, value: Array(s[24..<56]))
        if best == nil || generation > best!.generation { best = (head, generation) }
      }
    }
    return (best?.head, best?.generation ?? 0)
  }

  /// FNV-1a, 64 bits: finds a torn or damaged slot (not a MAC: whoever can write the file can
  /// write the database too; only a head published off the reader proves anything against them).
  static func fnv1a(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes {
      h ^= UInt64(b)
      h &*= 0x100_0000_01b3
    }
    return h
  }
}
