import ScanBase
import ScanTurnstile
import Testing

/// Anti-passback in each mode (with the wall clock set back), forgive, undo, eviction, the durable
/// record's bytes; and the occupancy count. Expectations are written out from the rules.
@Suite struct AntiPassbackTests {
  static func key(_ n: UInt64) -> Digest { Digest(words: (n, n &* 31, 7, 9)) }

  static func table(_ mode: PassbackMode, entries: Int = 64, seconds: Int64 = 300) -> AntiPassback {
    var s = PassbackSettings()
    s.mode = mode
    s.timedSeconds = seconds
    s.entriesMax = entries
    return AntiPassback(settings: s)
  }

  @Test("off: always granted, recorded or not")
  func off() {
    let t = Self.table(.off)
    t.record(Self.key(1), .entry, now: 1_000)
    #expect(t.check(Self.key(1), .entry, now: 1_000) == .granted)
    #expect(t.check(Self.key(1), .exit, now: 1_000) == .granted)
  }

  @Test("timed: the same way within the window denied, at its end granted; the other way and other keys free")
  func timed() {
    let t = Self.table(.timed)
    #expect(t.check(Self.key(1), .entry, now: 1_000) == .granted)
    t.record(Self.key(1), .entry, now: 1_000)
    #expect(t.count == 1)
    #expect(t.check(Self.key(1), .entry, now: 1_001) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_299) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_300) == .granted)
    #expect(t.check(Self.key(1), .exit, now: 1_001) == .granted)
    #expect(t.check(Self.key(2), .entry, now: 1_001) == .granted)
  }

  @Test("timed: setting the clock back does not shorten the window")
  func timedClockBack() {
    let t = Self.table(.timed)
    t.record(Self.key(1), .entry, now: 1_000)
    // The clock jumps back an hour: still inside the window, and the window still ends at 1300
    // on the judged clock (the floor holds at 1000 until the clock passes it again).
    #expect(t.check(Self.key(1), .entry, now: -2_600) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 900) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_299) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_300) == .granted)
    // A record made while the clock is behind is stamped with the floor, not the clock.
    t.record(Self.key(2), .exit, now: 500)
    #expect(t.check(Self.key(2), .exit, now: 1_599) == .deniedPassback)
    #expect(t.check(Self.key(2), .exit, now: 1_600) == .granted)
  }

  @Test("hard: entry and exit alternate, however long after; no record is granted either way")
  func hard() {
    let t = Self.table(.hard)
    #expect(t.check(Self.key(1), .entry, now: 0) == .granted)
    #expect(t.check(Self.key(1), .exit, now: 0) == .granted)
    t.record(Self.key(1), .entry, now: 1_000)
    #expect(t.check(Self.key(1), .entry, now: 1_000_000) == .deniedPassback)
    #expect(t.check(Self.key(1), .exit, now: 1_000_001) == .granted)
    t.record(Self.key(1), .exit, now: 1_000_001)
    #expect(t.count == 1)
    #expect(t.check(Self.key(1), .exit, now: 1_000_002) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_000_002) == .granted)
  }

  @Test("forgive clears the key's slot; unknown keys give nil")
  func forgive() {
    let t = Self.table(.hard)
    let (slot, previous) = t.record(Self.key(1), .entry, now: 1_000)
    #expect(previous == nil)
    #expect(t.record(at: slot) == PassbackRecord(key: Self.key(1), direction: .entry, unixSeconds: 1_000))
    #expect(t.forgive(Self.key(1)) == slot)
    #expect(t.record(at: slot) == nil && t.count == 0)
    #expect(t.check(Self.key(1), .entry, now: 1_001) == .granted)
    #expect(t.forgive(Self.key(1)) == nil)
    #expect(t.forgive(Self.key(2)) == nil)
  }

  @Test("undo puts back what a record replaced (granted-not-passed)")
  func undo() {
    let t = Self.table(.hard)
    let first = t.record(Self.key(1), .entry, now: 1_000)
    t.undo(slot: first.slot, previous: first.previous)
    #expect(t.count == 0 && t.record(at: first.slot) == nil)
    #expect(t.check(Self.key(1), .entry, now: 1_001) == .granted)
    t.record(Self.key(1), .entry, now: 1_000)  // stamped 1001: the check above raised the floor
    let second = t.record(Self.key(1), .exit, now: 1_100)
    #expect(second.previous == PassbackRecord(key: Self.key(1), direction: .entry, unixSeconds: 1_001))
    t.undo(slot: second.slot, previous: second.previous)
    #expect(t.count == 1)
    #expect(t.check(Self.key(1), .entry, now: 1_200) == .deniedPassback)
    #expect(t.check(Self.key(1), .exit, now: 1_200) == .granted)
  }

  @Test("full: the oldest record's slot is reused and the eviction counted")
  func eviction() {
    let t = Self.table(.hard, entries: 8)
    #expect(t.capacity == 8)
    for i in 1...8 { t.record(Self.key(UInt64(i)), .entry, now: 100 + Int64(i)) }
    // Keys 1 and 2 pass again (their slots, newer records): key 3 is now the oldest.
    t.record(Self.key(1), .exit, now: 150)
    t.record(Self.key(2), .exit, now: 151)
    #expect(t.count == 8 && t.evictions == 0)
    let r = t.record(Self.key(9), .entry, now: 300)
    #expect(r.previous == PassbackRecord(key: Self.key(3), direction: .entry, unixSeconds: 103))
    #expect(t.count == 8 && t.evictions == 1)
    #expect(t.check(Self.key(3), .entry, now: 301) == .granted)  // forgotten
    #expect(t.check(Self.key(4), .entry, now: 301) == .deniedPassback)
    #expect(t.check(Self.key(2), .exit, now: 301) == .deniedPassback)
    #expect(t.check(Self.key(9), .entry, now: 301) == .deniedPassback)
    // Undoing the eviction brings the evicted key back.
    t.undo(slot: r.slot, previous: r.previous)
    #expect(t.check(Self.key(3), .entry, now: 302) == .deniedPassback)
    #expect(t.check(Self.key(9), .entry, now: 302) == .granted)
    #expect(Self.table(.hard, entries: 4_096).capacity == 4_096)
  }

  @Test("a record's bytes round-trip; empty, short, bad direction, version and padding are rejected")
  func encoding() {
    var bytes = [UInt8](repeating: 0xAA, count: 32)
    for i in 0..<32 { bytes[i] = UInt8(i * 7 + 1) }
    let key = bytes.withUnsafeBytes { Digest(bytes: $0) }
    let record = PassbackRecord(key: key, direction: .exit, unixSeconds: 0x0102_0304_0506)
    #expect(PassbackRecord.encodedBytes == 48)
    var buffer = [UInt8](repeating: 0xFF, count: 48)
    buffer.withUnsafeMutableBytes { record.encode(into: $0) }
    #expect(buffer[0] == 1 && buffer[1] == 1)
    #expect(Array(buffer[2..<8]) == [0, 0, 0, 0, 0, 0])
    #expect(Array(buffer[8..<16]) == [6, 5, 4, 3, 2, 1, 0, 0])
    #expect(Array(buffer[16..<48]) == bytes)
    #expect(buffer.withUnsafeBytes { PassbackRecord(decoding: $0) } == record)

    let empty = [UInt8](repeating: 0, count: 48)
    #expect(empty.withUnsafeBytes { PassbackRecord(decoding: $0) } == nil)
    #expect(buffer.dropLast().withUnsafeBytes { PassbackRecord(decoding: $0) } == nil)
    var bad = buffer
    bad[1] = 2
    #expect(bad.withUnsafeBytes { PassbackRecord(decoding: $0) } == nil)
    bad = buffer
    bad[0] = 2
    #expect(bad.withUnsafeBytes { PassbackRecord(decoding: $0) } == nil)
    bad = buffer
    bad[5] = 1
    #expect(bad.withUnsafeBytes { PassbackRecord(decoding: $0) } == nil)
  }

  @Test("restore loads slots as stored, raises the clock floor, and refuses a record in another bucket")
  func restore() {
    let source = Self.table(.timed, entries: 64)
    let (slot, _) = source.record(Self.key(3), .entry, now: 5_000)
    let loaded = Self.table(.timed, entries: 64)
    for s in 0..<source.capacity { loaded.restore(slot: s, source.record(at: s)) }
    #expect(loaded.count == 1 && loaded.record(at: slot) == source.record(at: slot))
    // The clock reads 4000 after a restart: judged as 5000, the window runs to 5300.
    #expect(loaded.check(Self.key(3), .entry, now: 4_000) == .deniedPassback)
    #expect(loaded.check(Self.key(3), .entry, now: 5_299) == .deniedPassback)
    #expect(loaded.check(Self.key(3), .entry, now: 5_300) == .granted)
    // 64 entries: 8 buckets of 8; key 3 belongs in slots 24..<32, not slot 0.
    #expect(slot >= 24 && slot < 32)
    let other = Self.table(.timed, entries: 64)
    other.restore(slot: 0, PassbackRecord(key: Self.key(3), direction: .entry, unixSeconds: 5_000))
    #expect(other.record(at: 0) == nil && other.count == 0)
  }
}

/// Occupancy, nested here so the AntiPassbackTests filter runs it.
extension AntiPassbackTests {
  @Suite struct OccupancyTests {
    @Test("entries less exits, clamped at 0 with the clamps counted; reset returns the count before")
    func counting() {
      var o = Occupancy()
      o.passage(.entry)
      o.passage(.exit)
      o.passage(.exit)
      o.passage(.exit)
      #expect(o.count == 0 && o.underflows == 2 && o.entries == 1 && o.exits == 3)
      o.passage(.entry)
      o.passage(.entry)
      #expect(o.count == 2)
      #expect(o.reset() == 2)
      #expect(o.count == 0 && o.entries == 3 && o.exits == 3 && o.underflows == 2)
      #expect(o.reset() == 0)
    }

    @Test("the durable bytes round-trip; a wrong version, length or a negative count is rejected")
    func encoding() {
      var o = Occupancy()
      for _ in 0..<300 { o.passage(.entry) }
      for _ in 0..<5 { o.passage(.exit) }
      var buffer = [UInt8](repeating: 0xFF, count: Occupancy.encodedBytes)
      buffer.withUnsafeMutableBytes { o.encode(into: $0) }
      #expect(buffer[0] == 1 && Array(buffer[8..<10]) == [0x2C, 0x01])  // 300 entries
      #expect(buffer.withUnsafeBytes { Occupancy(decoding: $0) } == o)
      var bad = buffer
      bad[0] = 2
      #expect(bad.withUnsafeBytes { Occupancy(decoding: $0) } == nil)
      #expect(buffer.dropLast().withUnsafeBytes { Occupancy(decoding: $0) } == nil)
      bad = buffer
      bad[31] = 0x80  // the count's top byte: negative
      #expect(bad.withUnsafeBytes { Occupancy(decoding: $0) } == nil)
    }
  }
}
