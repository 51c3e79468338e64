import ScanBase

/// How anti-passback judges a credential's passage.
public enum PassbackMode: String, Sendable, CaseIterable {
  /// Always granted.
  case off
  /// The same credential the same way again within `timedSeconds`: denied (the other way is free).
  case timed
  /// The same way as its last passage: denied (entry and exit alternate).
  case hard
}

/// Anti-passback, as configured in `[turnstile]`.
public struct PassbackSettings: Equatable, Sendable {
  public var mode = PassbackMode.off
  public var timedSeconds: Int64 = 300
  /// Credentials remembered (the table holds at least this many; see `AntiPassback`).
  public var entriesMax = 4096
  public init() {}
}

/// A credential's last passage: its payload digest, which way, and when (wall seconds, as judged).
public struct PassbackRecord: Equatable, Sendable {
  public var key: Digest
  public var direction: PassageDirection
  public var unixSeconds: Int64
  public init(key: Digest, direction: PassageDirection, unixSeconds: Int64) {
    self.key = key
    self.direction = direction
    self.unixSeconds = unixSeconds
  }

  /// The durable form: byte 0 the version (1; 0 is an empty slot), byte 1 the direction, bytes
  /// 2–7 zero, bytes 8–15 the seconds (little-endian), bytes 16–47 the digest.
  public static let encodedBytes = 48
  static let version: UInt8 = 1

  /// Writes the durable form into the first `encodedBytes` of `buffer`.
  public func encode(into buffer: UnsafeMutableRawBufferPointer) {
    precondition(buffer.count >= Self.encodedBytes)
    for i in 0..<Self.encodedBytes { buffer[i] = 0 }
    buffer[0] = Self.version
    buffer[1] = direction.rawValue
    let seconds = UInt64(bitPattern: unixSeconds)
    for i in 0..<8 { buffer[8 + i] = UInt8(truncatingIfNeeded: seconds >> UInt64(8 * i)) }
    for i in 0..<32 { buffer[16 + i] = key.byte(i) }
  }

  /// Reads the durable form: nil for an empty slot (all zero) and for bytes that are not a record
  /// (a wrong length or version, a bad direction, non-zero padding).
  public init?(decoding bytes: UnsafeRawBufferPointer) {
    guard bytes.count == Self.encodedBytes, bytes[0] == Self.version,
      let direction = PassageDirection(rawValue: bytes[1])
    else { return nil }
    for i in 2..<8 where bytes[i] != 0 { return nil }
    var seconds: UInt64 = 0
    for i in 0..<8 { seconds |= UInt64(bytes[8 + i]) << UInt64(8 * i) }
    self.init(
      key: Digest(bytes: UnsafeRawBufferPointer(rebasing: bytes[16..<48])), direction: direction,
      unixSeconds: Int64(bitPattern: seconds))
  }
}

/// Anti-passback: each credential's last passage, in a fixed table allocated at init.
///
/// The table is set-associative: a digest's first word picks a bucket of 8 slots, and a lookup
/// reads only that bucket (O(1), no allocation, no tombstones, so a slot's record alone is its
/// durable state). A full bucket reuses the slot of its oldest record (in `timed` mode the oldest
/// is the first to have left its window); evictions are counted. The table holds `capacity`
/// (at least `entriesMax`) records, though a bucket can fill before the table does.
///
/// A credential with no record is granted either way: a fresh reader, or a forgiven or evicted
/// credential, does not lock anyone out. Wall time is judged as the later of the clock and its
/// floor (the latest time seen), so setting the clock back never shortens a window.
public final class AntiPassback {
  public let settings: PassbackSettings
  public static let bucketSlots = 8
  private let bucketMask: UInt64
  private let slots: UnsafeMutableBufferPointer<PassbackRecord?>
  public private(set) var count = 0
  public private(set) var evictions: UInt64 = 0
  /// The latest wall time seen (checks, records, restored records).
  public private(set) var floorSeconds: Int64 = .min

  public init(settings: PassbackSettings) {
    self.settings = settings
    var buckets = 1
    while buckets * Self.bucketSlots < max(1, settings.entriesMax) { buckets <<= 1 }
    bucketMask = UInt64(buckets - 1)
    slots = .allocate(capacity: buckets * Self.bucketSlots)
    slots.initialize(repeating: nil)
  }

  deinit { slots.deallocate() }

  /// Slots in the table (the durable file holds this many records).
  public var capacity: Int { slots.count }

  private func bucket(_ key: Digest) -> Int { Int(key.words.0 & bucketMask) * Self.bucketSlots }

  private func find(_ key: Digest) -> Int? {
    let first = bucket(key)
    for i in first..<first + Self.bucketSlots where slots[i]?.key == key { return i }
    return nil
  }

  private func judged(_ now: Int64) -> Int64 {
    if now > floorSeconds { floorSeconds = now }
    return floorSeconds
  }

  /// `.granted` or `.deniedPassback` for `key` passing `direction` at `now` (wall seconds).
  public func check(_ key: Digest, _ direction: PassageDirection, now: Int64) -> Verdict {
    check(key, direction, now: now, mode: settings.mode)
  }

  /// `check` in `mode` instead of the configured one (the site's offline rule `timed`).
  public func check(_ key: Digest, _ direction: PassageDirection, now: Int64, mode: PassbackMode) -> Verdict {
    let at = judged(now)
    guard mode != .off, let slot = find(key), let last = slots[slot] else { return .granted }
    switch mode {
    case .off: return .granted
    case .timed:
      return last.direction == direction && at - last.unixSeconds < settings.timedSeconds ? .deniedPassback : .granted
    case .hard: return last.direction == direction ? .deniedPassback : .granted
    }
  }

  /// Records a passage; returns the slot written (for a durable store) and the record it
  /// replaced there (to `undo` a granted-not-passed), which may be another credential's (evicted).
  @discardableResult
  public func record(_ key: Digest, _ direction: PassageDirection, now: Int64) -> (slot: Int, previous: PassbackRecord?) {
    let at = judged(now)
    let slot: Int
    if let found = find(key) {
      slot = found
    } else {
      let first = bucket(key)
      var chosen = first
      var empty = false
      for i in first..<first + Self.bucketSlots {
        guard let r = slots[i] else {
          chosen = i
          empty = true
          break
        }
        if r.unixSeconds < slots[chosen]!.unixSeconds { chosen = i }
      }
      if empty { count += 1 } else { evictions &+= 1 }
      slot = chosen
    }
    let previous = slots[slot]
    slots[slot] = PassbackRecord(key: key, direction: direction, unixSeconds: at)
    return (slot, previous)
  }

  /// Records a passage another reader of the site made at `unixSeconds` (its time, never later
  /// than this reader's judged `now`, and never moving the floor): the slot written, or nil when
  /// this table already holds the credential's passage at that time or later (a late or replayed
  /// message never overwrites a newer passage).
  public func merge(_ key: Digest, _ direction: PassageDirection, at unixSeconds: Int64, now: Int64) -> (slot: Int, previous: PassbackRecord?)? {
    let at = min(unixSeconds, judged(now))
    if let found = find(key), let existing = slots[found], existing.unixSeconds >= at { return nil }
    let (slot, previous) = record(key, direction, now: at)
    slots[slot]!.unixSeconds = at
    return (slot, previous)
  }

  /// Puts back what `record` replaced at `slot` (the passage did not happen).
  public func undo(slot: Int, previous: PassbackRecord?) { restore(slot: slot, previous) }

  /// Forgets `key` (console or fleet FORGIVE): the slot cleared, or nil when unknown.
  public func forgive(_ key: Digest) -> Int? {
    guard let slot = find(key) else { return nil }
    slots[slot] = nil
    count -= 1
    return slot
  }

  /// The record at `slot` (nil: empty), for the durable store.
  public func record(at slot: Int) -> PassbackRecord? { slots[slot] }

  /// The key whose first 8 bytes, read big-endian, are `prefix` (the tag events show, as an
  /// operator types it into TURNSTILE FORGIVE), or nil. A scan of the table: operators only.
  public func find(prefix: UInt64) -> Digest? {
    for i in 0..<slots.count {
      guard let record = slots[i] else { continue }
      var value: UInt64 = 0
      for k in 0..<8 { value = value << 8 | UInt64(record.key.byte(k)) }
      if value == prefix { return record.key }
    }
    return nil
  }

  /// Sets `slot` to `record` (loading the durable file, or an undo). A record whose bucket is not
  /// this slot's (a file written with another table size) is not placed.
  public func restore(slot: Int, _ record: PassbackRecord?) {
    guard slot >= 0 && slot < slots.count else { return }
    if let r = record {
      guard bucket(r.key) == slot - slot % Self.bucketSlots else { return }
      if r.unixSeconds > floorSeconds { floorSeconds = r.unixSeconds }
    }
    count += (record == nil ? 0 : 1) - (slots[slot] == nil ? 0 : 1)
    slots[slot] = record
  }
}
