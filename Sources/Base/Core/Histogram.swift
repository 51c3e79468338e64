/// A fixed latency histogram in microseconds: exact below 64 µs, then 32 sub-buckets per power
/// of two up to ~134 s (longer values land in the last bucket; the maximum is kept exactly). Each bucket spans at most 1/32 (3.1 %) of its lower bound, so two
/// histograms can be compared to a few percent (frame-to-edge p99 against decode p99 + 0.1 ms).
/// Recording is a few integer operations; percentiles are upper bucket bounds (≤ 3.2 % over).
public struct LatencyHistogram: Sendable {
  /// Sub-buckets per power of two (2^subBits).
  static let subBits = 5
  static let sub = 1 << subBits
  /// 0 ..< 32 exact, then (octave 5 ... 26) × 32.
  public static let bucketCount = 736
  private var buckets: InlineArray<736, UInt32> = .init(repeating: 0)
  public private(set) var count: UInt64 = 0
  public private(set) var maxMicroseconds: UInt64 = 0
  public private(set) var sumMicroseconds: UInt64 = 0

  public init() {}

  @inline(__always) public static func bucket(_ us: UInt64) -> Int {
    if us < UInt64(sub) { return Int(us) }
    let log = 63 - us.leadingZeroBitCount  // ≥ subBits
    let s = Int((us >> UInt64(log - subBits)) & UInt64(sub - 1))
    return min(bucketCount - 1, (log - subBits + 1) * sub + s)
  }

  /// The largest value that falls in bucket `index`.
  public static func upperBound(_ index: Int) -> UInt64 {
    if index < sub { return UInt64(index) }
    let log = index / sub + subBits - 1, s = UInt64(index % sub)
    return ((UInt64(sub) + s + 1) << UInt64(log - subBits)) - 1
  }

  /// The smallest value that falls in bucket `index`.
  public static func lowerBound(_ index: Int) -> UInt64 {
    index == 0 ? 0 : upperBound(index - 1) + 1
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
