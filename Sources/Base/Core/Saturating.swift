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
