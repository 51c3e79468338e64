import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// Fixed 32-byte slots in a file (credential id 16 bytes, its length, a 16-bit use count, a
/// 40-bit first-use time, a 64-bit value; little-endian), loaded at start and written one slot
/// at a time with `fdatasync` before the decision it protects takes effect. Files written before
/// use counts hold zeros there (a single-use pass used once). The file is the reader's own (mode
/// 0600, never a symlink, refused unless regular); nothing allocates after `init`.
public final class CredentialSlotFile {
  public static let slotBytes = 32
  public struct Slot {
    public var slot: Int
    public var id: CredentialID
    public var value: Int64
    public var uses: Int
    public var firstUse: Int64
  }
  /// Every slot the file held at start (it may hold more than the caller keeps).
  public private(set) var loaded: [Slot] = []
  private let file: SlotFile

  /// Opens (or creates) `path`; at most `slotsMax` slots are read; the blocks of the first
  /// `reservingSlots` are allocated now (`SlotFile`: a disk that fills later cannot refuse them).
  public init(path: String, slotsMax: Int, reservingSlots: Int) throws(FileError) {
    var loaded: [Slot] = []
    file = try SlotFile(path: path, slotBytes: Self.slotBytes, slotsMax: slotsMax, reservingSlots: reservingSlots) { i, slot in
      let n = Int(slot[16])
      guard n >= 1 && n <= 16 else { return }  // a slot never written
      let value = Int64(littleEndian: slot.loadUnaligned(fromByteOffset: 24, as: Int64.self))
      let uses = Int(slot[17]) | Int(slot[18]) << 8
      var firstUse: Int64 = 0
      for k in 0..<5 { firstUse |= Int64(slot[19 + k]) << (8 * Int64(k)) }
      loaded.append(Slot(slot: i, id: CredentialID(UnsafeRawBufferPointer(rebasing: slot[0..<n]))!, value: value, uses: uses, firstUse: firstUse))
    }
    self.loaded = loaded
  }

  public var path: String { file.path }
  public var writeFailures: Int { file.writeFailures }

  /// Writes slot `index` and syncs it; false when it is not durable. `firstUse` is kept to 40
  /// bits (Unix seconds: beyond the year 36,000).
  public func write(_ index: Int, id: CredentialID, value: Int64, uses: UInt16 = 0, firstUse: Int64 = 0) -> Bool {
    let first = UInt64(clamping: max(0, firstUse)) & 0xFF_FFFF_FFFF
    return file.write(index) { slot in
      for k in 0..<8 {
        slot[k] = UInt8(truncatingIfNeeded: id.high >> (56 - 8 * UInt64(k)))
        slot[8 + k] = UInt8(truncatingIfNeeded: id.low >> (56 - 8 * UInt64(k)))
      }
      slot[16] = id.count
      slot[17] = UInt8(truncatingIfNeeded: uses)
      slot[18] = UInt8(truncatingIfNeeded: uses >> 8)
      for k in 0..<5 { slot[19 + k] = UInt8(truncatingIfNeeded: first >> (8 * UInt64(k))) }
      slot.storeBytes(of: value.littleEndian, toByteOffset: 24, as: Int64.self)
    }
  }
}

/// Counted passes remembered across restarts: a slot (id, uses, first use, expiry) written and
/// synced before the pass opens the door. Expired slots are reused.
public final class UsedCredentialFile: UseStore {
  public let capacity: Int
  private let file: CredentialSlotFile
  private var ids: [CredentialID]
  private var expiries: [Int64]
  private var uses: [UInt16]
  private var firstUses: [Int64]
  public private(set) var count = 0

  public init(path: String, capacity: Int) throws(FileError) {
    self.capacity = capacity
    file = try CredentialSlotFile(path: path, slotsMax: capacity, reservingSlots: capacity)
    ids = Array(repeating: CredentialID(), count: capacity)
    expiries = Array(repeating: .min, count: capacity)
    uses = Array(repeating: 0, count: capacity)
    firstUses = Array(repeating: 0, count: capacity)
    for s in file.loaded {
      ids[s.slot] = s.id
      expiries[s.slot] = s.value
      uses[s.slot] = UInt16(max(1, s.uses))  // 0: written before use counts, by a single-use pass
      firstUses[s.slot] = s.firstUse
      count = max(count, s.slot + 1)
    }
  }

  public var path: String { file.path }
  public var writeFailures: Int { file.writeFailures }

  public func usage(_ id: CredentialID) -> (uses: Int, firstUse: Int64)? {
    for i in 0..<count where ids[i] == id { return (Int(uses[i]), firstUses[i]) }
    return nil
  }

  public func forEachUse(_ body: (_ id: CredentialID, _ uses: Int, _ firstUse: Int64, _ until: Int64) -> Void) {
    for i in 0..<count where ids[i].count > 0 { body(ids[i], Int(uses[i]), firstUses[i], expiries[i]) }
  }

  public func recordUse(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    var index = -1
    var free = -1
    for i in 0..<count {
      if ids[i] == id {
        index = i
        break
      }
      if free < 0 && expiries[i] < now { free = i }
    }
    let seen = index >= 0
    if !seen {
      index = free >= 0 ? free : count
      guard index < capacity else { return false }
    }
    let n = seen ? uses[index] &+ (uses[index] == .max ? 0 : 1) : 1
    // The earliest use known (another reader's may arrive after this one's); 0 stays unknown.
    let first = seen ? (firstUses[index] == 0 ? 0 : min(firstUses[index], now)) : now
    let until = seen ? max(expiries[index], expires) : expires
    guard file.write(index, id: id, value: until, uses: n, firstUse: first) else { return false }
    ids[index] = id
    expiries[index] = until
    uses[index] = n
    firstUses[index] = first
    if index == count { count += 1 }
    return true
  }
}

/// Rotating passes' accepted steps across restarts, crashes and power cuts: the replay cache's
/// slot is written and synced before the door opens, and every slot is put back at start, so a
/// code once accepted stays refused (docs/credentials.md, "What survives a restart").
public final class ReplayStepFile: ReplayStore {
  private let file: CredentialSlotFile

  /// Opens `path` and restores what it holds into `cache` (slots beyond its capacity raise the
  /// cache's step floor).
  public init(path: String, cache: ReplayCache) throws(FileError) {
    file = try CredentialSlotFile(path: path, slotsMax: 1 << 20, reservingSlots: cache.capacity)
    for s in file.loaded { cache.restore(slot: s.slot, id: s.id, step: s.value) }
  }

  public var path: String { file.path }
  public var writeFailures: Int { file.writeFailures }

  public func persist(slot: Int, id: CredentialID, step: Int64) -> Bool { file.write(slot, id: id, value: step) }
}

/// The highest version of a versioned file ever accepted (the revocation list, the fleet's
/// bundles): kept in a small file, written durably before a newer version goes live, so an older
/// file moved into place, before or after a restart, is refused.
public final class VersionMarks: VersionMark {
  public let path: String
  public let name: String
  public private(set) var highest: UInt64 = 0

  /// Reads `path` (absent: nothing accepted yet); a damaged file is an error, never a zero.
  public init(path: String, name: String) throws(FileError) {
    self.path = path
    self.name = name
    guard fileExists(path) else {
      // Gone while the reader was stopped: an older list would pass again. Refused, not zero.
      if StateFileList.names(path) { throw StateFileList.missing(path) }
      return
    }
    let bytes = try readWholeFile(path, maxBytes: 256)
    let text = String(decoding: bytes, as: UTF8.self)
    let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
    if fields.count == 1, let v = UInt64(fields[0]) {
      highest = v  // an older file: the bare number
    } else if fields.count == 2, fields[0] == name, let v = UInt64(fields[1]) {
      highest = v
    } else {
      throw FileError(path: path, reason: "damaged (expected '\(name) <version>'): refused")
    }
  }

  /// Makes `version` the highest accepted, durably; false when it could not be written.
  public func raise(to version: UInt64) -> Bool {
    guard version > highest else { return true }
    do {
      try writeFileAtomically(path, Array("\(name) \(version)\n".utf8), mode: 0o600)
      try StateFileList.add(path)
    } catch { return false }
    highest = version
    return true
  }
}

/// Opens the durable state signed passes need, as configured (docs/credentials.md, "What
/// survives a restart"): what cannot be opened is reported and fails secure (rotating passes,
/// single-use passes or the revocation list refused), never fatal.
public enum CredentialState {
  public static func open(_ config: ScanConfig, into verifier: CredentialVerifier, report: (String) -> Void) {
    let c = config.credentials
    let none = "no state directory (state.directory, or log.path's directory)"
    if let path = config.statePath("replay-steps") {
      do { verifier.replayStore = try ReplayStepFile(path: path, cache: verifier.replay) } catch {
        report("\(error); rotating passes are refused")
      }
    } else {
      report("\(none): rotating passes are refused")
    }
    if let path = c.usedFile ?? config.statePath("used-passes") {
      do { verifier.useStore = try UsedCredentialFile(path: path, capacity: c.singleUseEntries) } catch {
        report("\(error); single-use and counted passes are refused")
      }
    } else {
      report("\(none): single-use and counted passes are refused")
    }
    guard c.revocationFile != nil else { return }
    if let path = config.statePath("revocation-version") {
      do { verifier.revocationMark = try VersionMarks(path: path, name: "revocation") } catch {
        report("\(error); every signed pass is refused until it is repaired")
      }
    } else {
      report("\(none): the revocation list is refused, and with it every signed pass")
    }
  }
}
