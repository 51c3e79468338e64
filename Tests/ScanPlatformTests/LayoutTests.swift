import ScanLinux
import ScanTestSupport
import Testing

/// The layout's size limits, held by a test rather than by convention: no Swift file under
/// Sources/ over 400 lines, no function or initializer over 70 (from its `func` line to
/// its closing brace, comments and blank lines included, as a reader scrolls it).
@Suite struct LayoutTests {
  static let fileLinesMax = 400
  static let functionLinesMax = 70

  /// A declaration with a body: its name, first line and length in lines.
  struct Body: Equatable {
    let name: String
    let line: Int
    let lines: Int
  }

  /// Every `func`, `init` and `deinit` with a body in `text`, and how many lines each spans.
  static func bodies(_ text: [UInt8]) -> [Body] {
    let code = SwiftSource.blanked(text)
    var lineStarts = [0]
    for i in code.indices where code[i] == UInt8(ascii: "\n") { lineStarts.append(i + 1) }
    func line(of i: Int) -> Int {
      var lo = 0
      var hi = lineStarts.count - 1
      while lo < hi {
        let mid = (lo + hi + 1) / 2
        if lineStarts[mid] <= i { lo = mid } else { hi = mid - 1 }
      }
      return lo + 1
    }
    var found: [Body] = []
    var i = 0
    while i < code.count {
      guard let (name, after) = declaration(in: code, at: i) else {
        i += 1
        continue
      }
      if let open = bodyStart(in: code, from: after), let close = matchingBrace(in: code, open) {
        found.append(Body(name: name, line: line(of: i), lines: line(of: close) - line(of: i) + 1))
      }
      i = after
    }
    return found
  }

  /// `func name`, `init`, `init?`, `init!` or `deinit` as a whole word at `i`: the name and where it ends.
  static func declaration(in code: [UInt8], at i: Int) -> (String, Int)? {
    guard i == 0 || !SwiftSource.isIdentifier(code[i - 1]) && code[i - 1] != UInt8(ascii: ".") else { return nil }
    for keyword in ["func", "init", "deinit"] {
      let k = Array(keyword.utf8)
      guard i + k.count <= code.count, Array(code[i..<(i + k.count)]) == k else { continue }
      var end = i + k.count
      if end < code.count && SwiftSource.isIdentifier(code[end]) { continue }
      if keyword == "func" {
        while end < code.count && code[end] == UInt8(ascii: " ") { end += 1 }
        let start = end
        while end < code.count && !" (<".utf8.contains(code[end]) { end += 1 }
        return (String(decoding: code[start..<end], as: UTF8.self), end)
      }
      return (keyword, end)
    }
    return nil
  }

  /// The `{` that opens the body of a declaration whose signature starts at `i`: the first one
  /// outside parentheses and brackets (a default argument's closure is inside them). Nil when
  /// the declaration has none (a protocol requirement): a line at depth 0 that begins another
  /// declaration, or a `}`, comes first.
  static func bodyStart(in code: [UInt8], from i: Int) -> Int? {
    var depth = 0
    var j = i
    while j < code.count {
      switch code[j] {
      case UInt8(ascii: "("), UInt8(ascii: "["): depth += 1
      case UInt8(ascii: ")"), UInt8(ascii: "]"): depth -= 1
      case UInt8(ascii: "{") where depth == 0: return j
      case UInt8(ascii: "}") where depth == 0: return nil
      case UInt8(ascii: "\n") where depth == 0:
        var k = j + 1
        while k < code.count && (code[k] == UInt8(ascii: " ") || code[k] == UInt8(ascii: "\n")) { k += 1 }
        let rest = String(decoding: code[k..<min(code.count, k + 12)], as: UTF8.self)
        let continues = ["throws", "where", "->", "async", "rethrows", "{", ")", ">", "_ ", "-"]
        if !continues.contains(where: rest.hasPrefix) && !rest.hasPrefix(rest.prefix { $0.isLetter } + ":") { return nil }
      default: break
      }
      j += 1
    }
    return nil
  }

  /// The `}` that closes the `{` at `open`.
  static func matchingBrace(in code: [UInt8], _ open: Int) -> Int? {
    var depth = 0
    for j in open..<code.count {
      if code[j] == UInt8(ascii: "{") { depth += 1 }
      if code[j] == UInt8(ascii: "}") {
        depth -= 1
        if depth == 0 { return j }
      }
    }
    return nil
  }

  @Test("no Swift file under Sources/ over 400 lines, no function over 70")
  func sourcesKeepTheLimits() throws {
    let root = packageRoot + "/Sources"
    var over: [String] = []
    for file in ChokepointTests.swiftFiles(under: root) {
      let text = try readWholeFile(root + "/" + file, maxBytes: 1 << 20)
      let lines = text.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
      if lines > Self.fileLinesMax { over.append("\(file): \(lines) lines (at most \(Self.fileLinesMax): split it along a seam)") }
      for body in Self.bodies(text) where body.lines > Self.functionLinesMax {
        over.append("\(file):\(body.line): \(body.name) is \(body.lines) lines (at most \(Self.functionLinesMax))")
      }
    }
    #expect(over.isEmpty, "\(over.joined(separator: "\n"))")
  }

  @Test("the measure: bodies counted from the declaration to its brace; requirements and closures in defaults are not bodies")
  func measureOnASample() {
    let filler = String(repeating: "    x += 1\n", count: 68)
    let sample = """
      protocol P {
        func required(_ a: Int) -> Int
        init(value: Int)
      }
      struct S {
        init(configure: (inout Int) -> Void = { _ in }) {
          var x = 0
          configure(&x)
        }
        func long(
          _ a: Int
        ) -> Int {
          var x = a  // a { in a comment
      \(filler)    return x
        }
        func text() -> String { "} {" }
      }
      """
    let bodies = Self.bodies(Array(sample.utf8))
    #expect(
      bodies == [
        Body(name: "init", line: 6, lines: 4), Body(name: "long", line: 10, lines: 74), Body(name: "text", line: 84, lines: 1),
      ], "\(bodies)")
    #expect(bodies.filter { $0.lines > Self.functionLinesMax }.map(\.name) == ["long"])
  }
}
