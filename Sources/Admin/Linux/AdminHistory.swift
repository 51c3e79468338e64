import Glibc
import ScanPlatform
import ScanCore

/// The event history (docs/admin.md, "Events"): the reader's audit log through the console's
/// `LOG` with filters, read on the reader's side (a page of 50 out of a year of records reads
/// 50), paged from the newest down by `before=`, and as a CSV download. Operators and admins
/// only, as LOG is; never a payload (the page's console session is named, and LOG hides the
/// payload column from named sessions).
extension AdminSite {
  static let historyPage = 50
  /// A CSV download holds at most this many records (the newest that match): pages of 100.
  static let historyCSVMax = 5_000

  /// The LOG filters a page's query asks for (`from`/`to` as `YYYY-MM-DDTHH:MM` in this host's
  /// time zone); nil with the reason when one is malformed.
  static func historyFilters(_ arguments: [String: String]) -> Result<String, HistoryProblem> {
    var words: [String] = []
    for (key, word) in [("from", "since="), ("to", "until=")] {
      guard let text = arguments[key], !text.isEmpty else { continue }
      guard let seconds = localSeconds(text) else { return .failure(HistoryProblem("\(key): a date and time (YYYY-MM-DDTHH:MM)")) }
      words.append(word + String(seconds))
    }
    if let verdict = arguments["verdict"], !verdict.isEmpty {
      guard Verdict(name: verdict) != nil else { return .failure(HistoryProblem("verdict: not one of the log's verdicts")) }
      words.append("verdict=" + verdict)
    }
    if let kind = arguments["kind"], !kind.isEmpty {
      guard EventKind(name: kind) != nil else { return .failure(HistoryProblem("event: not one of the log's kinds")) }
      words.append("kind=" + kind)
    }
    if let person = arguments["person"], !person.isEmpty {
      guard let label = AdminPages.consoleLabel(person) else { return .failure(HistoryProblem("person: a label of 1 to 48 bytes")) }
      words.append("label=" + label)
    }
    return .success(words.joined(separator: " "))
  }

  struct HistoryProblem: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
  }

  /// `YYYY-MM-DDTHH:MM` (an HTML datetime-local, seconds optional) in this host's time zone, as
  /// Unix seconds; nil when malformed.
  static func localSeconds(_ text: String) -> Int64? {
    let b = Array(text.utf8)
    guard b.count == 16 || b.count == 19, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b.count == 16 || b[16] == 0x3A
    else { return nil }
    func number(_ range: Range<Int>) -> Int32? {
      var n: Int32 = 0
      for i in range {
        guard (0x30...0x39).contains(b[i]) else { return nil }
        n = n * 10 + Int32(b[i] - 0x30)
      }
      return n
    }
    guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
      let minute = number(14..<16), (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day), hour < 24,
      minute < 60
    else { return nil }
    let second = b.count == 19 ? number(17..<19) : 0
    guard let second, second < 60 else { return nil }
    var t = tm()
    t.tm_year = year - 1900
    t.tm_mon = month - 1
    t.tm_mday = day
    t.tm_hour = hour
    t.tm_min = minute
    t.tm_sec = second
    t.tm_isdst = -1
    let seconds = mktime(&t)
    return seconds == -1 ? nil : Int64(seconds)
  }

  func history(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return page("Events", body: AdminPages.viewerOnly(), session: session, status: 403) }
    let arguments = request.arguments
    let filters: String
    switch Self.historyFilters(arguments) {
    case .failure(let problem):
      return page("Events", body: AdminPages.history(arguments, lines: [], said: problem.reason, older: nil), session: session, status: 400)
    case .success(let f): filters = f
    }
    var command = "LOG \(Self.historyPage)"
    if let before = arguments["before"], !before.isEmpty {
      guard let n = Int64(before), n > 0 else { return .text(400, "before: a record number\n") }
      command += " before=\(n)"
    }
    if !filters.isEmpty { command += " " + filters }
    guard let reply = askLog(session, command) else { return page("Events", body: AdminPages.unreachable(), session: session, status: 503) }
    let lines = reply.body
    // A reply holds the newest lines that fit the console's 3.5 KiB answer, maybe fewer than
    // asked: older records may remain while the oldest shown is not the first.
    let older = lines.first.flatMap(Self.sequence).flatMap { $0 > 1 ? $0 : nil }
    let said = reply.status.hasPrefix("OK") ? nil : reply.status
    return page("Events", body: AdminPages.history(arguments, lines: lines, said: said, older: older), session: session)
  }

  /// Every record that matches (newest `historyCSVMax`), oldest first, as CSV.
  func historyCSV(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's page: this account is a viewer\n") }
    guard case .success(let filters) = Self.historyFilters(request.arguments) else { return .text(400, "bad filter\n") }
    var pages: [[String]] = []
    var before: Int64? = nil
    var total = 0
    while total < Self.historyCSVMax {
      let command = "LOG 100" + (before.map { " before=\($0)" } ?? "") + (filters.isEmpty ? "" : " " + filters)
      guard let reply = askLog(session, command), reply.status.hasPrefix("OK") else {
        return .text(503, "the reader's log cannot be read now\n")
      }
      guard let first = reply.body.first.flatMap(Self.sequence) else { break }
      pages.append(reply.body)
      total += reply.body.count
      before = first
    }
    var csv = "sequence,time,event,verdict,record\r\n"
    for line in pages.reversed().joined() { csv += AdminPages.csvRow(line) }
    writeStandardError("scangate admin: \(session.name): events CSV, \(total) records\n")
    return HTTPResponse(
      status: 200, contentType: "text/csv; charset=utf-8", headers: ["Content-Disposition: attachment; filename=\"scangate-events.csv\""],
      body: Array(csv.utf8))
  }

  /// One LOG exchange, asked again (up to 2 s) while the log is busy with another reader's LOG.
  private func askLog(_ session: AdminSessions.Session, _ command: String) -> (body: [String], status: String)? {
    for _ in 0..<20 {
      guard let reply = ask(session, [command])?.first else { return nil }
      if !reply.status.hasPrefix("ERR 503 the log is being read") { return reply }
      usleep(100_000)
    }
    return nil
  }

  /// The record's sequence: the line's first word.
  static func sequence(_ line: String) -> Int64? { line.split(separator: " ", maxSplits: 1).first.flatMap { Int64($0) } }
}
