/// Percent-escaping of untrusted payload bytes: every byte outside printable ASCII, and space,
/// `%` and `#`, becomes `%XX`. The same form is used in the allow-list file, on the console and
/// in command output, so a scanned code can never put a control character on a terminal.
/// The codec itself is `PercentCodec`; these are its payload-facing forms.
public enum PayloadEscaping {
  @inline(__always) static func needsEscape(_ b: UInt8) -> Bool { PercentCodec.needsEscape(b) }

  /// Escapes `bytes` into `out`; stops before overflowing. Returns (bytes written, input consumed).
  @discardableResult
  public static func escape(
    _ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
  )
    -> (written: Int, consumed: Int)
  {
    PercentCodec.encode(bytes, into: out)
  }

  /// The escaped form as a String (allocates: for command-line output, not the frame path).
  public static func escaped(_ bytes: UnsafeRawBufferPointer) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 3) { out in
      PercentCodec.encode(bytes, into: UnsafeMutableRawBufferPointer(out)).written
    }
  }

  public static func escaped(_ bytes: [UInt8]) -> String {
    bytes.withUnsafeBytes { escaped($0) }
  }

  /// Reverses `escape`. Throws on a bad escape, or on a byte that should have been escaped.
  public static func unescape(_ text: Substring.UTF8View) throws(ParseError) -> [UInt8] {
    let result =
      text.withContiguousStorageIfAvailable { decode(UnsafeRawBufferPointer($0)) }
      ?? Array(text).withUnsafeBytes { decode($0) }
    return try result.get()
  }

  private static func decode(_ text: UnsafeRawBufferPointer) -> Result<[UInt8], ParseError> {
    var out = [UInt8](repeating: 0, count: text.count)
    let decoded = out.withUnsafeMutableBytes { o in
      Result { () throws(PercentCodec.DecodeError) in try PercentCodec.decode(text, into: o, strict: true) }
    }
    switch decoded {
    case .success(let n):
      out.removeLast(out.count - n)
      return .success(out)
    case .failure(.unescapedByte(let b, _)):
      return .failure(ParseError(message: "byte 0x\(String(b, radix: 16)) must be written as a %XX escape"))
    case .failure(.truncatedEscape), .failure(.badEscape), .failure(.outputTooSmall):
      return .failure(ParseError(message: "bad percent escape (want %XX with two hex digits)"))
    }
  }
}
