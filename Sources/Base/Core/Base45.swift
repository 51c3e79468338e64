/// Base45 (RFC 9285): bytes as text in the QR alphanumeric alphabet, so a QR code carrying it
/// uses the compact alphanumeric mode. No Debian library provides it; the codec is two loops.
public enum Base45 {
  /// The 45 characters, in value order.
  public static let alphabet: [UInt8] = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)

  /// The value of an alphabet character, or nil.
  @inline(__always)
  public static func value(_ c: UInt8) -> UInt32? {
    switch c {
    case 0x30...0x39: UInt32(c - 0x30)
    case 0x41...0x5A: UInt32(c - 0x41 + 10)
    case 0x20: 36
    case 0x24: 37
    case 0x25: 38
    case 0x2A: 39
    case 0x2B: 40
    case 0x2D: 41
    case 0x2E: 42
    case 0x2F: 43
    case 0x3A: 44
    default: nil
    }
  }

  /// Decoded size of `count` characters, or nil when no input of that length is valid.
  public static func decodedCount(_ count: Int) -> Int? {
    count % 3 == 1 ? nil : count / 3 * 2 + (count % 3 == 2 ? 1 : 0)
  }

  /// Decodes `text` into `out`; returns the byte count, or nil when the text is not base45
  /// (a character outside the alphabet, a length of 3k+1, a group over its range) or does not
  /// fit. Allocates nothing.
  public static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
    guard let n = decodedCount(text.count), n <= out.count else { return nil }
    var i = 0
    var o = 0
    while i + 3 <= text.count {
      guard let c = value(text[i]), let d = value(text[i + 1]), let e = value(text[i + 2]) else { return nil }
      let v = c + d * 45 + e * 45 * 45
      guard v <= 0xFFFF else { return nil }
      out[o] = UInt8(v >> 8)
      out[o + 1] = UInt8(v & 0xFF)
      i += 3
      o += 2
    }
    if i + 2 == text.count {
      guard let c = value(text[i]), let d = value(text[i + 1]) else { return nil }
      let v = c + d * 45
      guard v <= 0xFF else { return nil }
      out[o] = UInt8(v)
      o += 1
    }
    return o
  }

  /// Encodes `bytes` (tools, not the hot path).
  public static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count / 2 * 3 + 2)
    var it = bytes.makeIterator()
    while let a = it.next() {
      if let b = it.next() {
        var v = Int(a) << 8 | Int(b)
        for _ in 0..<3 {
          out.append(alphabet[v % 45])
          v /= 45
        }
      } else {
        let v = Int(a)
        out.append(alphabet[v % 45])
        out.append(alphabet[v / 45])
      }
    }
    return out
  }
}
