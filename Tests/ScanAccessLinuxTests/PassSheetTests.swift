import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// The printable sheet (PassSheet, CSheet) read back by outside implementations: zbarimg decodes
/// the PNG's code and, after poppler's pdftoppm rasterises the PDF, the PDF's; pdftotext and
/// pdfinfo read the PDF's text and page (zbar-tools and poppler-utils: deploy/setup.sh).
@Suite struct PassSheetTests {
  static let instructions = [
    "Hold the code up to the reader's camera, about 20 cm away",
    "Keep this sheet private: anyone holding the code can use it",
  ]

  /// A real pass's text (about 200 characters of SG1 base45).
  static func passText() throws -> String {
    let site = CredentialSite()
    return try site.issue(site.claims("bob")).staticText
  }

  static func sheet(_ text: String) -> PassSheet {
    PassSheet(
      text: text, title: "Guest pass", holder: "Bob Example", lines: ["Valid from 2026-12-03T09:00:00Z to 2026-12-05T09:00:00Z (UTC)"],
      instructions: instructions)
  }

  /// An outside tool's standard output (stderr dropped: zbarimg prints D-Bus noise there).
  static func tool(_ command: String) throws -> (Int32, String) {
    let name = String(command.prefix { $0 != " " })
    try #require(fileExists("/usr/bin/" + name), "\(name) is missing: run deploy/setup.sh (zbar-tools, poppler-utils)")
    return runCommand(["/bin/sh", "-c", command + " 2>/dev/null"])
  }

  /// What zbarimg reads in an image file: each code's text on a line of its own. A run in which
  /// zbarimg itself failed (exit 1: an error, 2: its image library; a killed or timed-out run) is
  /// made once more: a tool that died on a loaded machine is not a sheet that cannot be read. A
  /// code it did not find (exit 4) is never run again. Its exit status is in the text when it failed.
  static func zbar(_ path: String) throws -> String {
    var (status, text) = try tool("zbarimg --raw -q '\(path)'")
    if status != 0 && status != 4 { (status, text) = try tool("zbarimg --raw -q '\(path)'") }
    return status == 0 ? text : text + "(zbarimg exit \(status))"
  }

  @Test("the PNG: A4 at 150 dpi; zbarimg reads exactly the pass's text; the code is at least 60 mm with a clear quiet zone")
  func png() throws {
    let text = try Self.passText()
    #expect(text.hasPrefix("SG1:") && text.utf8.count > 150)
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    try Self.sheet(text).write(to: dir + "/bob.png")
    #expect(try Self.zbar(dir + "/bob.png") == text + "\n")
    var st = stat()
    #expect(stat(dir + "/bob.png", &st) == 0 && st.st_mode & 0o777 == 0o644)
    #expect(try listDirectory(dir) == ["bob.png"])

    let page = try ImageFileReader().read(dir + "/bob.png")
    #expect(page.width == 1240 && page.height == 1754)
    // The symbol's dark box (the code sits above the text, inside the top 100 mm).
    let top = 590
    var (x0, x1, y0, y1) = (page.width, -1, top, -1)
    for y in 0..<top {
      for x in 0..<page.width where page.pixels[y * page.width + x] < 128 {
        (x0, x1, y0, y1) = (min(x0, x), max(x1, x), min(y0, y), max(y1, y))
      }
    }
    let modules = try #require(renderQRCode(text: text, scale: 1, margin: 0)).modules
    let width = x1 - x0 + 1
    #expect(width % modules == 0, "whole pixels per module: \(width) for \(modules)")
    let module = width / modules
    let withQuietZone = Double(width + 8 * module) / 150 * 25.4
    #expect(withQuietZone >= 60, "the code with its quiet zone is \(withQuietZone) mm")
    // Four light modules on every side of the symbol (the bottom one is below `top`: read it too).
    for y in (y0 - 4 * module)..<(y0 + width + 4 * module) {
      for x in (x0 - 4 * module)..<(x1 + 1 + 4 * module) where y < y0 || y > y0 + width - 1 || x < x0 || x > x1 {
        #expect(page.pixels[y * page.width + x] >= 128, "quiet zone dark at (\(x), \(y))")
        if page.pixels[y * page.width + x] < 128 { return }
      }
    }
  }

  @Test("the PDF: one A4 page, vector only; pdftoppm then zbarimg read the text; pdftotext shows who and how")
  func pdf() throws {
    let text = try Self.passText()
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    try Self.sheet(text).write(to: dir + "/bob.pdf")
    let (status, info) = try Self.tool("pdfinfo '\(dir)/bob.pdf'")
    #expect(status == 0 && info.contains("Pages:           1") && info.contains("595.276 x 841.89 pts (A4)"), "\(info)")
    let (_, images) = try Self.tool("pdfimages -list '\(dir)/bob.pdf'")
    #expect(images.split(separator: "\n").count == 2, "the code is drawn, not an embedded image: \(images)")
    let (rendered, _) = try Self.tool("pdftoppm -r 150 -png '\(dir)/bob.pdf' '\(dir)/page'")
    #expect(rendered == 0)
    #expect(try Self.zbar(dir + "/page-1.png") == text + "\n")
    let (_, words) = try Self.tool("pdftotext '\(dir)/bob.pdf' -")
    #expect(words.contains("Guest pass") && words.contains("Bob Example") && words.contains("ScanGate"), "\(words)")
    #expect(words.contains(Self.instructions[0]) && words.contains("2026-12-05T09:00:00Z"), "\(words)")
    #expect(!words.contains(text.prefix(12)), "the code's text is not printed as words")
  }

  @Test("at the bounds: a 2,000-byte text and twelve 200-byte lines and instructions fit one page and read back")
  func largest() throws {
    // Base45's alphabet, like a pass with many claims: QR version 31 or so.
    let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:")
    let text = "SG1:" + String((0..<1_996).map { alphabet[($0 * 7 + $0 / 45) % alphabet.count] })
    #expect(text.utf8.count == PassSheet.textBytesMax)
    let long = String(repeating: "Zone lobby ", count: 17) + "floor 1234567"
    #expect(long.utf8.count == PassSheet.stringBytesMax)
    let lines = (0..<PassSheet.linesMax).map { String(long.prefix(197)) + String(100 + $0) }
    let sheet = PassSheet(text: text, title: long, holder: long, lines: lines, instructions: lines)
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    try sheet.write(to: dir + "/big.png")
    try sheet.write(to: dir + "/big.pdf")
    #expect(try Self.zbar(dir + "/big.png") == text + "\n")
    #expect(try Self.tool("pdftoppm -r 150 -png '\(dir)/big.pdf' '\(dir)/page'").0 == 0)
    #expect(try Self.zbar(dir + "/page-1.png") == text + "\n")
    let (_, words) = try Self.tool("pdftotext '\(dir)/big.pdf' -")
    #expect(words.contains("1234111") && words.contains("ScanGate"), "the last instruction and the footer are on the page")
  }

  @Test("beyond the bounds, control characters and other extensions are refused and leave no file")
  func refused() throws {
    let text = try Self.passText()
    let good = Self.sheet(text)
    let over = String(repeating: "x", count: PassSheet.stringBytesMax + 1)
    var cases: [(String, PassSheet, String)] = []
    func with(_ name: String, _ change: (inout PassSheet) -> Void) {
      var s = good
      change(&s)
      cases.append((name, s, "bob.pdf"))
      cases.append((name, s, "bob.png"))
    }
    with("text over 2,000 bytes") { $0.text = "SG1:" + String(repeating: "A", count: PassSheet.textBytesMax - 3) }
    with("empty text") { $0.text = "" }
    with("a NUL in the text") { $0.text = text + "\u{0}tail" }
    with("title over 200 bytes") { $0.title = over }
    with("holder over 200 bytes (UTF-8)") { $0.holder = String(repeating: "é", count: 101) }
    with("a line over 200 bytes") { $0.lines = [over] }
    with("an instruction over 200 bytes") { $0.instructions.append(over) }
    with("13 lines") { $0.lines = Array(repeating: "Valid", count: PassSheet.linesMax + 1) }
    with("13 instructions") { $0.instructions = Array(repeating: "Hold", count: PassSheet.linesMax + 1) }
    with("a line break in the holder") { $0.holder = "Bob\nExample" }
    with("a C1 control in a line") { $0.lines = ["Valid\u{85}"] }
    for name in ["bob.txt", "bob", "bob.pdf.bak", "bob.jpg", ".png.", "bob.ps"] { cases.append(("extension", good, name)) }
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    for (name, sheet, file) in cases {
      #expect(throws: FileError.self, "\(name): \(file)") { try sheet.write(to: dir + "/" + file) }
      #expect(try listDirectory(dir).isEmpty, "\(name): \(file) left a file")
    }
    // The same sheet, in range, is written (the refusals above are the bounds, not the drawing).
    try good.write(to: dir + "/BOB.PDF")
    #expect(try listDirectory(dir) == ["BOB.PDF"])
  }

  @Test("scangate credential issue --sheet writes both kinds for the printed text; rotating passes and other names are refused")
  func commandLine() throws {
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    let key = dir + "/issuer.key"
    #expect(runCommand([scangateBinary, "credential", "keygen", "--issuer", key, "--kid", "hq"]).0 == 0)
    let issue = [scangateBinary, "credential", "issue", "--key", key, "--kid", "hq", "--sub", "emp-7", "--label", "Bob Example"]
    let (status, output) = runCommand(
      issue + ["--nbf", "2026-12-03T09:00:00Z", "--valid", "2d", "--zone", "Europe/Berlin", "--sheet", "\(dir)/bob.pdf,\(dir)/bob.png"])
    #expect(status == 0, "\(output)")
    let text = try #require(output.split(separator: "\n").first { $0.hasPrefix("SG1:") }.map(String.init))
    let read = try Self.zbar(dir + "/bob.png")
    #expect(read == text + "\n", "zbarimg read \(read.debugDescription)")
    let (_, words) = try Self.tool("pdftotext '\(dir)/bob.pdf' -")
    // The times a visitor reads at the door: the site's zone (09:00 UTC is 10:00 in Berlin in December).
    #expect(words.contains("Bob Example") && words.contains("Valid from 2026-12-03 10:00 CET to 2026-12-05 10:00 CET"), "\(words)")
    let (_, summer) = runCommand(issue + ["--nbf", "2026-07-03T09:00:00Z", "--valid", "1d", "--zone", "America/New_York", "--sheet", "\(dir)/s.pdf"])
    let (_, summerWords) = try Self.tool("pdftotext '\(dir)/s.pdf' -")
    #expect(summerWords.contains("Valid from 2026-07-03 05:00 EDT to 2026-07-04 05:00 EDT"), "\(summer) \(summerWords)")
    unlink(dir + "/s.pdf")
    let (badZone, badOutput) = runCommand(issue + ["--zone", "Mars/Olympus", "--sheet", "\(dir)/z.pdf"])
    #expect(badZone == 2 && badOutput.contains("--zone Mars/Olympus: not a time zone"), "\(badOutput)")
    #expect(words.contains(Self.instructions[1]), "\(words)")

    let site = CredentialIssuer.sitePublicKey(CredentialIssuer.randomBytes(32))!
    let refusals = [
      ["--rotating", "--site-public", Hex.string(site), "--sheet", "\(dir)/rot.pdf"],
      ["--sheet", "\(dir)/bob2.pdf,\(dir)/bob2.txt"],
      ["--sheet", "\(dir)/bob2.pdf,"],
    ]
    for extra in refusals {
      let (status, output) = runCommand(issue + extra)
      #expect(status == 2 && output.contains("--sheet") && !output.contains("SG1:"), "\(extra): \(output)")
    }
    #expect(try listDirectory(dir) == ["bob.pdf", "bob.png", "issuer.key"])

    // A guest pass's sheet says so, with its uses and its first-use window.
    let guest = [scangateBinary, "credential", "issue", "--key", key, "--kid", "hq", "--guest", "Eve Visitor", "--uses", "3"]
    let (guestStatus, guestOutput) = runCommand(guest + ["--first-use-window", "12h", "--sheet", "\(dir)/eve.pdf"])
    #expect(guestStatus == 0, "\(guestOutput)")
    let (_, guestWords) = try Self.tool("pdftotext '\(dir)/eve.pdf' -")
    for line in ["Guest pass", "Eve Visitor", "Opens 3 times at each door", "From its first use, valid for 12 hours"] {
      #expect(guestWords.contains(line), "\(line): \(guestWords)")
    }
  }
}
