import CSheet
import Glibc
import ScanCore
import ScanPlatform
import ScanReaderLinux

/// A pass as a printable sheet: one A4 portrait page with the code large (at least 60 mm with
/// its quiet zone), then who it is for, when it is valid and how to use it, drawn by cairo
/// (CSheet) as a PDF (vector: the code stays sharp at any printer's resolution) or a PNG (150
/// dpi, 1240 × 1754 pixels, whole pixels per module). The QR symbol is libqrencode's, the same
/// encoding `renderQRCode(text:)` gives `credential issue --png`.
///
/// The sheet holds the pass: anyone with a copy (the file, a print, a photo of either) can
/// present it. It is written mode 0644 because it is made to be printed and handed over; keep
/// it out of shared folders and delete it once printed.
public struct PassSheet: Sendable {
  /// What the code holds (the pass's text, `SG1:…`).
  public var text: String
  /// The heading, e.g. "Guest pass".
  public var title: String
  /// Who it is for.
  public var holder: String
  /// Validity, uses, zones: one string each.
  public var lines: [String]
  /// How to use it, shown as a bulleted list.
  public var instructions: [String]

  /// The most the code may hold, in bytes (well inside QR version 40 at level M).
  public static let textBytesMax = 2_000
  /// The most any other string may take, in bytes.
  public static let stringBytesMax = 200
  /// The most lines, and the most instructions.
  public static let linesMax = 12
  /// What the footer says.
  static let footer = "ScanGate"

  public init(text: String, title: String, holder: String, lines: [String], instructions: [String]) {
    self.text = text
    self.title = title
    self.holder = holder
    self.lines = lines
    self.instructions = instructions
  }

  /// The page's kind, by the path's extension (.pdf or .png, either case); nil for anything else.
  public static func format(of path: String) -> Int32? {
    let lower = path.lowercased()
    if lower.hasSuffix(".pdf") { return Int32(SG_SHEET_PDF) }
    if lower.hasSuffix(".png") { return Int32(SG_SHEET_PNG) }
    return nil
  }

  /// Checks the bounds, draws the page in memory and writes it to `path` through the durable
  /// write (mode 0644): PDF or PNG by the extension. Anything refused writes nothing.
  public func write(to path: String) throws(FileError) {
    try writeFileAtomically(path, try render(path: path), mode: 0o644)
  }

  /// The encoded page `write(to:)` would write to `path` (its extension picks the kind).
  public func render(path: String) throws(FileError) -> [UInt8] {
    func refuse(_ reason: String) -> FileError { FileError(path: path, reason: reason) }
    guard let format = Self.format(of: path) else { throw refuse("a sheet is written as .pdf or .png") }
    try check(refuse)
    guard let qr = renderQRCode(text: text, scale: 1, margin: 0) else { throw refuse("the pass does not fit a QR code") }
    var size = 0
    var why: Int32 = 0
    var error = [CChar](repeating: 0, count: 128)
    let page = withCStrings(lines) { lines in
      withCStrings(instructions) { instructions in
        qr.image.pixels.withUnsafeBufferPointer { modules in
          sg_sheet_render(
            format, modules.baseAddress, Int32(qr.modules), title, holder, lines.baseAddress, Int32(lines.count),
            instructions.baseAddress, Int32(instructions.count), Self.footer, &size, &why, &error, error.count)
        }
      }
    }
    guard let page else {
      let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      throw refuse(Int(why) == SG_SHEET_NO_ROOM ? "the text does not fit one page" : "cannot draw the sheet: \(message)")
    }
    defer { sg_sheet_free(page) }
    return Array(UnsafeBufferPointer(start: page, count: size))
  }

  /// The bounds: every string within its size and free of control characters (a C string ends at
  /// NUL; a line break would be drawn as a box), at most `linesMax` lines and instructions.
  func check(_ refuse: (String) -> FileError) throws(FileError) {
    guard !text.isEmpty, text.utf8.count <= Self.textBytesMax else {
      throw refuse("the code's text must be 1 to \(Self.textBytesMax) bytes, not \(text.utf8.count)")
    }
    guard lines.count <= Self.linesMax, instructions.count <= Self.linesMax else {
      throw refuse("at most \(Self.linesMax) lines and \(Self.linesMax) instructions")
    }
    guard Self.plain(text) else { throw refuse("the code's text has a control character") }
    let strings = [("title", title), ("holder", holder)] + lines.map { ("line", $0) } + instructions.map { ("instruction", $0) }
    for (what, s) in strings {
      guard s.utf8.count <= Self.stringBytesMax else { throw refuse("a \(what) longer than \(Self.stringBytesMax) bytes") }
      guard Self.plain(s) else { throw refuse("a \(what) with a control character") }
    }
  }

  /// No C0 or C1 control characters, no DEL.
  static func plain(_ s: String) -> Bool {
    s.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) }
  }
}

/// `strings` as a C array of C strings for the length of `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
  let copies = strings.map { strdup($0) }
  defer { copies.forEach { free($0) } }
  return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer(body)
}
