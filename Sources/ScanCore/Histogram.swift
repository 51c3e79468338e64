/// A fixed latency histogram in microseconds: 4 sub-buckets per power of two up to ~68 s.
/// Recording is a few integer operations; percentiles are upper bucket bounds (≤ 19 % over).
public struct LatencyHistogram: Sendable {
  public static let bucketCount = 104
  private var buckets: InlineArray<104, UInt32> = .init(repeating: 0)
  public private(set) var count: UInt64 = 0
  public private(set) var maxMicroseconds: UInt64 = 0
  public private(set) var sumMicroseconds: UInt64 = 0

  public init() {}

  @inline(__always) static func bucket(_ us: UInt64) -> Int {
    if us < 4 { return Int(us) }
    let log = 63 - us.leadingZeroBitCount  // ≥ 2
    let sub = Int((us >> UInt64(log - 2)) & 3)
    return min(bucketCount - 1, (log - 1) * 4 + sub)
  }

  /// The largest value that falls in bucket `index`.
  static func upperBound(_ index: Int) -> UInt64 {
    if index < 4 { return UInt64(index) }
    let log = index / 4 + 1, sub = UInt64(index % 4)
    return ((4 + sub + 1) << UInt64(log - 2)) - 1
  }

  public mutating func record(microseconds us: UInt64) {
    let b = Self.bucket(us)
    buckets[b] &+= 1
    count &+= 1
    sumMicroseconds &+= us
    if us > maxMicroseconds { maxMicroseconds = us }
  }

  /// The value at quantile `q` (0...1), as its bucket's upper bound, capped at the maximum seen.
  public func percentile(_ q: Double) -> UInt64 {
    guard count > 0 else { return 0 }
    let rank = UInt64((Double(count) * q).rounded(.up))
    var seen: UInt64 = 0
    for i in 0..<Self.bucketCount {
      seen += UInt64(buckets[i])
      if seen >= max(1, rank) { return min(Self.upperBound(i), maxMicroseconds) }
    }
    return maxMicroseconds
  }

  /// (upper bound µs, count) for every non-empty bucket, for plots.
  public var nonEmptyBuckets: [(UInt64, UInt32)] {
    var out: [(UInt64, UInt32)] = []
    for i in 0..<Self.bucketCount where buckets[i] > 0 { out.append((Self.upperBound(i), buckets[i])) }
    return out
  }
}
