import Glibc
import ScanCore
import ScanPlatform
import Synchronization

/// A guest pass as an issuer's page asks for it: valid from now, counted and limited.
public struct GuestPassRequest: Sendable, Equatable {
  public var name: String
  public var uses: Int
  public var validSeconds: Int64
  /// 0: none; else the pass stops this long after its first use.
  public var firstUseWindowSeconds: Int64
  public init(name: String, uses: Int, validSeconds: Int64, firstUseWindowSeconds: Int64) {
    self.name = name
    self.uses = uses
    self.validSeconds = validSeconds
    self.firstUseWindowSeconds = firstUseWindowSeconds
  }
}

/// An issued guest pass: its id (what readers count it by, not a secret) and its printable sheet.
/// The sheets hold the pass: they go to the admin in one response and are kept nowhere.
public struct GuestPassSheets: Sendable {
  public var id: String
  public var summary: String
  public var png: [UInt8]
  public var pdf: [UInt8]
  public init(id: String, summary: String, png: [UInt8], pdf: [UInt8]) {
    self.id = id
    self.summary = summary
    self.png = png
    self.pdf = pdf
  }
}

/// Who signs guest passes for an issuer's page (the composition root gives one that reads the
/// issuer key only while it signs). A thrown error's description is shown to the admin.
public protocol GuestPassIssuing: Sendable {
  func issue(_ request: GuestPassRequest) throws -> GuestPassSheets
}

/// Visitors (docs/admin.md, "Visitors"). On a reader: the counted passes it remembers (the
/// reader's `PASSES`), and that passes are issued elsewhere. On an issuer's page (a machine that
/// runs no reader, with `admin.issuer_key_file`): a form that issues a guest pass and shows its
/// sheet to print. A page on a reader's host that held the issuer key would let anyone who takes
/// the reader make passes for every door.
extension AdminSite {
  /// The page's choices: how long a pass is good for, and its first-use window.
  static let validChoices: [(String, Int64)] = [("4 hours", 14_400), ("8 hours", 28_800), ("1 day", 86_400), ("2 days", 172_800), ("7 days", 604_800)]
  static let windowChoices: [(String, Int64)] = [("none", 0), ("1 hour", 3_600), ("4 hours", 14_400), ("12 hours", 43_200)]
  static let guestUsesMax = 20

  func visitorsPage(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .operator else { return page("Visitors", body: AdminPages.viewerOnly(), session: session, status: 403) }
    var body = settings.issuer.map { _ in AdminPages.issueForm(session, message: nil) } ?? ""
    if settings.hasReader { body += AdminPages.visitors(reply: ask(session, ["PASSES 200"])?.first, issuing: settings.issuer != nil) }
    return page("Visitors", body: body, session: session)
  }

  /// POST /visitors/issue: a guest pass from the form, shown once (sheet as a picture, PDF and
  /// PNG to download); recorded with who, the pass's id and name, never the pass.
  func issueGuestPass(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's action: this account is a viewer\n") }
    guard let issuer = settings.issuer else { return .text(404, "this page issues no passes: it runs beside a reader\n") }
    let form = request.form
    let name = (form["name"] ?? "").trimmingPrefix(" ")
    guard (1...48).contains(name.utf8.count), name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }),
      let uses = Int(form["uses"] ?? ""), (1...Self.guestUsesMax).contains(uses),
      let valid = Self.validChoices.first(where: { $0.0 == form["valid"] })?.1,
      let window = Self.windowChoices.first(where: { $0.0 == (form["window"] ?? "none") })?.1
    else {
      let why = "A name (1 to 48 characters), 1 to \(Self.guestUsesMax) uses, and a validity from the list."
      return page("Visitors", body: AdminPages.issueForm(session, message: why), session: session, status: 400)
    }
    let sheets: GuestPassSheets
    do {
      let asked = GuestPassRequest(name: String(name), uses: uses, validSeconds: valid, firstUseWindowSeconds: window)
      sheets = try hashing.withLock { _ in try issuer.issue(asked) }
    } catch {
      writeStandardError("scangate admin: \(session.name): guest pass refused: \(error)\n")
      return page("Visitors", body: AdminPages.issueForm(session, message: "Not issued: \(error)"), session: session, status: 500)
    }
    writeStandardError(
      "scangate admin: \(session.name) issued guest pass id=\(sheets.id) name=\(AdminPages.shown(String(name))) uses=\(uses) valid=\(valid)s\n")
    return page("Guest pass", body: AdminPages.issued(session, name: String(name), sheets: sheets), session: session)
  }
}

extension AdminPages {
  static func visitors(reply: (body: [String], status: String)?, issuing: Bool) -> String {
    guard let reply else { return unreachable() }
    var html =
      issuing
      ? ""
      : """
      <h2>Visitors</h2>
      <p class="card" id="issuing">Guest passes are issued where the issuer key is kept, never on a reader (this page runs
      on one: a reader that held the key would let whoever takes it make passes for every door). On the office machine,
      the issuer's own page (<code>admin.issuer_key_file</code>, docs/admin.md) or
      <code>scangate credential issue --key issuer.key --kid KID --guest "Name" --uses 3 --valid 1d --sheet pass.pdf</code>
      makes the pass and its sheet to print or send (docs/credentials.md).</p>
      """
    html += """
      <h3>Passes counted on the reader</h3><p id="passes-count">\(escaped(reply.status))</p>
      <table id="passes"><thead><tr><th>Pass id</th><th>Uses</th><th>First use</th><th>Kept until</th></tr></thead><tbody>
      """
    for line in reply.body {
      let fields = Dictionary(
        line.split(separator: " ").compactMap { f -> (String, String)? in
          guard let eq = f.firstIndex(of: "=") else { return nil }
          return (String(f[..<eq]), String(f[f.index(after: eq)...]))
        }, uniquingKeysWith: { a, _ in a })
      let cells = ["id", "uses", "first", "until"].map { "<td>\(escaped(fields[$0] ?? ""))</td>" }.joined()
      html += "<tr>\(cells)</tr>"
    }
    return html + "</tbody></table>"
  }

  /// The issuer's form: a name, uses, validity, first-use window.
  static func issueForm(_ session: AdminSessions.Session, message: String?) -> String {
    func options(_ choices: [(String, Int64)], selected: String) -> String {
      choices.map { "<option\($0.0 == selected ? " selected" : "")>\($0.0)</option>" }.joined()
    }
    return """
      <h2>Visitors</h2>\(message.map { "<p class=\"error\" id=\"message\">\(escaped($0))</p>" } ?? "")
      <p class="card" id="issuing">This is the issuer's page: it runs on no reader. A guest pass is signed here and
      checked by every reader that trusts this issuer; each reader counts its uses (its own Visitors page shows them).</p>
      <form method="post" action="/visitors/issue" class="card"><input type="hidden" name="csrf" value="\(session.csrf)">
      <label>Visitor's name <input name="name" id="guest-name" maxlength="48" required></label>
      <label>Uses at each door <input name="uses" id="guest-uses" type="number" min="1" max="\(AdminSite.guestUsesMax)" value="2" required></label>
      <label>Valid from now for <select name="valid" id="guest-valid">\(options(AdminSite.validChoices, selected: "1 day"))</select></label>
      <label>From the first use, only for <select name="window" id="guest-window">\(options(AdminSite.windowChoices, selected: "none"))</select></label>
      <button id="issue">Issue the pass</button></form>
      """
  }

  /// The pass, once: its sheet as a picture, PDF and PNG to download (data: links, so nothing is
  /// kept here to fetch again), and a print button.
  static func issued(_ session: AdminSessions.Session, name: String, sheets: GuestPassSheets) -> String {
    let file = "guest-pass-" + sheets.id
    return """
      <h2>Guest pass for \(escaped(name))</h2>
      <p class="card" id="issued">Pass <code id="pass-id">\(escaped(sheets.id))</code>: \(escaped(sheets.summary))</p>
      <p class="error">The sheet holds the pass: anyone with the code can use it. Print it or send it to the visitor, then
      close this page; it is kept nowhere.</p>
      <p><button id="print">Print</button> <a id="pass-pdf" download="\(file).pdf" href="data:application/pdf;base64,\(base64(sheets.pdf))">Sheet as PDF</a>
      <a id="pass-png" download="\(file).png" href="data:image/png;base64,\(base64(sheets.png))">as PNG</a> <a href="/visitors">Issue another</a></p>
      <img id="pass-sheet" class="sheet" src="data:image/png;base64,\(base64(sheets.png))" alt="The guest pass's sheet">
      """
  }

  /// Standard base64 (RFC 4648), as the reader's console writes it.
  static func base64(_ bytes: [UInt8]) -> String {
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: (bytes.count + 2) / 3 * 4, alignment: 1)
    defer { out.deallocate() }
    var w = ByteWriter(out)
    bytes.withUnsafeBytes { w.writeBase64($0) }
    return String(decoding: w.written, as: UTF8.self)
  }
}
