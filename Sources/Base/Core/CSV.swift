/// RFC 4180 comma-separated values, read strictly and within bounds, written so that any reader
/// of the RFC (Python's `csv`, spreadsheets) reads back exactly the fields written.
///
/// Reading: fields are separated by commas and records by CRLF or LF; a field that starts with a
/// double quote runs to the matching quote, with `""` standing for one quote, and may hold
/// commas, CR and LF. Everything else is refused whole, naming the record (never its text: a
/// row may hold a pass): a quote inside an unquoted field, text after a closing quote, a bare CR,
/// an unterminated quoted field, and every bound (file bytes, records, fields, field bytes).
/// Blank lines are skipped (as Python's reader does); a UTF-8 byte order mark at the start is
/// dropped (spreadsheets write one). The last record may end without a line break.
public enum CSV {
  /// The bounds a file is read within.
  public struct Limits: Equatable, Sendable {
    public var fileBytesMax: Int
    public var recordsMax: Int
    public var fieldsMax: Int
    public var fieldBytesMax: Int
    public init(fileBytesMax: Int = 8 << 20, recordsMax: Int = 100_001, fieldsMax: Int = 32, fieldBytesMax: Int = 8_192) {
      precondition(fileBytesMax > 0 && recordsMax > 0 && fieldsMax > 0 && fieldBytesMax > 0)
      self.fileBytesMax = fileBytesMax
      self.recordsMax = recordsMax
      self.fieldsMax = fieldsMax
      self.fieldBytesMax = fieldBytesMax
    }
  }

  /// Why a file was refused: the record (1 is the first, blank lines not counted; 0: the whole
  /// file) and the rule it breaks, without any of its text.
  public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
    public var record: Int
    public var reason: String
    public init(record: Int, reason: String) {
      self.record = record
      self.reason = reason
    }
    public var description: String { record > 0 ? "record \(record): \(reason)" : reason }
  }

  private enum State {
    case fieldStart, unquoted, quoted, quoteInQuoted
  }

  /// The records of `bytes`, each a list of fields (raw bytes), or why the file is refused.
  public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) -> Result<[[[UInt8]]], Problem> {
    guard bytes.count <= limits.fileBytesMax else {
      return .failure(Problem(record: 0, reason: "file is \(bytes.count) bytes, over the \(limits.fileBytesMax)-byte limit"))
    }
    var p = Parser(limits: limits)
    var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    while i < bytes.count {
      let b = bytes[i]
      i += 1
      // A line break: LF, or CR that must be followed by LF (outside quotes).
      if p.state != .quoted && (b == 0x0A || b == 0x0D) {
        if b == 0x0D {
          guard i < bytes.count, bytes[i] == 0x0A else { return p.fail("a CR that is not part of a CRLF line break") }
          i += 1
        }
        if let reason = p.endLine() { return p.fail(reason) }
        continue
      }
      if let reason = p.step(b) { return p.fail(reason) }
      if p.field.count > limits.fieldBytesMax { return p.fail("a field longer than \(limits.fieldBytesMax) bytes") }
    }
    if p.state == .quoted { return p.fail("a quoted field that is never closed") }
    if p.state != .fieldStart || !p.record.isEmpty, let reason = p.endLine() { return p.fail(reason) }
    return .success(p.records)
  }

  /// The parser's state between bytes: the records so far, the record and field being read.
  private struct Parser {
    let limits: Limits
    var records: [[[UInt8]]] = []
    var record: [[UInt8]] = []
    var field: [UInt8] = []
    var state = State.fieldStart
    /// The record's first field was quoted (a `""` line is not blank).
    var quotedSeen = false

    init(limits: Limits) { self.limits = limits }

    /// The refusal, naming the record being read.
    func fail(_ reason: String) -> Result<[[[UInt8]]], Problem> { .failure(Problem(record: records.count + 1, reason: reason)) }

    /// Ends the field; false when the record has too many.
    mutating func endField() -> Bool {
      guard record.count < limits.fieldsMax else { return false }
      record.append(field)
      field.removeAll(keepingCapacity: true)
      return true
    }

    /// Ends the record (a blank line ends none); false when there are too many.
    mutating func endRecord() -> Bool {
      defer {
        record.removeAll()
        quotedSeen = false
      }
      if record.count == 1 && record[0].isEmpty && !quotedSeen { return true }  // a blank line
      guard records.count < limits.recordsMax else { return false }
      records.append(record)
      return true
    }

    /// Why a record is refused for its field count (made only when it is).
    var tooManyFields: String { "more than \(limits.fieldsMax) fields" }

    /// A line break outside quotes: the field and the record end; why not when a limit is hit.
    mutating func endLine() -> String? {
      guard endField() else { return tooManyFields }
      guard endRecord() else { return "more than \(limits.recordsMax) records" }
      state = .fieldStart
      return nil
    }

    /// One byte that is not a line break outside quotes; why the file is refused, or nil.
    mutating func step(_ b: UInt8) -> String? {
      switch state {
      case .fieldStart:
        if b == 0x22 {
          state = .quoted
          if record.isEmpty { quotedSeen = true }
        } else if b == 0x2C {
          guard endField() else { return tooManyFields }
        } else {
          field.append(b)
          state = .unquoted
        }
      case .unquoted:
        if b == 0x2C {
          guard endField() else { return tooManyFields }
          state = .fieldStart
        } else if b == 0x22 {
          return "a double quote inside a field that does not start with one (quote the whole field)"
        } else {
          field.append(b)
        }
      case .quoted:
        if b == 0x22 { state = .quoteInQuoted } else { field.append(b) }
      case .quoteInQuoted:
        if b == 0x22 {
          field.append(b)
          state = .quoted
        } else if b == 0x2C {
          guard endField() else { return tooManyFields }
          state = .fieldStart
        } else {
          return "text after the closing quote of a field"
        }
      }
      return nil
    }
  }

  /// The records of `bytes` as text: as `parse`, and every field must be valid UTF-8.
  public static func parseText(_ bytes: [UInt8], limits: Limits = Limits()) -> Result<[[String]], Problem> {
    switch parse(bytes, limits: limits) {
    case .failure(let problem): return .failure(problem)
    case .success(let records):
      var text: [[String]] = []
      text.reserveCapacity(records.count)
      for (n, record) in records.enumerated() {
        var fields: [String] = []
        for field in record {
          guard let s = String(validating: field, as: UTF8.self) else {
            return .failure(Problem(record: n + 1, reason: "a field is not valid UTF-8"))
          }
          fields.append(s)
        }
        text.append(fields)
      }
      return .success(text)
    }
  }

  /// One field as written: quoted (quotes doubled) when it holds a comma, a quote, CR or LF,
  /// starts or ends with a space, or starts with U+FEFF (unquoted at the start of a file the
  /// reader would take it for the byte order mark and drop it: found by the fuzz harness).
  public static func field(_ text: String) -> String {
    let needsQuotes =
      text.utf8.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }
      || text.utf8.first == 0x20 || text.utf8.last == 0x20 || text.unicodeScalars.first == "\u{FEFF}"
    guard needsQuotes else { return text }
    var out = "\""
    for c in text.unicodeScalars {
      if c == "\"" { out += "\"\"" } else { out.unicodeScalars.append(c) }
    }
    return out + "\""
  }

  /// One record as written, with its CRLF (RFC 4180's line break; Python's default too).
  public static func record(_ fields: [String]) -> String { fields.map(field).joined(separator: ",") + "\r\n" }

  /// A spreadsheet evaluates a cell starting with `=`, `+`, `-`, `@`, TAB or CR as a formula:
  /// such text (a label, a payload someone printed) is written with a leading `'` in files meant
  /// for people (OWASP's advice for CSV injection). Not for files meant to be read back.
  /// Text that already starts with `'` and a formula character gets one more `'`, so that
  /// `readInert` gives back exactly what was written (`allow-list export` → `import`).
  public static func inert(_ text: String) -> String {
    let bytes = Array(text.utf8.prefix(2))
    guard let first = bytes.first else { return text }
    if isFormulaStart(first) { return "'" + text }
    if first == 0x27 && bytes.count == 2 && (isFormulaStart(bytes[1]) || bytes[1] == 0x27) { return "'" + text }
    return text
  }

  /// A cell written by `inert`, as it was before: one leading `'` before a formula character
  /// (or before another `'` that `inert` doubled) is dropped; anything else is unchanged.
  public static func readInert(_ cell: String) -> String {
    let bytes = Array(cell.utf8.prefix(2))
    guard bytes.count == 2, bytes[0] == 0x27, isFormulaStart(bytes[1]) || bytes[1] == 0x27 else { return cell }
    return String(cell.dropFirst())
  }

  private static func isFormulaStart(_ b: UInt8) -> Bool { b == 0x3D || b == 0x2B || b == 0x2D || b == 0x40 || b == 0x09 || b == 0x0D }
}
