/// Percent-escaping (`%XX`, uppercase digits), the form untrusted payload bytes take in the
/// allow-list file, on the console and in command output. The one encoder and decoder;
/// `PayloadEscaping` and the console's argument parser are built on it. Allocation-free.
public enum PercentCodec {
  /// Why escaped text did not decode. Positions are byte offsets into the text.
  public enum DecodeError: Error, Equatable, Sendable {
    /// A `%` without two characters after it.
    case truncatedEscape(at: Int)
    /// A `%` followed by something other than two hex digits (at: the `%`).
    case badEscape(at: Int)
    /// Strict decoding: a byte that must have been written as `%XX`.
    case unescapedByte(UInt8, at: Int)
    /// `out` is full before the text ends.
    case outputTooSmall
  }

  /// Bytes written as `%XX`: everything outside printable ASCII, and space, `%` and `#`.
  @inline(__always) public static func needsEscape(_ b: UInt8) -> Bool {
    b <= 0x20 || b >= 0x7F || b == UInt8(ascii: "%") || b == UInt8(ascii: "#")
  }

  /// Escapes `bytes` into `out`, stopping before an escape would not fit. Returns
  /// (bytes written, input bytes consumed).
  @discardableResult
  public static func encode(
    _ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
  )
    -> (written: Int, consumed: Int)
  {
    var w = 0
    var consumed = 0
    for b in bytes {
      if needsEscape(b) {
        guard w + 3 <= out.count else { break }
        out[w] = UInt8(ascii: "%")
        out[w + 1] = Hex.digit(b >> 4, uppercase: true)
        out[w + 2] = Hex.digit(b, uppercase: true)
        w += 3
      } else {
        guard w + 1 <= out.count else { break }
        out[w] = b
        w += 1
      }
      consumed += 1
    }
    return (w, consumed)
  }

  /// Reverses `encode` into `out`; returns the bytes written. `strict` also rejects bytes that
  /// `encode` would have escaped (the allow-list file); otherwise they pass through (the console).
  public static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, strict: Bool) throws(DecodeError) -> Int {
    var n = 0
    var i = 0
    while i < text.count {
      guard n < out.count else { throw .outputTooSmall }
      let b = text[i]
      if b == UInt8(ascii: "%") {
        guard i + 2 < text.count else { throw .truncatedEscape(at: i) }
        guard let high = Hex.value(of: text[i + 1]), let low = Hex.value(of: text[i + 2]) else { throw .badEscape(at: i) }
        out[n] = high << 4 | low
        i += 3
      } else {
        if strict && needsEscape(b) { throw .unescapedByte(b, at: i) }
        out[n] = b
        i += 1
      }
      n += 1
    }
    return n
  }
}
