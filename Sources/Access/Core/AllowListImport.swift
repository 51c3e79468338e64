import ScanBase

/// Importing people from a CSV (docs/admin.md, "Import and export (CSV)"): rows checked against
/// the file's own parser, matched to entries by label, and the list's new text. The same code
/// serves `scangate allow-list import` on the file and the console's `IMPORT` on the reader.
public enum AllowListImport {
  /// What importing `csv` into the list whose text is `text` does: the new text and the labels
  /// added, changed and removed; any bad row (or a result that would not load) refuses it whole.
  /// `source` names the CSV in refusals (a path, or "the CSV"). `validating` false: the caller
  /// checks that the result loads itself (the reader, in the spare table it already has).
  public static func plan(
    csv: [UInt8], into text: [UInt8], source: String, listPath: String, limits: AllowListLimits, keepText: Bool, removeMissing: Bool,
    schedules: ScheduleReferences, digester: some PayloadDigester, validating: Bool = true
  ) throws(Refusal) -> Plan {
    let records: [[String]]
    switch CSV.parseText(csv, limits: CSV.Limits(fileBytesMax: limits.fileBytesMax, recordsMax: limits.entriesMax + 1)) {
    case .success(let r): records = r
    case .failure(let problem): throw Refusal("\(source): \(problem)")
    }
    let rows: [Row]
    switch checkRows(records, keepText: keepText, schedules: schedules, digester: digester) {
    case .success(let r): rows = r
    case .failure(let problem): throw Refusal("\(source): \(problem)")
    }
    var plan = try Plan(rows, text: text, csvPath: source, digester: digester)
    if removeMissing { plan.removeMissing(rows) }
    try plan.appendAdded(listPath: listPath)
    guard validating else { return plan }
    var list = AllowList(limits: limits)
    if let error = list.validate(plan.text, digester: digester, schedules: schedules) { throw Refusal("the result would not load (\(error))") }
    return plan
  }

  /// Whether the plan changes anything.
  public static func isEmpty(_ plan: Plan) -> Bool { plan.added.isEmpty && plan.changed.isEmpty && plan.removed.isEmpty }

  /// The columns import reads (`tag` and `kind` are export's, accepted and ignored).
  public static let importColumns = [
    "payload", "sha256", "label", "zones", "schedule", "from", "until", "card", "static", "lockdown", "tag", "kind", "pin",
  ]

  /// One CSV row, checked: the entry it asks for, or only new fields for an existing label.
  public struct Row {
    public var record: Int
    public var entry: AllowListEdit.Entry
    /// The code's digest (nil: the row names no code and updates the label's entry).
    public var digest: Digest?
    /// The columns the CSV has: a field whose column it lacks stays as the entry has it.
    public var given: Set<String> = []
  }

  /// Why an import writes nothing (printed after `scangate allow-list import: `).
  public struct Refusal: Error {
    public var why: String
    /// A refusal that says `why`.
    public init(_ why: String) { self.why = why }
  }

  /// What an import does to the list: its text with changed entries replaced in place, the lines
  /// to append, and the labels added, changed and removed.
  public struct Plan {
    public internal(set) var text: [UInt8]
    /// The entries of the list as it was read (their line numbers hold: a change keeps its line).
    let existing: [AllowListEdit.Located]
    var appended: [String] = []
    public internal(set) var added: [String] = [], changed: [String] = [], removed: [String] = []
    public internal(set) var unchanged = 0

    /// Matches each row to the entry with its label: a new label is appended, a known one changed
    /// in place; a code already on the list under another label refuses the import.
    public init(_ rows: [Row], text: [UInt8], csvPath: String, digester: some PayloadDigester) throws(Refusal) {
      self.text = text
      existing = AllowListEdit.entries(text)
      let existingDigests = existing.map { AllowListImport.digestOf($0.match, digester: digester) }
      for row in rows {
        var entry = row.entry
        let at = existing.firstIndex { $0.label == entry.label }
        if let digest = row.digest, let other = existingDigests.firstIndex(of: digest), existing[other].label != entry.label {
          throw Refusal("\(csvPath): record \(row.record): this code is already on the list (line \(existing[other].line + 1))")
        }
        guard let at else {
          guard row.digest != nil else { throw Refusal("\(csvPath): record \(row.record): no payload or sha256, and no entry has this label") }
          appended.append(entry.line)
          added.append(entry.label)
          continue
        }
        // The same code keeps the form it has in the file (a text: entry is not turned into a digest).
        if row.digest == nil || row.digest == existingDigests[at] {
          entry.match = existing[at].match
          // A PIN is bound to its code: the same code keeps its pin= (a CSV never drops a second factor).
          if entry.pin.isEmpty, let pin = existing[at].fields.first(where: { $0.hasPrefix("pin=") }) { entry.pin = String(pin.dropFirst(4)) }
        }
        // A column the CSV does not have leaves that field as the entry has it (an empty cell clears it).
        func kept(_ key: String) -> String? {
          row.given.contains(key) ? nil : existing[at].fields.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        if let v = kept("schedule") { entry.schedule = v }
        if let v = kept("from") { entry.from = v }
        if let v = kept("until") { entry.until = v }
        if let v = kept("card") { entry.card = v }
        if !row.given.contains("static") { entry.isStatic = kept("static") == "yes" }
        if !row.given.contains("lockdown") { entry.isLockdown = kept("lockdown") == "yes" }
        let old = Set([existing[at].match] + existing[at].fields)
        let new = Set(entry.line.split(separator: " ").map(String.init))
        if old == new {
          unchanged += 1
        } else {
          self.text = AllowListEdit.replacingLine(existing[at].line, with: entry.line, in: self.text)
          changed.append(entry.label)
        }
      }
    }

    /// --remove-missing: removes the labelled entries no row names (an entry without a label stays).
    public mutating func removeMissing(_ rows: [Row]) {
      let labels = Set(rows.map(\.entry.label))
      for gone in existing.reversed() where gone.label.map({ !labels.contains($0) }) ?? false {
        text = AllowListEdit.removingLine(gone.line, from: text)
        removed.append(gone.label!)
      }
      removed.reverse()
    }

    /// Appends the new entries' lines (refused when the list would grow past its limits).
    public mutating func appendAdded(listPath path: String) throws(Refusal) {
      for line in appended {
        switch AllowListEdit.appending(line, to: text) {
        case .success(let t): text = t
        case .failure(let refusal): throw Refusal("\(path): \(refusal.reason)")
        }
      }
    }
  }

  /// The rows as entries, or the first bad row (its record number; record 1 is the header).
  public static func checkRows(
    _ records: [[String]], keepText: Bool, schedules: ScheduleReferences = .notLoaded, digester: some PayloadDigester
  ) -> Result<[Row], CSV.Problem> {
    guard let header = records.first else { return .failure(CSV.Problem(record: 0, reason: "no header row")) }
    var column: [String: Int] = [:]
    for (i, name) in header.enumerated() {
      let key = name.trimmingSpaces.lowercased()
      guard importColumns.contains(key) else {
        return .failure(CSV.Problem(record: 1, reason: "unknown column (known: \(importColumns.joined(separator: ", ")))"))
      }
      guard column[key] == nil else { return .failure(CSV.Problem(record: 1, reason: "column \(key) given twice")) }
      column[key] = i
    }
    guard column["label"] != nil else { return .failure(CSV.Problem(record: 1, reason: "a label column is required")) }
    var rows: [Row] = []
    var labels = Set<String>()
    var scratch = AllowListTable(entriesMax: 1)
    for (n, record) in records.enumerated().dropFirst() {
      func fail(_ why: String) -> Result<[Row], CSV.Problem> { .failure(CSV.Problem(record: n + 1, reason: why)) }
      guard record.count == header.count else { return fail("\(record.count) fields, the header has \(header.count)") }
      func cell(_ key: String) -> String { column[key].map { CSV.readInert(record[$0]) } ?? "" }
      // A spreadsheet's names as they are ("ivy smith", "Zoë"): kept escaped (ivy%20smith), as
      // the file, the console and the log show them.
      guard let label = AllowListEdit.labelFromText(cell("label")) else {
        return fail("label: 1 to 48 bytes as shown (letters, digits, '.', '_', '-', '@', '+'; anything else as %XX)")
      }
      guard labels.insert(label).inserted else { return fail("label \(label) given twice") }
      guard cell("zones").isEmpty else { return fail("zones: allow-list entries have no zones (zones are for signed passes); use schedule") }
      var entry = AllowListEdit.Entry(match: "", label: label)
      var digest: Digest? = nil
      let payload = Array(cell("payload").utf8), sha = cell("sha256").lowercased()
      if !payload.isEmpty && !sha.isEmpty { return fail("give payload or sha256, not both") }
      if !payload.isEmpty {
        digest = payload.withUnsafeBytes { digester.sha256($0) }
        entry.match = keepText ? "text:" + escaped(payload) : "sha256:" + hex(digest!)
      } else if !sha.isEmpty {
        entry.match = "sha256:" + sha
      }
      entry.schedule = cell("schedule")
      entry.from = cell("from")
      entry.until = cell("until")
      entry.card = cell("card")
      for (key, value) in [("static", cell("static")), ("lockdown", cell("lockdown"))] {
        guard ["", "yes", "no"].contains(value) else { return fail("\(key): yes, no or empty") }
      }
      entry.isStatic = cell("static") == "yes"
      entry.isLockdown = cell("lockdown") == "yes"
      entry.pin = cell("pin").lowercased()
      // The entry's line, read by the file's own parser (a placeholder digest when the row only
      // updates fields): its errors name the rule, never the text.
      let probe = entry.match.isEmpty ? "sha256:" + String(repeating: "0", count: 64) : entry.match
      var line = entry
      line.match = probe
      if line.line.contains("#") { return fail("a '#' in a field would start a comment") }
      if let error = AllowListParser.parse(
        Array((line.line + "\n").utf8), limits: AllowListLimits(entriesMax: 1), digester: digester, schedules: schedules, into: &scratch)
      {
        return fail(error.reason)
      }
      if digest == nil && !sha.isEmpty { digest = digestOf(entry.match, digester: digester) }
      rows.append(Row(record: n + 1, entry: entry, digest: digest, given: Set(column.keys)))
    }
    return .success(rows)
  }

  /// The digest a match names (`sha256:` read, `text:` unescaped and hashed); nil when it does not decode.
  public static func digestOf(_ match: String, digester: some PayloadDigester) -> Digest? {
    if match.hasPrefix("sha256:") {
      let text = Array(match.utf8.dropFirst(7))
      var bytes = [UInt8](repeating: 0, count: 32)
      let n = bytes.withUnsafeMutableBytes { out in text.withUnsafeBytes { try? Hex.decode($0, into: out) } }
      guard text.count == 64, n == 32 else { return nil }
      return bytes.withUnsafeBytes { Digest(bytes: $0) }
    }
    guard match.hasPrefix("text:") else { return nil }
    var payload = Array(match.utf8.dropFirst(5))
    let n = payload.withUnsafeMutableBytes { out in
      Array(match.utf8.dropFirst(5)).withUnsafeBytes { try? PercentCodec.decode($0, into: out, strict: false) }
    }
    guard let n else { return nil }
    payload.removeLast(payload.count - n)
    // The copy is zeroed (the match string it came from is the file's own text).
    defer { payload.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
    return payload.withUnsafeBytes { digester.sha256($0) }
  }

  /// A payload as a `text:` entry writes it (docs/allow-list.md: `%XX` for what must be escaped,
  /// and for space, `%` and `#`).
  public static func escaped(_ payload: [UInt8]) -> String {
    var out = ""
    for b in payload {
      if PercentCodec.needsEscape(b) {
        out += "%" + hexPair(b)
      } else {
        out.unicodeScalars.append(Unicode.Scalar(b))
      }
    }
    return out
  }

  public static func hex(_ digest: Digest) -> String { (0..<32).map { hexPair(digest.byte($0)) }.joined() }

  public static func hexPair(_ b: UInt8) -> String {
    String(decoding: [Hex.digit(b >> 4), Hex.digit(b)], as: UTF8.self)
  }

}

extension String {
  fileprivate var trimmingSpaces: String {
    var s = Substring(self)
    while s.first == " " { s = s.dropFirst() }
    while s.last == " " { s = s.dropLast() }
    return String(s)
  }
}

extension AllowListImport.Plan {
  /// A whole list `new` in place of `text` (a backup's list, docs/backup.md): the new text as it
  /// is, and the labels it adds, changes (another code or other fields) and removes. An entry
  /// without a label is named "an entry without a label", never by its code.
  public init(replacing text: [UInt8], with new: [UInt8]) {
    self.text = new
    existing = AllowListEdit.entries(text)
    let incoming = AllowListEdit.entries(new)
    func key(_ e: AllowListEdit.Located) -> String { e.label.map { "label " + $0 } ?? "match " + e.match }
    func shown(_ e: AllowListEdit.Located) -> String { e.label ?? "an entry without a label" }
    let before = Dictionary(existing.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
    let after = Dictionary(incoming.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
    for e in incoming where before[key(e)] == nil { added.append(shown(e)) }
    for e in existing where after[key(e)] == nil { removed.append(shown(e)) }
    for e in incoming {
      guard let old = before[key(e)] else { continue }
      if old.match == e.match && old.fields == e.fields { unchanged += 1 } else { changed.append(shown(e)) }
    }
  }
}
