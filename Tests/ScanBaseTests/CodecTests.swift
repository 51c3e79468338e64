import ScanBase
import Testing

/// Decodes `text` with `body` into a buffer of `capacity` bytes: the bytes, or the error.
private func decoding<E: Error>(
  _ text: String, capacity: Int = 64,
  _ body: (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) throws(E) -> Int
) -> Result<[UInt8], E> {
  let input = Array(text.utf8)
  var out = [UInt8](repeating: 0xEE, count: capacity)
  let result = input.withUnsafeBytes { i in
    out.withUnsafeMutableBytes { o in Result { () throws(E) in try body(i, o) } }
  }
  return result.map { Array(out[0..<$0]) }
}

@Suite struct HexTests {
  @Test("digits decode in either case; every byte value round-trips")
  func roundTrip() throws {
    #expect(try decoding("00ff7F0aA0") { (i, o) throws(Hex.DecodeError) in try Hex.decode(i, into: o) }.get() == [0x00, 0xFF, 0x7F, 0x0A, 0xA0])
    let all = (0...255).map { UInt8($0) }
    let text = Hex.string(all)
    #expect(text.hasPrefix("000102") && text.hasSuffix("fdfeff") && text.utf8.count == 512)
    #expect(try decoding(text, capacity: 256) { (i, o) throws(Hex.DecodeError) in try Hex.decode(i, into: o) }.get() == all)
    #expect(Hex.string(all, uppercase: true).hasSuffix("FDFEFF"))
  }

  @Test("invalid input: odd length, a bad digit (and where), too small an output")
  func invalid() {
    func decode(_ text: String, capacity: Int = 64) -> Result<[UInt8], Hex.DecodeError> {
      decoding(text, capacity: capacity) { (i, o) throws(Hex.DecodeError) in try Hex.decode(i, into: o) }
    }
    #expect(decode("abc") == .failure(.oddLength(3)))
    #expect(decode("a") == .failure(.oddLength(1)))
    #expect(decode("zz") == .failure(.badDigit(at: 0)))
    #expect(decode("0g") == .failure(.badDigit(at: 1)))
    #expect(decode("00 1") == .failure(.badDigit(at: 2)))
    #expect(decode("0x00") == .failure(.badDigit(at: 1)))
    #expect(decode("aabbcc", capacity: 2) == .failure(.outputTooSmall(needed: 3)))
    #expect(decode("") == .success([]))
  }

  @Test("digit values and digits")
  func digits() {
    #expect(Hex.value(of: UInt8(ascii: "0")) == 0)
    #expect(Hex.value(of: UInt8(ascii: "9")) == 9)
    #expect(Hex.value(of: UInt8(ascii: "a")) == 10 && Hex.value(of: UInt8(ascii: "F")) == 15)
    for b in [UInt8(ascii: "g"), UInt8(ascii: "G"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "`"), 0, 0xFF] {
      #expect(Hex.value(of: b) == nil, "\(b)")
    }
    #expect(Hex.digit(0) == UInt8(ascii: "0") && Hex.digit(11) == UInt8(ascii: "b") && Hex.digit(11, uppercase: true) == UInt8(ascii: "B"))
    #expect(Hex.digit(0x3F) == UInt8(ascii: "f"))  // the low nibble only
  }

  @Test("the bounded encoder writes whole bytes only")
  func boundedEncode() {
    let bytes: [UInt8] = [0xDE, 0xAD, 0xBE]
    var out = [UInt8](repeating: 0, count: 5)
    let n = bytes.withUnsafeBytes { b in out.withUnsafeMutableBytes { Hex.encode(b, into: $0) } }
    #expect(n == 4)
    #expect(Array(out[0..<4]) == Array("dead".utf8))
  }

  @Test("a digest's 64 digits; ByteWriter writes the same digits")
  func digest() {
    let bytes = (0..<32).map { UInt8($0 * 8) }
    let d = bytes.withUnsafeBytes { Digest(bytes: $0) }
    let expected = "0008101820283038404850586068707880889098a0a8b0b8c0c8d0d8e0e8f0f8"
    #expect(Hex.string(d) == expected)
    let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 128, alignment: 1)
    defer { storage.deallocate() }
    var w = ByteWriter(storage)
    w.writeHex(d, bytes: 4)
    w.write(" ")
    bytes.withUnsafeBytes { w.writeHex(UnsafeRawBufferPointer(rebasing: $0[0..<2]), uppercase: true) }
    #expect(String(decoding: w.written, as: UTF8.self) == "00081018 0008")
  }
}

@Suite struct PercentCodecTests {
  func decode(_ text: String, strict: Bool, capacity: Int = 64) -> Result<[UInt8], PercentCodec.DecodeError> {
    decoding(text, capacity: capacity) { (i, o) throws(PercentCodec.DecodeError) in try PercentCodec.decode(i, into: o, strict: strict) }
  }

  @Test("escapes decode in either case of hex digit")
  func decodes() {
    #expect(decode("a%20b%25c%23d", strict: true) == .success(Array("a b%c#d".utf8)))
    #expect(decode("%0d%0A%c3%A9", strict: true) == .success([0x0D, 0x0A, 0xC3, 0xA9]))
    #expect(decode("", strict: true) == .success([]))
  }

  @Test("invalid escapes: % at the end, one digit, %zz, a half-hex pair", arguments: [false, true])
  func invalid(strict: Bool) {
    #expect(decode("%", strict: strict) == .failure(.truncatedEscape(at: 0)))
    #expect(decode("abc%", strict: strict) == .failure(.truncatedEscape(at: 3)))
    #expect(decode("ab%4", strict: strict) == .failure(.truncatedEscape(at: 2)))
    #expect(decode("%zz", strict: strict) == .failure(.badEscape(at: 0)))
    #expect(decode("x%4g", strict: strict) == .failure(.badEscape(at: 1)))
    #expect(decode("%g4", strict: strict) == .failure(.badEscape(at: 0)))
  }

  @Test("strict rejects bytes that must be escaped; lenient passes them through")
  func strictness() {
    #expect(decode("a b", strict: true) == .failure(.unescapedByte(0x20, at: 1)))
    #expect(decode("a#", strict: true) == .failure(.unescapedByte(UInt8(ascii: "#"), at: 1)))
    #expect(decode("\u{1}", strict: true) == .failure(.unescapedByte(1, at: 0)))
    #expect(decode("a b#\u{1}", strict: false) == .success(Array("a b#\u{1}".utf8)))
  }

  @Test("the output bound is kept")
  func outputBound() {
    #expect(decode("abcd", strict: false, capacity: 3) == .failure(.outputTooSmall))
    #expect(decode("abc", strict: false, capacity: 3) == .success(Array("abc".utf8)))
    #expect(decode("%41%42%43", strict: false, capacity: 3) == .success(Array("ABC".utf8)))
  }

  @Test("encode then decode gives every byte value back; encoded text is printable ASCII with no space, % only in escapes")
  func roundTrip() {
    let all = (0...255).map { UInt8($0) }
    var out = [UInt8](repeating: 0, count: 768)
    let (written, consumed) = all.withUnsafeBytes { b in out.withUnsafeMutableBytes { PercentCodec.encode(b, into: $0) } }
    #expect(consumed == 256)
    let text = String(decoding: out[0..<written], as: UTF8.self)
    // 0x21...0x7E less %, # (2) are literal: 92 bytes; the other 164 take 3 each.
    #expect(written == 92 + 164 * 3)
    #expect(text.hasPrefix("%00%01") && text.contains("%20!\"%23$%25&"))
    #expect(decode(text, strict: true, capacity: 256) == .success(all))
  }
}
