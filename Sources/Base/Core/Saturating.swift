extension Int64 {
  /// `self + other`, held at the bounds instead of trapping (times and counts from outside).
  @inline(__always)
  public func saturatingAdd(_ other: Int64) -> Int64 {
    let (sum, overflow) = addingReportingOverflow(other)
    return overflow ? (other > 0 ? .max : .min) : sum
  }
}
