import Synchronization

extension Int64 {
  /// `self + other`, held at the bounds instead of trapping (times and counts from outside).
  @inline(__always)
  public func saturatingAdd(_ other: Int64) -> Int64 {
    let (sum, overflow) = addingReportingOverflow(other)
    return overflow ? (other > 0 ? .max : .min) : sum
  }
}

/// One number the loop writes and another thread reads (the fleet's state topic reads the
/// turnstile's occupancy): an atomic, so neither waits and nothing is torn.
public final class SharedGauge: Sendable {
  private let value = Atomic<Int64>(0)
  public init() {}
  public func store(_ v: Int64) { value.store(v, ordering: .relaxed) }
  public func load() -> Int64 { value.load(ordering: .relaxed) }
}

/// On/off facts a part of the reader knows now (a door's contact, its tamper, its strike; fire
/// and lockdown), packed for a `SharedGauge`, so another thread (the fleet's state topic) shows
/// them at once after a start instead of waiting for the next change: two bits a fact, "known"
/// and "on".
public struct StateFlags: Equatable, Sendable {
  public private(set) var raw: Int64 = 0
  public init(raw: Int64 = 0) { self.raw = raw }

  public mutating func set(_ fact: Int, _ on: Bool) {
    raw |= 1 << (2 * fact)
    if on { raw |= 1 << (2 * fact + 1) } else { raw &= ~(1 << (2 * fact + 1)) }
  }

  /// nil while the fact is unknown.
  public func value(_ fact: Int) -> Bool? {
    guard raw & (1 << (2 * fact)) != 0 else { return nil }
    return raw & (1 << (2 * fact + 1)) != 0
  }

  /// The door's facts (`DoorController.stateGauge`) and the emergencies' (`EmergencyController`).
  public static let doorOpen = 0, tamper = 1, strikeReleased = 2
  public static let fire = 0, lockdown = 1
}
