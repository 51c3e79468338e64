/// Appends text and numbers to a fixed byte buffer without allocating: console replies, event
/// lines and log text are built with it. Writing past the end sets `overflowed` and stops.
public struct ByteWriter: ~Copyable {
  public let buffer: UnsafeMutableRawBufferPointer
  public private(set) var count = 0
  public private(set) var overflowed = false

  public init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

  public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<count]) }
  public var remaining: Int { buffer.count - count }

  @inline(__always) public mutating func byte(_ b: UInt8) {
    guard count < buffer.count else { overflowed = true; return }
    buffer[count] = b
    count += 1
  }

  public mutating func write(_ text: StaticString) {
    text.withUTF8Buffer { for b in $0 { byte(b) } }
  }

  /// Writes a String's UTF-8 bytes (no allocation for native strings).
  public mutating func write(_ text: String) {
    for b in text.utf8 { byte(b) }
  }

  public mutating func write(bytes: UnsafeRawBufferPointer) {
    for b in bytes { byte(b) }
  }

  /// Writes `bytes` percent-escaped (PayloadEscaping): safe on any terminal.
  public mutating func writeEscaped(_ bytes: UnsafeRawBufferPointer) {
    let room = UnsafeMutableRawBufferPointer(rebasing: buffer[count...])
    let (written, consumed) = PayloadEscaping.escape(bytes, into: room)
    count += written
    if consumed < bytes.count { overflowed = true }
  }

  /// Text made by the reader with a part from outside (an operator command and who gave it): as
  /// it reads, spaces kept; a control byte, a byte outside ASCII and `%` become `%XX`, so it
  /// can never put a control character on a terminal, and shows escaped once.
  public mutating func writeText(_ bytes: UnsafeRawBufferPointer) {
    for b in bytes {
      if b < 0x20 || b >= 0x7F || b == UInt8(ascii: "%") { writePercentEscaped(b) } else { byte(b) }
      if overflowed { return }
    }
  }

  public mutating func write<T: BinaryInteger>(_ value: T) {
    if value < 0 {
      byte(UInt8(ascii: "-"))
      write(UInt64(truncatingIfNeeded: -Int64(value)))
      return
    }
    var v = UInt64(value)
    var digits: InlineArray<20, UInt8> = .init(repeating: 0)
    var n = 0
    repeat {
      digits[n] = UInt8(48 + v % 10)
      v /= 10
      n += 1
    } while v > 0
    while n > 0 {
      n -= 1
      byte(digits[n])
    }
  }

  /// `value` / 10^`decimals` with exactly `decimals` decimals (e.g. µs as ms with 2 decimals).
  public mutating func writeFixed(_ value: UInt64, scale: UInt64, decimals: Int) {
    write(value / scale)
    guard decimals > 0 else { return }
    byte(UInt8(ascii: "."))
    var fraction = value % scale
    var divisor = scale
    for _ in 0..<decimals {
      divisor /= 10
      guard divisor > 0 else { byte(48); continue }
      byte(UInt8(48 + fraction / divisor))
      fraction %= divisor
    }
  }

  /// Lowercase hex of the first `count` bytes of a digest.
  public mutating func writeHex(_ digest: Digest, bytes count: Int) {
    for i in 0..<count {
      let b = digest.byte(i)
      byte(Hex.digit(b >> 4))
      byte(Hex.digit(b))
    }
  }

  /// Hex of `bytes` (lowercase unless asked), two digits per byte.
  public mutating func writeHex(_ bytes: UnsafeRawBufferPointer, uppercase: Bool = false) {
    for b in bytes {
      byte(Hex.digit(b >> 4, uppercase: uppercase))
      byte(Hex.digit(b, uppercase: uppercase))
    }
  }

  public mutating func newline() { byte(0x0A) }

  /// Writes one byte as `%XX` (uppercase hex), the escape form used everywhere (PayloadEscaping).
  public mutating func writePercentEscaped(_ b: UInt8) {
    byte(UInt8(ascii: "%"))
    byte(b >> 4 < 10 ? 48 + (b >> 4) : 55 + (b >> 4))
    byte(b & 15 < 10 ? 48 + (b & 15) : 55 + (b & 15))
  }

  /// Writes `bytes` as standard base64 (RFC 4648, with padding).
  public mutating func writeBase64(_ bytes: UnsafeRawBufferPointer) {
    let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    let a = alphabet.utf8Start
    var i = 0
    while i + 3 <= bytes.count {
      let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
      byte(a[Int(v >> 18)]); byte(a[Int(v >> 12 & 63)]); byte(a[Int(v >> 6 & 63)]); byte(a[Int(v & 63)])
      i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
      let v = UInt32(bytes[i]) << 16
      byte(a[Int(v >> 18)]); byte(a[Int(v >> 12 & 63)]); byte(61); byte(61)
    } else if rest == 2 {
      let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
      byte(a[Int(v >> 18)]); byte(a[Int(v >> 12 & 63)]); byte(a[Int(v >> 6 & 63)]); byte(61)
    }
  }

  /// Inserts `text` at `index` (an index already written), moving what follows it on; sets
  /// `overflowed` and changes nothing when it does not fit. Returns whether it was inserted.
  @discardableResult
  public mutating func insert(_ text: StaticString, at index: Int) -> Bool {
    let n = text.utf8CodeUnitCount
    guard index >= 0, index <= count else { return false }
    guard n <= remaining else {
      overflowed = true
      return false
    }
    let base = buffer.baseAddress!
    if index < count { (base + index + n).copyMemory(from: base + index, byteCount: count - index) }
    (base + index).copyMemory(from: text.utf8Start, byteCount: n)
    count += n
    return true
  }

  public mutating func reset() {
    count = 0
    overflowed = false
  }

}
