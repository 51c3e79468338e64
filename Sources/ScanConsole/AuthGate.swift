import ScanCore

/// Who is asking: a TCP peer address (16 bytes, IPv4 mapped into IPv6) or a serial port.
public struct PeerKey: Hashable, Sendable {
  public var high: UInt64
  public var low: UInt64
  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }
  /// The serial console's key.
  public static let serial = PeerKey(high: .max, low: .max)
}

/// Failed-AUTH accounting per peer: exponential backoff between attempts, then a lockout.
/// A fixed table; when full, the record idle longest is reused.
public struct AuthGate: ~Copyable {
  public struct Settings: Equatable, Sendable {
    public var failuresMax = 5
    public var lockoutSeconds = 300
    public var firstBackoffMilliseconds = 1_000
    public init() {}
  }

  /// What the gate says about an attempt.
  public enum Admission: Equatable, Sendable {
    case allowed
    /// Too soon after a failure: retry after this many milliseconds.
    case backingOff(milliseconds: Int)
    /// Locked out for this many more milliseconds.
    case lockedOut(milliseconds: Int)
  }

  private struct Record {
    var peer = PeerKey(high: 0, low: 0)
    var used = false
    var failures = 0
    var nextAttempt = Instant(nanoseconds: 0)
    var lockedUntil = Instant(nanoseconds: 0)
    var lastFailure = Instant(nanoseconds: 0)
  }

  public let settings: Settings
  private let records: UnsafeMutableBufferPointer<Record>

  public init(settings: Settings, capacity: Int = 64) {
    self.settings = settings
    records = .allocate(capacity: capacity)
    records.initialize(repeating: Record())
  }

  deinit { records.deallocate() }

  private func find(_ peer: PeerKey) -> Int? {
    for i in 0..<records.count where records[i].used && records[i].peer == peer { return i }
    return nil
  }

  /// Whether `peer` may try AUTH at `now`.
  public func admit(_ peer: PeerKey, at now: Instant) -> Admission {
    guard let i = find(peer) else { return .allowed }
    let r = records[i]
    if now < r.lockedUntil { return .lockedOut(milliseconds: Int((r.lockedUntil.nanoseconds - now.nanoseconds) / 1_000_000) + 1) }
    if now < r.nextAttempt { return .backingOff(milliseconds: Int((r.nextAttempt.nanoseconds - now.nanoseconds) / 1_000_000) + 1) }
    return .allowed
  }

  /// Records a failed attempt; returns the new failure count.
  @discardableResult
  public mutating func recordFailure(_ peer: PeerKey, at now: Instant) -> Int {
    var i = find(peer) ?? -1
    if i < 0 {
      i = 0
      for k in 0..<records.count {
        if !records[k].used { i = k; break }
        if records[k].lastFailure < records[i].lastFailure { i = k }
      }
      records[i] = Record(peer: peer, used: true)
    }
    if now >= records[i].lockedUntil && records[i].failures >= settings.failuresMax {
      records[i].failures = 0  // a lockout served starts the count again
    }
    records[i].failures += 1
    records[i].lastFailure = now
    let failures = records[i].failures
    if failures >= settings.failuresMax {
      records[i].lockedUntil = now.adding(milliseconds: settings.lockoutSeconds * 1000)
    } else {
      let backoff = settings.firstBackoffMilliseconds << min(failures - 1, 16)
      records[i].nextAttempt = now.adding(milliseconds: backoff)
    }
    return failures
  }

  /// A successful AUTH clears the peer's record.
  public mutating func recordSuccess(_ peer: PeerKey) {
    if let i = find(peer) { records[i].used = false }
  }
}
