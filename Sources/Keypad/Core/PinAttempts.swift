import ScanBase

/// Wrong PINs in a row per credential (by its keyed tag), in a fixed table: after `attemptsMax`
/// the credential is locked out for `lockoutSeconds`, judged at trusted wall time so a restart
/// (the table is kept durably by its owner) or a clock set back does not end it early. A right
/// PIN clears the count. When the table is full, the slot of the oldest lockout that has ended
/// (or, failing that, the fewest failures) is reused.
public struct PinAttempts: ~Copyable {
  public struct Entry: Equatable, Sendable {
    public var tag: Digest
    public var failures: Int
    public var lockedUntil: Int64
    public init(tag: Digest, failures: Int, lockedUntil: Int64) {
      self.tag = tag
      self.failures = failures
      self.lockedUntil = lockedUntil
    }
  }

  public let capacity: Int
  public let attemptsMax: Int
  public let lockoutSeconds: Int64
  private let entries: UnsafeMutableBufferPointer<Entry>
  public private(set) var count = 0

  public init(capacity: Int, attemptsMax: Int, lockoutSeconds: Int64) {
    precondition(capacity > 0 && attemptsMax > 0)
    self.capacity = capacity
    self.attemptsMax = attemptsMax
    self.lockoutSeconds = lockoutSeconds
    entries = .allocate(capacity: capacity)
    entries.initialize(repeating: Entry(tag: .zero, failures: 0, lockedUntil: 0))
  }
  deinit { entries.deallocate() }

  /// Whether `tag` is locked out at `now` (Unix seconds, trusted).
  public func isLocked(_ tag: Digest, now: Int64) -> Bool {
    guard let i = find(tag) else { return false }
    return now < entries[i].lockedUntil
  }

  /// Counts a wrong PIN at `now`; returns the slot to keep durably and whether this one locked it.
  public mutating func fail(_ tag: Digest, now: Int64) -> (slot: Int, locked: Bool) {
    let i = find(tag) ?? claim(tag, now: now)
    var e = entries[i]
    if e.lockedUntil != 0 && now >= e.lockedUntil {
      e.failures = 0  // a lockout that ended starts the count again
      e.lockedUntil = 0
    }
    e.failures = min(e.failures + 1, 255)
    let locked = e.failures >= attemptsMax
    if locked {
      e.lockedUntil = now.saturatingAdd(lockoutSeconds)
      e.failures = 0
    }
    entries[i] = e
    return (i, locked)
  }

  /// A right PIN: the count starts again. The slot to keep durably, nil when there was none.
  public mutating func succeed(_ tag: Digest) -> Int? {
    guard let i = find(tag) else { return nil }
    entries[i].failures = 0
    entries[i].lockedUntil = 0
    return i
  }

  public func entry(_ slot: Int) -> Entry { entries[slot] }

  /// Puts back what a durable store held in `slot` (at start); slots beyond the table are dropped.
  public mutating func restore(slot: Int, _ entry: Entry) {
    guard slot < capacity else { return }
    entries[slot] = entry
    count = max(count, slot + 1)
  }

  /// Credentials locked out at `now` (STATUS).
  public func lockedCount(now: Int64) -> Int {
    var n = 0
    for i in 0..<count where now < entries[i].lockedUntil { n += 1 }
    return n
  }

  private func find(_ tag: Digest) -> Int? {
    for i in 0..<count where entries[i].tag == tag { return i }
    return nil
  }

  private mutating func claim(_ tag: Digest, now: Int64) -> Int {
    var slot = count
    if count == capacity {
      // Reuse a slot whose lockout has ended, else the one with the fewest failures (never a
      // credential locked out now while another slot could go).
      slot = 0
      var best = Int.max
      for i in 0..<count {
        let e = entries[i]
        let score = now < e.lockedUntil ? 1_000 + e.failures : e.failures
        if score < best {
          best = score
          slot = i
        }
      }
    } else {
      count += 1
    }
    entries[slot] = Entry(tag: tag, failures: 0, lockedUntil: 0)
    return slot
  }
}
