/// What `ChokepointTests` reads: a Swift file with its comments and string literals blanked
/// (newlines kept), and the calls in what is left. A call is a name followed by "(" that is not a method (`x.name(`, but
/// `Glibc.name(` is a call), not a declaration (`func name(`, `case name(`), has no argument
/// labels and no trailing closure, and has one of the C function's argument counts.
struct SwiftSource {
  struct Call: Equatable {
    let line: Int
    let name: String
  }

  let code: [UInt8]

  init(_ text: [UInt8]) { code = Self.blanked(text) }

  /// The calls of `checked` names, in order; unless `routedOrNot`, only those outside the
  /// parentheses (or trailing closure) of `syscall(...)` and `syscallRetrying(...)`.
  func calls(routedOrNot: Bool, checked: [String: Set<Int>] = ChokepointTests.checked) -> [Call] {
    let routed = routedOrNot ? [] : spans(of: ["syscall", "syscallRetrying"])
    var found: [Call] = []
    var line = 1
    var i = 0
    while i < code.count {
      if code[i] == UInt8(ascii: "\n") { line += 1 }
      guard let (name, open) = freeCall(at: i) else {
        i += 1
        continue
      }
      if let counts = checked[name], let (arguments, close) = arguments(at: open), counts.contains(arguments.count),
        !arguments.contains(where: Self.isLabelled), !startsBlock(after: close), !routed.contains(where: { $0.contains(open) })
      {
        found.append(Call(line: line, name: name))
      }
      i = open
    }
    return found
  }

  /// The lines of every free call of `name`, whatever its arguments (a Swift function's).
  func lines(ofCallsTo name: String) -> [Int]? {
    var lines: [Int] = []
    var line = 1
    for i in code.indices {
      if code[i] == UInt8(ascii: "\n") { line += 1 }
      if let (found, _) = freeCall(at: i), found == name { lines.append(line) }
    }
    return lines.isEmpty ? nil : lines
  }

  /// The name and the index of its "(" when a free call's name starts at `i`.
  func freeCall(at i: Int) -> (String, Int)? {
    guard Self.isIdentifier(code[i]), !Self.isDigit(code[i]), i == 0 || !Self.isIdentifier(code[i - 1]) else { return nil }
    var open = i
    while open < code.count && Self.isIdentifier(code[open]) { open += 1 }
    guard open < code.count, code[open] == UInt8(ascii: "(") else { return nil }
    if i > 0 && code[i - 1] == UInt8(ascii: ".") {
      guard i >= 6, String(decoding: code[(i - 6)..<(i - 1)], as: UTF8.self) == "Glibc" else { return nil }
    } else if ["func", "case"].contains(previousWord(before: i)) {
      return nil
    }
    return (String(decoding: code[i..<open], as: UTF8.self), open)
  }

  /// The word just before `i` (spaces skipped).
  func previousWord(before i: Int) -> String {
    var end = i
    while end > 0 && (code[end - 1] == UInt8(ascii: " ") || code[end - 1] == UInt8(ascii: "\t")) { end -= 1 }
    var start = end
    while start > 0 && Self.isIdentifier(code[start - 1]) { start -= 1 }
    return String(decoding: code[start..<end], as: UTF8.self)
  }

  /// The top-level arguments of the parentheses opening at `open`, trimmed, and the index of
  /// the closing one.
  func arguments(at open: Int) -> ([[UInt8]], Int)? {
    var arguments: [[UInt8]] = []
    var current: [UInt8] = []
    var depth = 0
    for i in open..<code.count {
      let c = code[i]
      if c == UInt8(ascii: "(") || c == UInt8(ascii: "[") || c == UInt8(ascii: "{") { depth += 1 }
      if c == UInt8(ascii: ")") || c == UInt8(ascii: "]") || c == UInt8(ascii: "}") { depth -= 1 }
      if depth == 0 {
        let last = Self.trimmed(current)
        if !last.isEmpty || !arguments.isEmpty { arguments.append(last) }
        return (arguments, i)
      }
      if depth == 1 && c == UInt8(ascii: ",") {
        arguments.append(Self.trimmed(current))
        current = []
      } else if i > open {
        current.append(c)
      }
    }
    return nil
  }

  /// Whether a "{" follows `close` on its line (a trailing closure, or an `if name(...) {`,
  /// which a C function's Int result cannot be).
  func startsBlock(after close: Int) -> Bool {
    var i = close + 1
    while i < code.count && (code[i] == UInt8(ascii: " ") || code[i] == UInt8(ascii: "\t")) { i += 1 }
    return i < code.count && code[i] == UInt8(ascii: "{")
  }

  /// The index ranges inside the parentheses, and any trailing closure, of calls of `names`.
  func spans(of names: Set<String>) -> [Range<Int>] {
    var spans: [Range<Int>] = []
    for i in code.indices {
      guard let (name, open) = freeCall(at: i), names.contains(name), let (_, close) = arguments(at: open) else { continue }
      var end = close
      if startsBlock(after: close), let (_, closure) = arguments(at: code[close...].firstIndex(of: UInt8(ascii: "{"))!) { end = closure }
      spans.append(open..<end)
    }
    return spans
  }

  static func isIdentifier(_ c: UInt8) -> Bool {
    (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || isDigit(c)
      || c == UInt8(ascii: "_")
  }
  static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

  /// An argument that starts `label:`.
  static func isLabelled(_ argument: [UInt8]) -> Bool {
    var i = 0
    while i < argument.count && isIdentifier(argument[i]) { i += 1 }
    while i < argument.count && argument[i] == UInt8(ascii: " ") { i += 1 }
    return i > 0 && i < argument.count && argument[i] == UInt8(ascii: ":") && (i + 1 == argument.count || argument[i + 1] != UInt8(ascii: ":"))
  }

  static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
    let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n")]
    guard let first = bytes.firstIndex(where: { !blank.contains($0) }), let last = bytes.lastIndex(where: { !blank.contains($0) }) else { return [] }
    return Array(bytes[first...last])
  }

  // MARK: Blanking

  /// `text` with comments and string literals (interpolations included) turned to spaces.
  static func blanked(_ text: [UInt8]) -> [UInt8] {
    var code = text
    var i = 0
    while i < text.count {
      let end: Int
      if startsComment(text, i, "//") {
        end = text[i...].firstIndex(of: UInt8(ascii: "\n")) ?? text.count
      } else if startsComment(text, i, "/*") {
        end = blockCommentEnd(text, i)
      } else if startsString(text, i) {
        end = stringEnd(text, i)
      } else {
        i += 1
        continue
      }
      for k in i..<end where code[k] != UInt8(ascii: "\n") { code[k] = UInt8(ascii: " ") }
      i = end
    }
    return code
  }

  static func startsComment(_ s: [UInt8], _ i: Int, _ opener: StaticString) -> Bool {
    i + 1 < s.count && s[i] == opener.utf8Start[0] && s[i + 1] == opener.utf8Start[1]
  }

  /// A `"` or the `#`s before a raw string's `"`.
  static func startsString(_ s: [UInt8], _ i: Int) -> Bool {
    var k = i
    while k < s.count && s[k] == UInt8(ascii: "#") { k += 1 }
    return k < s.count && s[k] == UInt8(ascii: "\"") && (k == i || i == 0 || !isIdentifier(s[i - 1]))
  }

  /// Just past a block comment (they nest) starting at `start`.
  static func blockCommentEnd(_ s: [UInt8], _ start: Int) -> Int {
    var depth = 0
    var i = start
    while i + 1 < s.count {
      if startsComment(s, i, "/*") {
        depth += 1
        i += 2
      } else if startsComment(s, i, "*/") {
        depth -= 1
        i += 2
        if depth == 0 { return i }
      } else {
        i += 1
      }
    }
    return s.count
  }

  /// Just past the string literal (plain, multi-line or raw) starting at `start`.
  static func stringEnd(_ s: [UInt8], _ start: Int) -> Int {
    var i = start
    var hashes = 0
    while s[i] == UInt8(ascii: "#") {
      hashes += 1
      i += 1
    }
    let quotes = i + 2 < s.count && s[i + 1] == UInt8(ascii: "\"") && s[i + 2] == UInt8(ascii: "\"") ? 3 : 1
    i += quotes
    while i < s.count {
      if s[i] == UInt8(ascii: "\\") {
        let open = i + 1 + hashes
        if open < s.count && s[open] == UInt8(ascii: "(") && (0..<hashes).allSatisfy({ s[i + 1 + $0] == UInt8(ascii: "#") }) {
          i = interpolationEnd(s, open + 1)
        } else {
          i += hashes == 0 ? 2 : 1
        }
        continue
      }
      if (0..<quotes).allSatisfy({ i + $0 < s.count && s[i + $0] == UInt8(ascii: "\"") })
        && (0..<hashes).allSatisfy({ i + quotes + $0 < s.count && s[i + quotes + $0] == UInt8(ascii: "#") })
      {
        return i + quotes + hashes
      }
      i += 1
    }
    return s.count
  }

  /// Just past the ")" that ends an interpolation whose code starts at `start`.
  static func interpolationEnd(_ s: [UInt8], _ start: Int) -> Int {
    var depth = 1
    var i = start
    while i < s.count {
      if startsString(s, i) {
        i = stringEnd(s, i)
        continue
      }
      if s[i] == UInt8(ascii: "(") { depth += 1 }
      if s[i] == UInt8(ascii: ")") {
        depth -= 1
        if depth == 0 { return i + 1 }
      }
      i += 1
    }
    return s.count
  }
}
