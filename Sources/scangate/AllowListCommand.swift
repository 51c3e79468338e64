import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate allow-list import --csv FILE [--dry-run]` and `scangate allow-list export --csv`
/// (docs/admin.md, "People"). Import adds and changes entries by label, keeping every line the
/// administrator wrote; a payload is stored as its `sha256:` entry unless `--keep-text`. Export
/// writes labels, keyed tags and flags: never a payload and never a digest (a short payload's
/// SHA-256 is searched offline in seconds, and an export leaves the reader).
enum AllowListCommand {
  /// The columns import reads (`tag` and `kind` are export's, accepted and ignored).
  static let importColumns = [
    "payload", "sha256", "label", "zones", "schedule", "from", "until", "card", "static", "lockdown", "tag", "kind", "pin",
  ]
  static let exportColumns = ["label", "tag", "kind", "schedule", "from", "until", "card", "static", "lockdown", "pin"]

  static func run(_ arguments: [String]) -> Int32 {
    var arguments = arguments
    let sub = arguments.first ?? ""
    if !arguments.isEmpty { arguments.removeFirst() }
    do {
      switch sub {
      case "import":
        let options = try Options(arguments, valued: ["config", "csv"], known: ["dry-run", "keep-text", "remove-missing"])
        guard let csv = options.value("csv") else { throw ParseError(message: "import wants --csv FILE") }
        guard let config = loadConfig(options) else { return 1 }
        return importCSV(csv, config: config, options: options)
      case "export":
        let options = try Options(arguments, valued: ["config", "key"], known: ["csv"])
        guard options.flag("csv") else { throw ParseError(message: "export writes CSV only: give --csv") }
        guard let config = loadConfig(options) else { return 1 }
        return exportCSV(config: config, keyPath: options.value("key"))
      case "enrol": return try enrol(arguments)
      case "pin-key": return try pinKey(arguments)
      case "pin": return try pin(arguments)
      default:
        throw ParseError(message: "give import, export, enrol, pin or pin-key (scangate allow-list --help)")
      }
    } catch {
      writeStandardError("scangate allow-list: \(error)\n")
      return 2
    }
  }

  // MARK: - Import

  /// One CSV row, checked: the entry it asks for, or only new fields for an existing label.
  struct Row {
    var record: Int
    var entry: AllowListEdit.Entry
    /// The code's digest (nil: the row names no code and updates the label's entry).
    var digest: Digest?
  }

  /// Why an import writes nothing (printed after `scangate allow-list import: `).
  struct ImportRefusal: Error {
    var why: String
    /// A refusal that says `why`.
    init(_ why: String) { self.why = why }
  }

  /// Imports the CSV file's rows into the allow-list (or, with --dry-run, says what it would
  /// do); any problem refuses the whole file and writes nothing.
  static func importCSV(_ csvPath: String, config: ScanConfig, options: Options) -> Int32 {
    let path = config.allowListPath
    let limits = config.engine.allowList
    let digester = SodiumDigester()
    do throws(ImportRefusal) {
      let schedules = ScheduleReferences.of(file: config.door.schedulePath)
      let (text, rows) = try readImport(
        csvPath, listPath: path, limits: limits, keepText: options.flag("keep-text"), schedules: schedules, digester: digester)
      var plan = try ImportPlan(rows, text: text, csvPath: csvPath, digester: digester)
      if options.flag("remove-missing") { plan.removeMissing(rows) }
      try plan.appendAdded(listPath: path)
      var list = AllowList(limits: limits)
      if let error = list.validate(plan.text, digester: digester, schedules: schedules) { throw ImportRefusal("the result would not load (\(error))") }
      return try writeImport(plan, listPath: path, dryRun: options.flag("dry-run"))
    } catch {
      writeStandardError("scangate allow-list import: \(error.why); nothing written\n")
      return 1
    }
  }

  /// The allow-list's text (empty when there is no file yet) and the CSV file's rows, checked.
  static func readImport(
    _ csvPath: String, listPath path: String, limits: AllowListLimits, keepText: Bool, schedules: ScheduleReferences,
    digester: some PayloadDigester
  ) throws(ImportRefusal) -> (text: [UInt8], rows: [Row]) {
    let csvBytes: [UInt8]
    do { csvBytes = try readWholeFile(csvPath, maxBytes: limits.fileBytesMax) } catch { throw ImportRefusal("\(error)") }
    var text: [UInt8] = []
    if fileExists(path) {
      switch AllowListFile.read(path, maxBytes: limits.fileBytesMax) {
      case .success(let bytes): text = bytes
      case .failure(let failure): throw ImportRefusal("\(path): \(failure.error)")
      }
    }
    let records: [[String]]
    switch CSV.parseText(csvBytes, limits: CSV.Limits(fileBytesMax: limits.fileBytesMax, recordsMax: limits.entriesMax + 1)) {
    case .success(let r): records = r
    case .failure(let problem): throw ImportRefusal("\(csvPath): \(problem)")
    }
    switch checkRows(records, keepText: keepText, schedules: schedules, digester: digester) {
    case .success(let rows): return (text, rows)
    case .failure(let problem): throw ImportRefusal("\(csvPath): \(problem)")
    }
  }

  /// What an import does to the list: its text with changed entries replaced in place, the lines
  /// to append, and the labels added, changed and removed.
  struct ImportPlan {
    var text: [UInt8]
    /// The entries of the list as it was read (their line numbers hold: a change keeps its line).
    let existing: [AllowListEdit.Located]
    var appended: [String] = []
    var added: [String] = [], changed: [String] = [], removed: [String] = []
    var unchanged = 0

    /// Matches each row to the entry with its label: a new label is appended, a known one changed
    /// in place; a code already on the list under another label refuses the import.
    init(_ rows: [Row], text: [UInt8], csvPath: String, digester: some PayloadDigester) throws(ImportRefusal) {
      self.text = text
      existing = AllowListEdit.entries(text)
      let existingDigests = existing.map { AllowListCommand.digestOf($0.match, digester: digester) }
      for row in rows {
        var entry = row.entry
        let at = existing.firstIndex { $0.label == entry.label }
        if let digest = row.digest, let other = existingDigests.firstIndex(of: digest), existing[other].label != entry.label {
          throw ImportRefusal("\(csvPath): record \(row.record): this code is already on the list (line \(existing[other].line + 1))")
        }
        guard let at else {
          guard row.digest != nil else { throw ImportRefusal("\(csvPath): record \(row.record): no payload or sha256, and no entry has this label") }
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
    mutating func removeMissing(_ rows: [Row]) {
      let labels = Set(rows.map(\.entry.label))
      for gone in existing.reversed() where gone.label.map({ !labels.contains($0) }) ?? false {
        text = AllowListEdit.removingLine(gone.line, from: text)
        removed.append(gone.label!)
      }
      removed.reverse()
    }

    /// Appends the new entries' lines (refused when the list would grow past its limits).
    mutating func appendAdded(listPath path: String) throws(ImportRefusal) {
      for line in appended {
        switch AllowListEdit.appending(line, to: text) {
        case .success(let t): text = t
        case .failure(let refusal): throw ImportRefusal("\(path): \(refusal.reason)")
        }
      }
    }
  }

  /// Prints the labels added, changed and removed and a summary; unless a dry run (or there is
  /// nothing to change), writes the list with the file's mode.
  static func writeImport(_ plan: ImportPlan, listPath path: String, dryRun: Bool) throws(ImportRefusal) -> Int32 {
    for label in plan.added { print("\(dryRun ? "would add" : "added") \(label)") }
    for label in plan.changed { print("\(dryRun ? "would change" : "changed") \(label)") }
    for label in plan.removed { print("\(dryRun ? "would remove" : "removed") \(label)") }
    let summary = "\(plan.added.count) added, \(plan.changed.count) changed, \(plan.removed.count) removed, \(plan.unchanged) unchanged"
    if dryRun {
      print("dry run: \(summary); nothing written")
      return 0
    }
    guard !(plan.added.isEmpty && plan.changed.isEmpty && plan.removed.isEmpty) else {
      print("\(path): \(summary); nothing to write")
      return 0
    }
    var status = stat()
    let mode = (try? syscall("stat", { stat(path, &status) })) != nil ? UInt32(status.st_mode & 0o777) : 0o640
    do { try writeFileAtomically(path, plan.text, mode: mode) } catch { throw ImportRefusal("\(error)") }
    print("\(path): \(summary); the reader reloads it (allow_list.watch, systemctl reload scangate or RELOAD)")
    return 0
  }

  /// The rows as entries, or the first bad row (its record number; record 1 is the header).
  static func checkRows(
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
      rows.append(Row(record: n + 1, entry: entry, digest: digest))
    }
    return .success(rows)
  }

  /// The digest a match names (`sha256:` read, `text:` unescaped and hashed); nil when it does not decode.
  static func digestOf(_ match: String, digester: some PayloadDigester) -> Digest? {
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
    defer { SecretBytes.wipe(&payload) }
    return payload.withUnsafeBytes { digester.sha256($0) }
  }

  /// A payload as a `text:` entry writes it (docs/allow-list.md: `%XX` for what must be escaped,
  /// and for space, `%` and `#`).
  static func escaped(_ payload: [UInt8]) -> String {
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

  static func hex(_ digest: Digest) -> String { (0..<32).map { hexPair(digest.byte($0)) }.joined() }

  static func hexPair(_ b: UInt8) -> String {
    String(decoding: [Hex.digit(b >> 4), Hex.digit(b)], as: UTF8.self)
  }

  // MARK: - Export

  static func exportCSV(config: ScanConfig, keyPath: String?) -> Int32 {
    let path = config.allowListPath
    let text: [UInt8]
    switch AllowListFile.read(path, maxBytes: config.engine.allowList.fileBytesMax) {
    case .success(let bytes): text = bytes
    case .failure(let failure):
      writeStandardError("scangate allow-list export: \(path): \(failure.error)\n")
      return 1
    }
    // The tags are the reader's (its tag key, as `scangate tag`); without the key the column is empty.
    var tagKey: TagKey? = nil
    let keyFile = keyPath ?? (config.log.path.isEmpty ? nil : TagKey.defaultPath(forLog: config.log.path))
    if let keyFile {
      var directory = stat()
      let owner: uid_t? = stat(TagCommand.parentDirectory(keyFile), &directory) == 0 ? directory.st_uid : nil
      do { tagKey = try TagKey.load(keyFile, owner: owner) } catch {
        writeStandardError("scangate allow-list export: tag key \(error): the tag column is empty\n")
      }
    } else {
      writeStandardError("scangate allow-list export: no [log] path and no --key: the reader keeps no tag key, the tag column is empty\n")
    }
    let digester = SodiumDigester()
    var out = CSV.record(exportColumns)
    for entry in AllowListEdit.entries(text) {
      var values: [String: String] = [:]
      for field in entry.fields {
        guard let eq = field.firstIndex(of: "=") else { continue }
        values[String(field[..<eq])] = String(field[field.index(after: eq)...])
      }
      let tag = digestOf(entry.match, digester: digester).flatMap { d in tagKey.map { PayloadTag.hex($0.tag(d)) } } ?? ""
      let kind = entry.match.hasPrefix("text:") ? "text" : "sha256"
      // Made inert for spreadsheets (a label `+1 visitor` is text, not a formula); import reads it back.
      // The label as a spreadsheet holds it ("ivy smith" for the file's ivy%20smith): import escapes it again.
      let label = (entry.label ?? "").utf8
      let shown = (try? PayloadEscaping.unescape(label[...])).map { String(decoding: $0, as: UTF8.self) } ?? String(label)
      out += CSV.record(([shown] + [tag, kind] + exportColumns.dropFirst(3).map { values[$0] ?? "" }).map(CSV.inert))
    }
    print(out, terminator: "")
    return 0
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
