import ScanBase

/// People inside: entries and exits counted since the count began, and the running count.
public struct Occupancy: Equatable, Sendable {
  public private(set) var entries: UInt64 = 0
  public private(set) var exits: UInt64 = 0
  /// Entries less exits since the last reset, never below 0.
  public private(set) var count: Int64 = 0
  /// Exits that found the count at 0 (someone came in unseen: a forced rotation, free passage).
  public private(set) var underflows: UInt64 = 0
  public init() {}

  public mutating func passage(_ direction: PassageDirection) {
    switch direction {
    case .entry:
      entries &+= 1
      count &+= 1
    case .exit:
      exits &+= 1
      if count > 0 { count -= 1 } else { underflows &+= 1 }
    }
  }

  /// Sets the count to 0 (the totals stay); returns the count before.
  public mutating func reset() -> Int64 {
    defer { count = 0 }
    return count
  }

  /// The durable form: byte 0 the version (1), bytes 1–7 zero, then entries, exits, count,
  /// underflows, 8 bytes each, little-endian.
  public static let encodedBytes = 40
  static let version: UInt8 = 1

  public func encode(into buffer: UnsafeMutableRawBufferPointer) {
    precondition(buffer.count >= Self.encodedBytes)
    for i in 0..<8 { buffer[i] = 0 }
    buffer[0] = Self.version
    let fields: InlineArray<4, UInt64> = [entries, exits, UInt64(bitPattern: count), underflows]
    for f in 0..<4 {
      for i in 0..<8 { buffer[8 + 8 * f + i] = UInt8(truncatingIfNeeded: fields[f] >> UInt64(8 * i)) }
    }
  }

  /// nil for bytes that are not an occupancy (length, version, padding, a negative count).
  public init?(decoding bytes: UnsafeRawBufferPointer) {
    guard bytes.count == Self.encodedBytes, bytes[0] == Self.version else { return nil }
    for i in 1..<8 where bytes[i] != 0 { return nil }
    func field(_ f: Int) -> UInt64 {
      var v: UInt64 = 0
      for i in 0..<8 { v |= UInt64(bytes[8 + 8 * f + i]) << UInt64(8 * i) }
      return v
    }
    let count = Int64(bitPattern: field(2))
    guard count >= 0 else { return nil }
    entries = field(0)
    exits = field(1)
    self.count = count
    underflows = field(3)
  }
}
