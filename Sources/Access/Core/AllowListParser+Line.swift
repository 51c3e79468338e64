import ScanBase

// MARK: One line of the allow-list

extension AllowListParser {
  /// Adds the entry on `raw` (one line without its newline) to `table`; nil for a blank or
  /// comment line too.
  static func parseLine(
    _ raw: ArraySlice<UInt8>, lineNumber: Int, limits: AllowListLimits, digester: some PayloadDigester,
    schedules: ScheduleReferences = .notLoaded, into table: inout AllowListTable
  ) -> AllowListError? {
    var line = raw
    if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
    if line.last == 0x0D { line = line.dropLast() }
    guard let string = String(validating: line, as: UTF8.self) else {
      return AllowListError(line: lineNumber, reason: "not valid UTF-8")
    }
    let fields = string.split(whereSeparator: { $0 == " " || $0 == "\t" })
    guard let match = fields.first else { return nil }  // blank or comment
    func fail(_ why: String) -> AllowListError { AllowListError(line: lineNumber, reason: why) }
    for scalar in string.unicodeScalars where scalar.value < 0x20 && scalar != "\t" && scalar != "\r" {
      return fail("control character in line (escape payload bytes as %XX)")
    }
    let digest: Digest
    switch entryDigest(match, digester: digester) {
    case .success(let d): digest = d
    case .failure(let problem): return fail(problem.reason)
    }
    let entry: EntryFields
    switch entryFields(fields.dropFirst(), schedules: schedules) {
    case .success(let e): entry = e
    case .failure(let problem): return fail(problem.reason)
    }
    if entry.from != .min && entry.until != .max && entry.until <= entry.from { return fail("until is not after from") }
    if table.count >= limits.entriesMax { return fail("more than \(limits.entriesMax) entries (allow_list.entries_max)") }
    if !table.insert(
      digest, from: entry.from, until: entry.until, label: entry.label, schedule: entry.schedule, card: entry.card, isStatic: entry.isStatic,
      isLockdown: entry.isLockdown, pin: entry.pin)
    {
      return fail("duplicate entry")
    }
    return nil
  }

  /// Why a line was refused, before its line number is added.
  private struct LineProblem: Error {
    var reason: String
  }

  /// The digest an entry (`text:` with its escaped payload, or `sha256:` and 64 hex digits) names.
  private static func entryDigest(_ match: Substring, digester: some PayloadDigester) -> Result<Digest, LineProblem> {
    if match.hasPrefix("text:") {
      let bytes: [UInt8]
      switch unescape(match.dropFirst(5)) {
      case .success(let b): bytes = b
      case .failure(let problem): return .failure(LineProblem(reason: "text: " + problem.reason))
      }
      if bytes.isEmpty { return .failure(LineProblem(reason: "empty payload after text:")) }
      return .success(bytes.withUnsafeBytes { digester.sha256($0) })
    } else if match.hasPrefix("sha256:") {
      let hex = Array(match.dropFirst(7).utf8)
      guard hex.count == 64 else { return .failure(LineProblem(reason: "sha256: wants 64 hex digits, got \(hex.count)")) }
      var bytes = [UInt8](repeating: 0, count: 32)
      let decoded = hex.withUnsafeBytes { text in
        bytes.withUnsafeMutableBytes { out in Result { () throws(Hex.DecodeError) in try Hex.decode(text, into: out) } }
      }
      guard case .success = decoded else { return .failure(LineProblem(reason: "sha256: a character is not a hex digit")) }
      return .success(bytes.withUnsafeBytes { Digest(bytes: $0) })
    } else {
      return .failure(LineProblem(reason: "entry must start with text: or sha256:"))
    }
  }

  /// The key=value fields after an entry.
  private struct EntryFields {
    var from = Int64.min, until = Int64.max
    var label: [UInt8] = []
    var schedule: UInt64 = 0
    var card: CardNumber? = nil
    var isStatic = false
    var isLockdown = false
    var pin: Digest? = nil
  }

  /// Reads the fields after the entry; each known key at most once.
  private static func entryFields(_ fields: ArraySlice<Substring>, schedules: ScheduleReferences) -> Result<EntryFields, LineProblem> {
    func fail(_ why: String) -> Result<EntryFields, LineProblem> { .failure(LineProblem(reason: why)) }
    var entry = EntryFields()
    var seen: Set<Substring> = []
    for field in fields {
      guard let eq = field.firstIndex(of: "=") else {
        return fail("a field after the entry is not key=value (a space in a payload is written %20)")
      }
      let key = field[..<eq], value = field[field.index(after: eq)...]
      // Only a known key is ever named back: anything else on the line may be part of a pass.
      guard let known = knownKeys.first(where: { $0 == key }) else { return fail("unknown key (known: \(knownKeys.joined(separator: ", ")))") }
      guard seen.insert(key).inserted else { return fail("key \(known) given twice") }
      switch key {
      case "label":
        guard value.utf8.count <= AllowListLimits.labelBytesMax else {
          return fail("label longer than \(AllowListLimits.labelBytesMax) bytes")
        }
        // Held as the name it stands for (label=ivy%20smith is "ivy smith"): every place it
        // leaves the reader escapes it once (an event line, LIST), never twice.
        switch unescape(value) {
        case .failure(let problem): return fail("label: " + problem.reason)
        case .success(let name): entry.label = name
        }
      case "from":
        do { entry.from = try RFC3339.parse(value) } catch { return fail("from: " + timeProblem(error, value)) }
      case "until":
        do { entry.until = try RFC3339.parse(value) } catch { return fail("until: " + timeProblem(error, value)) }
      case "schedule":
        guard ScheduleSet.validName(String(value)) else { return fail("schedule: names are 1 to 32 of a-z, 0-9, '-', '_'") }
        // A name that resolves to nothing would deny this person at every scan: refused here.
        if let problem = schedules.problem(value) { return fail(problem) }
        entry.schedule = ScheduleKey.of(value.utf8)
      case "card":
        do throws(CardNumber.Invalid) { entry.card = try CardNumber(parsing: value) } catch { return fail("card: \(error.message)") }
      case "static":
        guard value == "yes" || value == "no" else { return fail("static: yes or no") }
        entry.isStatic = value == "yes"
      case "lockdown":
        guard value == "yes" || value == "no" else { return fail("lockdown: yes or no") }
        entry.isLockdown = value == "yes"
      case "pin":
        // A keyed hash (`scangate keypad pin`), never a PIN: 64 hex digits.
        guard let pin = Digest(hex: value) else { return fail("pin: 64 hex digits (made by scangate keypad pin), never the PIN itself") }
        entry.pin = pin
      default:
        return fail("unknown key (known: \(knownKeys.joined(separator: ", ")))")
      }
    }
    return .success(entry)
  }

  static let knownKeys = ["label", "from", "until", "schedule", "card", "static", "lockdown", "pin"]

  /// Why an escaped field did not decode, in words that hold no byte of it.
  struct EscapeProblem: Error {
    var reason: String
  }

  /// The bytes of percent-escaped `text` (strict: what must be escaped must be).
  static func unescape(_ text: Substring) -> Result<[UInt8], EscapeProblem> {
    let escaped = Array(text.utf8)
    var bytes = [UInt8](repeating: 0, count: escaped.count)
    let decoded = escaped.withUnsafeBytes { e in
      bytes.withUnsafeMutableBytes { b in
        Result { () throws(PercentCodec.DecodeError) in try PercentCodec.decode(e, into: b, strict: true) }
      }
    }
    switch decoded {
    case .success(let count):
      bytes.removeLast(bytes.count - count)
      return .success(bytes)
    case .failure(.unescapedByte):
      return .failure(EscapeProblem(reason: "a byte that must be written as a %XX escape is not (control bytes, non-ASCII)"))
    case .failure:
      return .failure(EscapeProblem(reason: "bad percent escape (want %XX with two hex digits)"))
    }
  }

  /// Why a time did not parse, without the text itself (the parser's message quotes it).
  static func timeProblem(_ error: ParseError, _ value: Substring) -> String {
    let quoted = "bad RFC 3339 time '\(value)': "
    guard error.message.hasPrefix(quoted) else { return "not an RFC 3339 time (YYYY-MM-DDTHH:MM:SS with Z or ±HH:MM)" }
    return "not an RFC 3339 time: " + error.message.dropFirst(quoted.count)
  }
}
