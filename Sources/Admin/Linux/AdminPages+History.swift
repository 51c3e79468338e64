import ScanCore

/// The event history's markup and its CSV rows.
extension AdminPages {
  static let historyKeys = ["from", "to", "person", "verdict", "kind"]

  /// The filters as a URL query (`before` left out), for the CSV link and the older page.
  static func historyQuery(_ arguments: [String: String]) -> String {
    historyKeys.compactMap { key in arguments[key].flatMap { $0.isEmpty ? nil : key + "=" + urlEscaped($0) } }.joined(separator: "&")
  }

  static func history(_ arguments: [String: String], lines: [String], said: String?, older: Int64?) -> String {
    func value(_ key: String) -> String { escaped(arguments[key] ?? "") }
    func options(_ names: [String], selected: String?) -> String {
      "<option value=\"\">any</option>"
        + names.map { "<option value=\"\(escaped($0))\"\($0 == selected ? " selected" : "")>\(escaped($0))</option>" }.joined()
    }
    let query = historyQuery(arguments)
    var html = """
      <h2>Events</h2>
      <form method="get" action="/history" class="card filters" id="filters">
      <label>From <input type="datetime-local" name="from" id="from" value="\(value("from"))"></label>
      <label>To <input type="datetime-local" name="to" id="to" value="\(value("to"))"></label>
      <label>Person <input name="person" id="person" maxlength="48" value="\(value("person"))" placeholder="label"></label>
      <label>Verdict <select name="verdict" id="verdict">\(options(Verdict.all.map(\.name), selected: arguments["verdict"]))</select></label>
      <label>Event <select name="kind" id="kind">\(options(EventKind.all.map(\.name), selected: arguments["kind"]))</select></label>
      <button id="filter">Show</button> <a href="/history.csv\(query.isEmpty ? "" : "?" + query)" id="csv">Download CSV</a>
      </form>
      """
    if let said { html += "<p class=\"error\" id=\"said\">\(escaped(said))</p>" }
    html += "<p id=\"count\">\(lines.isEmpty ? "No record matches." : "\(lines.count) record(s), newest first.")</p>"
    html += "<table id=\"history\"><thead><tr><th>#</th><th>Time (UTC)</th><th>Event</th><th>Verdict</th><th>Record</th></tr></thead><tbody>"
    for line in lines.reversed() {
      let f = fields(line)
      html += "<tr><td>\(escaped(f.sequence))</td><td>\(escaped(f.time))</td><td>\(escaped(f.kind))</td><td>\(escaped(f.verdict))</td>"
      html += "<td><code>\(escaped(f.rest))</code></td></tr>"
    }
    html += "</tbody></table><p>"
    if let older { html += "<a id=\"older\" href=\"/history?\(query.isEmpty ? "" : query + "&")before=\(older)\">Older</a> " }
    if arguments["before"] != nil { html += "<a id=\"newest\" href=\"/history\(query.isEmpty ? "" : "?" + query)\">Newest</a>" }
    return html + "</p>"
  }

  /// A LOG line's columns: `<seq> <time> run <r> #<e> <kind> [<verdict> <format>] ...`.
  static func fields(_ line: String) -> (sequence: String, time: String, kind: String, verdict: String, rest: String) {
    let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
    guard words.count >= 6 else { return ("", "", "", "", line) }
    let verdict = words.count > 6 && Verdict(name: words[6]) != nil ? words[6] : ""
    let rest = words.dropFirst(verdict.isEmpty ? 6 : 7).joined(separator: " ")
    return (words[0], words[1], words[5], verdict, rest)
  }

  /// One CSV row (RFC 4180, CRLF): every cell quoted, and a cell a spreadsheet would run as a
  /// formula (`=`, `+`, `-`, `@`, tab, CR first) made text by a leading `'`.
  static func csvRow(_ line: String) -> String {
    let f = fields(line)
    return [f.sequence, f.time, f.kind, f.verdict, line].map(csvCell).joined(separator: ",") + "\r\n"
  }

  static func csvCell(_ text: String) -> String {
    var cell = text
    if let first = cell.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) { cell = "'" + cell }
    var out = "\""
    for c in cell.unicodeScalars { out += c == "\"" ? "\"\"" : String(c) }
    return out + "\""
  }
}
