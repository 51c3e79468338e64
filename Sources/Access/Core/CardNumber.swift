/// A card number a panel understands: the bit format, the facility code and the card number,
/// turned into the bits a card reader sends (Wiegand) or reports (OSDP's RAW reply).
///
/// Formats (docs/panels.md):
/// - `h10301`: 26 bits, `E FFFFFFFF CCCCCCCCCCCCCCCC O`; facility 0–255, card 0–65,535; the even
///   parity bit covers bits 2–13, the odd parity bit bits 14–25 (1-based, first sent = 1).
/// - `h10306`: 34 bits, 16-bit facility, 16-bit card; even over bits 2–17, odd over 18–33.
/// - `h10304`: 37 bits, 16-bit facility 0–65,535, 19-bit card 0–524,287; even over bits 2–19, odd
///   over bits 19–36 (bit 19 is in both halves, as HID defines it).
/// - `raw`: N bits (1–64) sent as given, no parity, no facility code.
public struct CardNumber: Equatable, Sendable {
  /// The bit layout.
  public enum Format: UInt8, Sendable, Equatable, CaseIterable {
    case h10301 = 1
    case h10306 = 2
    case h10304 = 3
    case raw = 4

    /// `name` without a String (the `panel-card` event's payload, recorded on the loop).
    public var staticName: StaticString {
      switch self {
      case .h10301: "26"
      case .h10306: "34"
      case .h10304: "37"
      case .raw: "raw"
      }
    }

    /// The name in the allow-list's `card=` field and on the console.
    public var name: String { String(describing: staticName) }

    /// Bits on the wire (nil for raw: the number says).
    var fixedBitCount: Int? {
      switch self {
      case .h10301: 26
      case .h10306: 34
      case .h10304: 37
      case .raw: nil
      }
    }
    var facilityBits: Int {
      switch self {
      case .h10301: 8
      case .h10306, .h10304: 16
      case .raw: 0
      }
    }
    var cardBits: Int {
      switch self {
      case .h10301, .h10306: 16
      case .h10304: 19
      case .raw: 0
      }
    }
  }

  /// Why a card number was refused: the format's rule, never the number (a card number is a
  /// credential, and the message reaches STATUS, the journal and the fleet).
  public struct Invalid: Error, Equatable, Sendable {
    public var message: String
    init(_ message: String) { self.message = message }
  }

  public let format: Format
  public let facility: UInt32
  /// The card (cardholder) number; for `raw`, the whole value.
  public let number: UInt64
  /// Bits sent (26, 34, 37, or the raw length).
  public let bitCount: Int

  /// The most bits a raw card carries.
  public static let rawBitsMax = 64

  /// A formatted card; throws when the facility or number do not fit the format.
  public init(format: Format, facility: UInt32, number: UInt64) throws(Invalid) {
    guard let bits = format.fixedBitCount else { throw Invalid("a raw card needs a bit count") }
    guard UInt64(facility) < (UInt64(1) << format.facilityBits) else {
      throw Invalid("the facility code does not fit \(format.facilityBits) bits (format \(format.name))")
    }
    guard number < (UInt64(1) << format.cardBits) else {
      throw Invalid("the card number does not fit \(format.cardBits) bits (format \(format.name))")
    }
    self.format = format
    self.facility = facility
    self.number = number
    self.bitCount = bits
  }

  /// A raw card: `bitCount` bits of `value`, most significant first, no parity.
  public init(rawBitCount bitCount: Int, value: UInt64) throws(Invalid) {
    guard bitCount >= 1 && bitCount <= Self.rawBitsMax else { throw Invalid("the raw bit count is not 1–\(Self.rawBitsMax)") }
    guard bitCount == 64 || value < (UInt64(1) << bitCount) else { throw Invalid("the raw value does not fit its bit count") }
    format = .raw
    facility = 0
    number = value
    self.bitCount = bitCount
  }

  /// The bits in send order: bit `bitCount - 1` of the result is the first bit sent.
  public var bits: UInt64 {
    if format == .raw { return number }
    let data = (UInt64(facility) << format.cardBits) | number  // without parity
    let dataBits = format.facilityBits + format.cardBits
    // Parity masks over the data bits (data bit 0 = the first data bit sent).
    let (evenCount, oddStart): (Int, Int) =
      switch format {
      case .h10301: (12, 12)
      case .h10306: (16, 16)
      case .h10304: (18, 17)
      case .raw: (0, 0)
      }
    var ones = 0
    for i in 0..<evenCount where (data >> (dataBits - 1 - i)) & 1 == 1 { ones += 1 }
    let even: UInt64 = ones & 1 == 1 ? 1 : 0
    ones = 0
    for i in oddStart..<dataBits where (data >> (dataBits - 1 - i)) & 1 == 1 { ones += 1 }
    let odd: UInt64 = ones & 1 == 1 ? 0 : 1
    return (even << (dataBits + 1)) | (data << 1) | odd
  }

  /// Writes one byte per bit (0 or 1), first sent first; returns the count (`bitCount`), or 0
  /// when `out` is too small.
  public func encodeBits(into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
    guard out.count >= bitCount else { return 0 }
    let value = bits
    for i in 0..<bitCount { out[i] = UInt8((value >> (bitCount - 1 - i)) & 1) }
    return bitCount
  }

  /// Writes the bits packed most significant first, the first bit sent in bit 7 of byte 0, the
  /// last byte padded with zeros (OSDP's RAW card data); returns the byte count, or 0 when `out`
  /// is too small.
  public func encodePacked(into out: UnsafeMutableRawBufferPointer) -> Int {
    let byteCount = (bitCount + 7) / 8
    guard out.count >= byteCount else { return 0 }
    let value = bits
    for b in 0..<byteCount { out[b] = 0 }
    for i in 0..<bitCount where (value >> (bitCount - 1 - i)) & 1 == 1 { out[i / 8] |= UInt8(0x80) >> UInt8(i % 8) }
    return byteCount
  }

  /// Parses the allow-list's `card=` value: `26:<facility>:<card>`, `34:<facility>:<card>`,
  /// `37:<facility>:<card>` (decimal), or `raw:<bits>:<hex value>`.
  public init(parsing text: some StringProtocol) throws(Invalid) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 3 else { throw Invalid("card wants <format>:<facility>:<number> or raw:<bits>:<hex>") }
    if parts[0] == "raw" {
      guard let n = Int(parts[1]) else { throw Invalid("the raw bit count is not a number") }
      guard !parts[2].isEmpty, parts[2].utf8.count <= 16, let v = UInt64(parts[2], radix: 16) else {
        throw Invalid("the raw value is not 1–16 hex digits")
      }
      try self.init(rawBitCount: n, value: v)
      return
    }
    let format: Format
    switch parts[0] {
    case "26": format = .h10301
    case "34": format = .h10306
    case "37": format = .h10304
    default: throw Invalid("unknown card format (known: 26, 34, 37, raw)")
    }
    guard parts[1].utf8.count <= 10, let f = UInt32(parts[1]) else { throw Invalid("the facility code is not a number") }
    guard parts[2].utf8.count <= 20, let c = UInt64(parts[2]) else { throw Invalid("the card number is not a number (or longer than 20 digits)") }
    try self.init(format: format, facility: f, number: c)
  }

  /// The `card=` text for this card (the inverse of `init(parsing:)`).
  public var text: String {
    format == .raw ? "raw:\(bitCount):\(String(number, radix: 16))" : "\(format.name):\(facility):\(number)"
  }
}
