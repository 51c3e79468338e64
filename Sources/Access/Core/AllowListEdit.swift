import ScanBase

/// Edits of the allow-list file's text that keep everything an administrator wrote by hand:
/// comments, blank lines, the order of entries, CRLF line ends. An entry is added as one new
/// line at the end, removed or replaced as its one line; no other byte changes. Pure: the
/// caller reads the file, checks the result loads (`AllowList.validate`), writes it durably and
/// reloads (docs/allow-list.md, "Edits by the reader").
public enum AllowListEdit {
  /// One entry line of a file: where it is and what it names (as written: escaped).
  public struct Located: Equatable, Sendable {
    /// The line's index (0: the first line).
    public var line: Int
    /// `text:...` or `sha256:...`, as written.
    public var match: String
    /// The `label=` value as written (escaped), or nil.
    public var label: String?
    /// The key=value fields after the match, as written.
    public var fields: [String]
  }

  /// A field an edited entry carries, in the order lines are written.
  public struct Entry: Equatable, Sendable {
    /// `sha256:<64 hex digits>` or `text:<escaped payload>`.
    public var match: String
    public var label: String
    public var schedule = ""
    public var from = ""
    public var until = ""
    public var card = ""
    public var isStatic = false
    public var isLockdown = false
    /// The `pin=` verifier (64 hex digits), or empty.
    public var pin = ""
    public init(match: String, label: String) {
      self.match = match
      self.label = label
    }

    /// The entry's line, without its line break.
    public var line: String {
      var s = match + " label=" + label
      if !schedule.isEmpty { s += " schedule=" + schedule }
      if !from.isEmpty { s += " from=" + from }
      if !until.isEmpty { s += " until=" + until }
      if !card.isEmpty { s += " card=" + card }
      if isStatic { s += " static=yes" }
      if isLockdown { s += " lockdown=yes" }
      if !pin.isEmpty { s += " pin=" + pin }
      return s
    }
  }

  /// Why an edit was refused.
  public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
  }

  /// Whether `label` may be given to an entry added by the reader: 1 to 48 bytes of letters,
  /// digits, `.`, `_`, `-`, `@` and `+` (nothing to escape: the console, the file and a CSV show
  /// the same text).
  public static func isValidLabel<S: StringProtocol>(_ label: S) -> Bool {
    let bytes = label.utf8
    guard !bytes.isEmpty, bytes.count <= AllowListLimits.labelBytesMax else { return false }
    return bytes.allSatisfy { isLabelByte($0) }
  }

  /// Whether `bytes` is a label as the file, the console and a CSV show it: label bytes and `%XX`
  /// escapes of anything else (a spreadsheet's "ivy smith" is `ivy%20smith`), 1 to 48 bytes as
  /// shown. Allocates nothing (the console parses with it).
  public static func isShownLabel<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
    guard !bytes.isEmpty, bytes.count <= AllowListLimits.labelBytesMax else { return false }
    var i = bytes.startIndex
    while i != bytes.endIndex {
      let b = bytes[i]
      if b == UInt8(ascii: "%") {
        var digits = 0
        var j = bytes.index(after: i)
        while digits < 2, j != bytes.endIndex, Hex.value(of: bytes[j]) != nil {
          digits += 1
          j = bytes.index(after: j)
        }
        guard digits == 2 else { return false }
        i = j
        continue
      }
      guard isLabelByte(b) else { return false }
      i = bytes.index(after: i)
    }
    return true
  }

  /// A spreadsheet's name as a label: spaces at either end dropped, every byte that is not a
  /// label byte escaped as `%XX` (a space, `é`, a quote); nil when nothing is left or the shown
  /// form is over 48 bytes.
  public static func labelFromText(_ text: String) -> String? {
    var shown = ""
    for b in Array(text.utf8).drop(while: { $0 == 0x20 }).reversed().drop(while: { $0 == 0x20 }).reversed() {
      if isLabelByte(b) {
        shown.unicodeScalars.append(Unicode.Scalar(b))
      } else {
        shown += "%" + String(decoding: [Hex.digit(b >> 4), Hex.digit(b)], as: UTF8.self).uppercased()
      }
    }
    return isShownLabel(shown.utf8) ? shown : nil
  }

  /// A byte `isValidLabel` accepts.
  public static func isLabelByte(_ b: UInt8) -> Bool {
    switch b {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E, 0x5F, 0x2D, 0x40, 0x2B: true
    default: false
    }
  }

  /// The lines of `text` (split on LF; each keeps a CR it has). A final empty piece after the
  /// last LF is not a line.
  static func lines(_ text: [UInt8]) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var start = 0
    while start < text.count {
      var end = start
      while end < text.count && text[end] != 0x0A { end += 1 }
      result.append(text[start..<end])
      start = end + 1
    }
    return result
  }

  /// Every entry line of `text`, read as the parser reads it (comments cut at `#`, fields split
  /// on spaces and tabs). Lines that do not decode are skipped: the file is checked whole later.
  public static func entries(_ text: [UInt8]) -> [Located] {
    var found: [Located] = []
    for (index, raw) in lines(text).enumerated() {
      var line = raw
      if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
      if line.last == 0x0D { line = line.dropLast() }
      guard let string = String(validating: line, as: UTF8.self) else { continue }
      let words = string.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard let match = words.first else { continue }
      let fields = words.dropFirst().map(String.init)
      let label = fields.first { $0.hasPrefix("label=") }.map { String($0.dropFirst(6)) }
      found.append(Located(line: index, match: String(match), label: label, fields: fields))
    }
    return found
  }

  /// The entry labelled `label` (as written), if any.
  public static func entry(labelled label: String, in text: [UInt8]) -> Located? {
    entries(text).first { $0.label == label }
  }

  /// `text` with `line` added as a new last line. A file whose last line has no line break
  /// (refused by the parser as cut short) is refused here too: nothing is guessed.
  public static func appending(_ line: String, to text: [UInt8]) -> Result<[UInt8], Refusal> {
    if let last = text.last, last != 0x0A {
      return .failure(Refusal("the allow-list file does not end with a newline (cut short?): fix it by hand first"))
    }
    // Keep the file's own line ends: CRLF when its lines end so.
    let crlf = text.count >= 2 && text[text.count - 2] == 0x0D
    return .success(text + Array(line.utf8) + (crlf ? [0x0D, 0x0A] : [0x0A]))
  }

  /// `text` without line `index` (and its line break). When no entry is left, the line that
  /// says the list is meant to be empty is added, so the file still loads (as an empty list).
  public static func removingLine(_ index: Int, from text: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(text.count)
    for (k, line) in lines(text).enumerated() where k != index {
      out += line
      out.append(0x0A)
    }
    if entries(out).isEmpty && !lines(out).contains(where: { AllowListParser.isEmptyMarker($0) }) {
      out += Array((AllowListParser.emptyMarker + "\n").utf8)
    }
    return out
  }

  /// `text` with line `index` replaced by `line` (a comment at its end and its CR kept).
  public static func replacingLine(_ index: Int, with line: String, in text: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(text.count + line.utf8.count)
    for (k, old) in lines(text).enumerated() {
      if k == index {
        out += Array(line.utf8)
        var rest = old
        if rest.last == 0x0D { rest = rest.dropLast() }
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { out += [0x20] + rest[hash...] }
        if old.last == 0x0D { out.append(0x0D) }
      } else {
        out += old
      }
      out.append(0x0A)
    }
    return out
  }
}
