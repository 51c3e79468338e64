import ScanCore
import ScanPlatform

/// People from a CSV (docs/admin.md, "The web page"): the file is read by the browser, sent in
/// the form, and handed to the reader's console `IMPORT` in pieces; Preview runs `IMPORT CHECK`
/// (nothing written) and shows what would be added, changed and removed, with an Apply button
/// that sends the same CSV again for `IMPORT APPLY`. The reader checks every row, as `scangate
/// allow-list import` does: the page parses nothing.
extension AdminSite {
  /// Escaped bytes per `IMPORT DATA` line: under the console's 512-byte line with the verb.
  static let importLineBytes = 480

  /// `IMPORT DATA` lines for `bytes`, each as many bytes as fit escaped in `importLineBytes`
  /// (printable text mostly passes as it is: about 400 bytes a line).
  static func importData(_ bytes: [UInt8]) -> [String] {
    var lines: [String] = [], start = 0
    while start < bytes.count {
      var end = start, length = 0
      while end < bytes.count {
        let width = PercentCodec.needsEscape(bytes[end]) ? 3 : 1
        guard length + width <= importLineBytes else { break }
        length += width
        end += 1
      }
      lines.append("IMPORT DATA " + PayloadEscaping.escaped(Array(bytes[start..<end])))
      start = end
    }
    return lines
  }

  func importPage(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .operator else { return page("Import", body: AdminPages.viewerOnly(), session: session, status: 403) }
    return page("Import", body: AdminPages.importForm(session, csv: "", removeMissing: false), session: session)
  }

  func importPeople(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's action: this account is a viewer\n") }
    let form = request.form
    let csv = form["csv"] ?? ""
    let removeMissing = form["remove_missing"] == "yes"
    let apply = form["action"] == "apply"
    guard !csv.isEmpty else {
      let form = AdminPages.importForm(session, csv: "", removeMissing: removeMissing, said: "Choose a CSV file first.")
      return page("Import", body: form, session: session, status: 400)
    }
    let bytes = Array(csv.utf8)
    var commands = ["IMPORT BEGIN"] + Self.importData(bytes)
    commands.append((apply ? "IMPORT APPLY" : "IMPORT CHECK") + (removeMissing ? " REMOVE-MISSING" : ""))
    guard let replies = ask(session, commands), let last = replies.last else {
      return page("Import", body: AdminPages.unreachable(), session: session, status: 503)
    }
    // A piece refused (another import under way, too large) ends the import there.
    let failed = replies.first { $0.status.hasPrefix("ERR") }
    let reply = failed ?? last
    writeStandardError("scangate admin: \(session.name): import \(apply ? "apply" : "check"): \(reply.status)\n")
    let body = AdminPages.importResult(session, csv: csv, removeMissing: removeMissing, reply: reply, applied: apply)
    return page("Import", body: body, session: session, status: reply.status.hasPrefix("OK") ? 200 : 409)
  }
}

extension AdminPages {
  static func importForm(_ session: AdminSessions.Session, csv: String, removeMissing: Bool, said: String? = nil) -> String {
    """
    <h2>Import people (CSV)</h2>
    <p class="card">The columns of <code>scangate allow-list import</code>: <code>label</code> and <code>payload</code> or
    <code>sha256</code>, and any of <code>schedule</code>, <code>from</code>, <code>until</code>, <code>card</code>,
    <code>static</code>, <code>lockdown</code>. Rows are matched to people by label. Preview shows what would change;
    nothing is written until Apply. A file of up to about 20 kB here; larger ones with the command on the reader.</p>
    \(said.map { "<p class=\"error\" id=\"said\">\(escaped($0))</p>" } ?? "")
    <form method="post" action="/people/import" class="card" id="import">
    <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="action" value="check">
    <label>CSV file <input type="file" id="csv-file" accept=".csv,text/csv"></label>
    <label>or paste it <textarea name="csv" id="csv" rows="8">\(escaped(csv))</textarea></label>
    <label><input type="checkbox" name="remove_missing" value="yes" id="remove-missing"\(removeMissing ? " checked" : "")
    class="check"> Remove the people the file does not name</label>
    <button id="preview">Preview</button></form>
    """
  }

  static func importResult(
    _ session: AdminSessions.Session, csv: String, removeMissing: Bool, reply: (body: [String], status: String), applied: Bool
  ) -> String {
    let ok = reply.status.hasPrefix("OK")
    var html = "<h2>Import people (CSV)</h2><p id=\"summary\" class=\"\(ok ? "" : "error")\">\(escaped(reply.status))</p>"
    html += "<ul id=\"changes\">"
    for line in reply.body { html += "<li>\(escaped(line.removingPercentEncodingForDisplay))</li>" }
    html += "</ul>"
    if ok && !applied && !reply.body.isEmpty {
      html += """
        <form method="post" action="/people/import" class="card"><input type="hidden" name="csrf" value="\(session.csrf)">
        <input type="hidden" name="action" value="apply">\(removeMissing ? "<input type=\"hidden\" name=\"remove_missing\" value=\"yes\">" : "")
        <textarea name="csv" hidden>\(escaped(csv))</textarea><button id="apply">Apply these changes</button></form>
        """
    }
    return html + "<p><a href=\"/import\">Another import</a> · <a href=\"/people\">People</a></p>"
  }
}
