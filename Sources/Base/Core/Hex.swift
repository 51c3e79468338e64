/// Hexadecimal: the one codec for digests, payload bytes in JSON and the digits of `%XX`
/// escapes. The buffer forms allocate nothing; `string` (allocates) is for command output.
public enum Hex {
  /// Why hex text did not decode. Positions are byte offsets into the text.
  public enum DecodeError: Error, Equatable, Sendable {
    /// An odd number of digits (the count).
    case oddLength(Int)
    /// A byte that is not 0-9, a-f or A-F.
    case badDigit(at: Int)
    /// `out` holds fewer bytes than the text encodes (how many it needs).
    case outputTooSmall(needed: Int)
  }

  /// The value of one hex digit (either case), nil for anything else.
  @inline(__always) public static func value(of digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit &- UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit &- UInt8(ascii: "a") &+ 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit &- UInt8(ascii: "A") &+ 10
    default: nil
    }
  }

  /// The digit for `nibble` (its low four bits).
  @inline(__always) public static func digit(_ nibble: UInt8, uppercase: Bool = false) -> UInt8 {
    let v = nibble & 0xF
    return v < 10 ? UInt8(ascii: "0") &+ v : (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) &+ v &- 10
  }

  /// Decodes `text` (pairs of digits, either case) into `out`; returns the bytes written.
  public static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
    guard text.count % 2 == 0 else { throw .oddLength(text.count) }
    let n = text.count / 2
    guard n <= out.count else { throw .outputTooSmall(needed: n) }
    for i in 0..<n {
      guard let high = value(of: text[2 * i]) else { throw .badDigit(at: 2 * i) }
      guard let low = value(of: text[2 * i + 1]) else { throw .badDigit(at: 2 * i + 1) }
      out[i] = high << 4 | low
    }
    return n
  }

  /// Encodes as many whole bytes of `bytes` as fit into `out` (two digits each); returns the
  /// digits written.
  @discardableResult
  public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, uppercase: Bool = false) -> Int {
    let n = min(bytes.count, out.count / 2)
    for i in 0..<n {
      out[2 * i] = digit(bytes[i] >> 4, uppercase: uppercase)
      out[2 * i + 1] = digit(bytes[i], uppercase: uppercase)
    }
    return 2 * n
  }

  /// The digits of `bytes` as a String (allocates).
  public static func string(_ bytes: UnsafeRawBufferPointer, uppercase: Bool = false) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { out in
      encode(bytes, into: UnsafeMutableRawBufferPointer(out), uppercase: uppercase)
    }
  }

  public static func string(_ bytes: [UInt8], uppercase: Bool = false) -> String {
    bytes.withUnsafeBytes { string($0, uppercase: uppercase) }
  }

  /// The 64 lowercase digits of a digest, as an allow-list `sha256:` entry and the log hold it.
  public static func string(_ digest: Digest) -> String {
    String(unsafeUninitializedCapacity: 64) { out in
      for i in 0..<32 {
        out[2 * i] = digit(digest.byte(i) >> 4)
        out[2 * i + 1] = digit(digest.byte(i))
      }
      return 64
    }
  }
}
