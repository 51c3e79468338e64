import ScanBase

/// One PIN being typed after a pass, on the monotonic clock: digits collected in fixed storage,
/// `enter` submits, `clear` starts again, and no key for the entry timeout ends it. The digits
/// are wiped when the entry ends, whichever way.
public struct PinEntry: Sendable {
  public static let digitsMax = 12
  public static let digitsMin = 4

  public enum Outcome: Equatable, Sendable {
    /// `enter` with 4–12 digits: check them (`withDigits`), then `end()`.
    case submitted
    /// `enter` with fewer than 4 digits, or a 13th digit: refused as a wrong PIN.
    case malformed
    /// No key for the entry timeout.
    case timedOut
  }

  public private(set) var active = false
  public private(set) var deadline = Instant(nanoseconds: 0)
  private var digits = InlineArray<12, UInt8>(repeating: 0)
  public private(set) var count = 0
  private var overflowed = false
  public let timeoutMilliseconds: Int

  public init(timeoutMilliseconds: Int) { self.timeoutMilliseconds = timeoutMilliseconds }

  /// Starts an entry (a new pass replaces an unfinished one).
  public mutating func begin(at now: Instant) {
    end()
    active = true
    deadline = now.adding(milliseconds: timeoutMilliseconds)
  }

  /// A key pressed at `now`: nil while the entry goes on.
  public mutating func press(_ key: KeypadKey, at now: Instant) -> Outcome? {
    guard active else { return nil }
    if let out = expire(at: now) { return out }
    deadline = now.adding(milliseconds: timeoutMilliseconds)
    switch key {
    case .digit(let d):
      guard count < Self.digitsMax else {
        overflowed = true
        return nil
      }
      digits[count] = 0x30 + d
      count += 1
      return nil
    case .clear:
      wipe()
      return nil
    case .enter:
      return overflowed || count < Self.digitsMin ? .malformed : .submitted
    }
  }

  /// `.timedOut` once the deadline has passed while an entry is active.
  public mutating func expire(at now: Instant) -> Outcome? {
    guard active, now >= deadline else { return nil }
    return .timedOut
  }

  /// The digits typed, as ASCII.
  public func withDigits<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: digits) { body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
  }

  /// Ends the entry and wipes what was typed.
  public mutating func end() {
    wipe()
    active = false
  }

  private mutating func wipe() {
    for i in 0..<Self.digitsMax { digits[i] = 0 }
    count = 0
    overflowed = false
  }
}
