import ScanCore

/// Every line the console sends fits an 80-column terminal (a technician's serial console):
/// a body (`| `) or event (`! `) line longer than that is folded, in place in the buffer it was
/// written to, into continuation lines that begin with its marker and three spaces:
///
///     | fleet connected to broker.example:8883 as door-1;
///     |   acknowledged through #12 of log 40 (28 to send);
///     |   last contact 2026-12-02T10:00:00Z
///
/// A line that does not fit is broken at every `; ` (a field per line), and a field still too
/// long at the last `, ` or space that fits (ConsoleLayout.lastSpace); a token longer than a line (a long path) is cut
/// and its line ends with `\`. Joined back (`join`), the text is exactly what was written. OK and
/// ERR lines are never folded (a client reads up to the first): they are kept short where
/// they are written. Nothing is allocated: the loop's thread sends every reply.
public enum ConsoleLayout {
  /// The widest line sent, in columns (bytes: console text is ASCII).
  public static let columns = 80
  /// What a continuation line begins with: the marker, then this many spaces.
  public static let indent = 3

  /// Folds every body and event line written since `start` to `width` columns; returns the
  /// lines from `start` on (so a reply's count is of the lines sent). When the buffer cannot
  /// take the continuation prefixes, `w.overflowed` is set as for any write that does not fit.
  @discardableResult
  public static func fold(_ w: inout ByteWriter, from start: Int, width: Int = columns) -> Int {
    var lines = 0
    var i = start
    while i < w.count {
      var end = i
      while end < w.count && w.buffer[end] != 0x0A { end += 1 }
      let marker = w.buffer[i]
      if end - i > width && (marker == UInt8(ascii: "|") || marker == UInt8(ascii: "!")) {
        guard let folded = foldLine(&w, from: i, to: end, width: width) else { return lines }
        lines += folded.lines - 1
        end = folded.end
      }
      lines += 1
      i = end + 1
    }
    return lines
  }

  /// Folds the one line [start, end) (end: its newline or the end of what is written); nil when
  /// the buffer is full. Returns the physical lines it became and where its last one ends.
  static func foldLine(_ w: inout ByteWriter, from start: Int, to lineEnd: Int, width columns: Int) -> (lines: Int, end: Int)? {
    let pipe = w.buffer[start] == UInt8(ascii: "|")
    var end = lineEnd
    var p = start
    var lines = 1
    while true {
      let content = p + (p == start ? 2 : 1 + indent)  // after `| ` or `|   `
      let fieldBreak = firstSpace(after: "; ", in: w, from: content, to: min(end, p + columns + 1))
      if fieldBreak == nil && end - p <= columns { return (lines, end) }
      let cut: Int
      var hard = false
      if let s = fieldBreak {
        cut = s
      } else if let s = lastSpace(in: w, from: content, to: p + columns, half: p + columns / 2) {
        cut = s
      } else {
        cut = p + columns - 1  // a token longer than a line: cut, the line ends with `\`
        hard = true
      }
      let inserted = hard ? insertCut(&w, at: cut, pipe: pipe) : insertBreak(&w, at: cut, pipe: pipe)
      guard inserted > 0 else { return nil }
      end += inserted
      p = cut + (hard ? 2 : 1)
      lines += 1
    }
  }

  /// The space of the first `separator` (`; `) in [from, to), when the text before it is not
  /// empty; a space after a `\` is never a break (a line ending in `\` is a cut).
  static func firstSpace(after separator: StaticString, in w: borrowing ByteWriter, from: Int, to: Int) -> Int? {
    let mark = separator.utf8Start[0]
    var i = from + 1
    while i + 1 < to && i + 1 < w.count {
      if w.buffer[i] == mark && w.buffer[i + 1] == 0x20 { return i + 1 }
      i += 1
    }
    return nil
  }

  /// The space in (from, to] that best ends a line, searched from the right: after a `, `;
  /// else before a word that does not follow a number (`ms used`, not `8.00 ms`); else before a
  /// word (a name keeps its value: `trips 0`); else any. The first three only at or past
  /// `half`, so a line is not left short. Never the first content byte, never after a `\`.
  static func lastSpace(in w: borrowing ByteWriter, from: Int, to: Int, half: Int) -> Int? {
    var best: (rank: Int, at: Int)? = nil
    var i = min(to, w.count - 1)
    while i > from {
      let before = w.buffer[i - 1]
      if w.buffer[i] == 0x20 && before != UInt8(ascii: "\\") && before != 0x20 && i + 1 < w.count {
        let word = !isDigit(w.buffer[i + 1])
        var rank = 3
        if i >= half {
          if before == UInt8(ascii: ",") { rank = 0 } else if word && !followsNumber(w, i, from) { rank = 1 } else if word { rank = 2 }
        }
        if rank == 0 { return i }
        if best == nil || rank < best!.rank { best = (rank, i) }
      }
      i -= 1
    }
    return best?.at
  }

  static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

  /// Whether the word before the space at `space` is a number (`8.00`, `45`).
  static func followsNumber(_ w: borrowing ByteWriter, _ space: Int, _ from: Int) -> Bool {
    var i = space - 1
    var digits = 0
    while i > from && w.buffer[i] != 0x20 {
      if isDigit(w.buffer[i]) { digits += 1 } else if w.buffer[i] != UInt8(ascii: ".") { return false }
      i -= 1
    }
    return digits > 0
  }

  /// The space at `at` becomes the line's end and a continuation prefix follows; returns the
  /// bytes added (0: no room).
  static func insertBreak(_ w: inout ByteWriter, at: Int, pipe: Bool) -> Int {
    w.buffer[at] = 0x0A
    guard w.insert(pipe ? "|   " : "!   ", at: at + 1) else {
      w.buffer[at] = 0x20
      return 0
    }
    return 1 + indent
  }

  /// A cut inside a token at `at`: `\`, the line's end and a continuation prefix are put there.
  static func insertCut(_ w: inout ByteWriter, at: Int, pipe: Bool) -> Int {
    w.insert(pipe ? "\\\n|   " : "\\\n!   ", at: at) ? 3 + indent : 0
  }

  /// A folded reply's text with its continuation lines joined back: what was written before
  /// `fold`. For tests and tools that look for a phrase within one line.
  public static func join(_ text: String) -> String {
    var out = ""
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if let first = line.first, first == "|" || first == "!", line.dropFirst().prefix(indent) == "   ",
        let last = out.last, last != "\n"
      {
        if out.hasSuffix("\\") { out.removeLast() } else { out += " " }
        out += line.dropFirst(1 + indent)
      } else {
        if !out.isEmpty { out += "\n" }
        out += line
      }
    }
    return out
  }
}
