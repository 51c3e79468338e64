import ScanCore

/// A monotonic clock that moves only when told to (tests and the simulator).
public final class ManualClock: MonotonicClock, WallClock {
  public private(set) var current: Instant
  /// Wall-clock seconds at `current` = 0.
  public var epochSeconds: Int64

  public init(start: Instant = Instant(nanoseconds: 1_000_000_000), epochSeconds: Int64 = 1_780_000_000) {
    current = start
    self.epochSeconds = epochSeconds
  }
  public func now() -> Instant { current }
  public func unixSeconds() -> Int64 { epochSeconds + Int64(current.nanoseconds / 1_000_000_000) }
  public func advance(milliseconds: Int) { current = current.adding(milliseconds: milliseconds) }
  public func advance(microseconds: Int) { current.nanoseconds &+= UInt64(microseconds) * 1_000 }
}
