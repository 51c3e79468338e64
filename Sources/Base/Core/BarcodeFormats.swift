/// A set of barcode symbologies. The raw values are the decoder interface's SG_FORMAT_* bits.
public struct BarcodeFormats: OptionSet, Hashable, Sendable {
  public var rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let qrCode = BarcodeFormats(rawValue: 1 << 0)
  public static let microQRCode = BarcodeFormats(rawValue: 1 << 1)
  public static let dataMatrix = BarcodeFormats(rawValue: 1 << 2)
  public static let aztec = BarcodeFormats(rawValue: 1 << 3)
  public static let pdf417 = BarcodeFormats(rawValue: 1 << 4)
  public static let ean8 = BarcodeFormats(rawValue: 1 << 5)
  public static let ean13 = BarcodeFormats(rawValue: 1 << 6)
  public static let upcA = BarcodeFormats(rawValue: 1 << 7)
  public static let upcE = BarcodeFormats(rawValue: 1 << 8)
  public static let code39 = BarcodeFormats(rawValue: 1 << 9)
  public static let code93 = BarcodeFormats(rawValue: 1 << 10)
  public static let code128 = BarcodeFormats(rawValue: 1 << 11)
  public static let codabar = BarcodeFormats(rawValue: 1 << 12)
  public static let itf = BarcodeFormats(rawValue: 1 << 13)

  /// The 13 formats of ML Kit's barcode scanner, plus Micro QR.
  public static let all: BarcodeFormats = [
    .qrCode, .microQRCode, .dataMatrix, .aztec, .pdf417, .ean8, .ean13, .upcA, .upcE, .code39,
    .code93, .code128, .codabar, .itf,
  ]
  /// Two-dimensional symbologies.
  public static let matrix: BarcodeFormats = [.qrCode, .microQRCode, .dataMatrix, .aztec, .pdf417]

  /// Names used in config.toml, on the command line and in output, with their formats.
  public static let names: [(name: String, format: BarcodeFormats)] = [
    ("qr", .qrCode), ("microqr", .microQRCode), ("datamatrix", .dataMatrix), ("aztec", .aztec),
    ("pdf417", .pdf417), ("ean8", .ean8), ("ean13", .ean13), ("upca", .upcA), ("upce", .upcE),
    ("code39", .code39), ("code93", .code93), ("code128", .code128), ("codabar", .codabar),
    ("itf", .itf),
  ]

  /// The name of a single format ("qr", "ean13", ...).
  public var name: String {
    for entry in Self.names where entry.format == self { return entry.name }
    return "unknown"
  }

  /// Parses "qr,ean13", "all" or "matrix". Throws naming the first unknown word.
  public static func parse(_ list: String) throws(ParseError) -> BarcodeFormats {
    var formats: BarcodeFormats = []
    for word in list.split(separator: ",", omittingEmptySubsequences: true) {
      let w = word.lowercased().filter { $0 != " " && $0 != "-" && $0 != "_" }
      if w == "all" { formats.formUnion(.all); continue }
      if w == "matrix" { formats.formUnion(.matrix); continue }
      guard let entry = names.first(where: { $0.name == w || ($0.name == "qr" && w == "qrcode") })
      else {
        throw ParseError(
          message: "unknown barcode format '\(word)' (known: all, matrix, "
            + names.map(\.name).joined(separator: ", ") + ")")
      }
      formats.formUnion(entry.format)
    }
    if formats.isEmpty { throw ParseError(message: "no barcode format given") }
    return formats
  }

  /// Comma-separated names of the formats in this set.
  public var listDescription: String {
    Self.names.filter { contains($0.format) }.map(\.name).joined(separator: ",")
  }
}

/// A parse failure with a message a person can act on.
public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
  public var message: String
  public init(message: String) { self.message = message }
  public var description: String { message }
}
