import ScanLinux
import ScanTestSupport
import Testing

/// docs/architecture.md's graph of targets ("## Targets") read against Package.swift: every
/// product target is drawn, with exactly the dependencies Package.swift lists, and nothing is
/// drawn that Package.swift does not declare. A dependency added or dropped in one and not the
/// other fails here.
@Suite struct ArchitectureDocTests {
  /// Each `.target(...)` and `.executableTarget(...)` that is not a test's: its name and its
  /// dependencies as Package.swift lists them.
  static func packageTargets() -> [String: Set<String>] {
    let text = DomainLimitsTests.readText(packageRoot + "/Package.swift")
    var out: [String: Set<String>] = [:]
    for chunk in text.split(separator: "arget(").dropFirst() {
      let body = chunk.split(separator: "swiftSettings").first ?? chunk
      guard let name = DomainLimitsTests.quoted(after: "name: ", in: body), !body.contains("path: \"Tests/"), !name.hasSuffix("Tests") else {
        continue
      }
      var deps: Set<String> = []
      if let open = body.firstRange(of: "dependencies: ["), let close = body[open.upperBound...].firstIndex(of: "]") {
        for part in body[open.upperBound..<close].split(separator: ",") {
          let t = String(part.filter { $0 != " " && $0 != "\n" && $0 != "\"" })
          if !t.isEmpty { deps.insert(t) }
        }
      }
      out[name] = deps
    }
    return out
  }

  /// The graph's entries: `Name ─▶ A, B,` with continuation lines under the first dependency,
  /// a dependency list ending where two spaces begin the description; `Name` with no arrow has
  /// none. Parenthesised remarks are dropped. "every adapter below" and "every core below" are
  /// kept as written, one entry each.
  static func drawnTargets() -> [String: Set<String>] {
    let text = DomainLimitsTests.readText(packageRoot + "/docs/architecture.md")
    guard let start = text.firstRange(of: "## Targets"), let open = text[start.upperBound...].firstRange(of: "```\n"),
      let close = text[open.upperBound...].firstRange(of: "```")
    else { return [:] }
    var out: [String: Set<String>] = [:]
    var current: String? = nil
    var column = 0
    var continues = false
    func depsText(_ line: Substring) -> Substring {
      let head = line.firstRange(of: "  ").map { line[..<$0.lowerBound] } ?? line
      return head.replacing(/\([^)]*\)/, with: "")
    }
    func trim(_ t: Substring) -> Substring { t.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed().reduce(into: "") { $0.append($1) } }
    func add(_ text: Substring, to name: String) -> Bool {
      let trimmed = trim(text)
      for part in trimmed.split(separator: ",") where !trim(part).isEmpty { out[name, default: []].insert(String(trim(part))) }
      return trimmed.hasSuffix(",")
    }
    for line in text[open.upperBound..<close.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
      if let arrow = line.firstRange(of: " ─▶ "), line.first?.isLetter == true {
        let name = String(trim(line[..<arrow.lowerBound]))
        current = name
        out[name] = []
        column = line.distance(from: line.startIndex, to: arrow.upperBound)
        continues = add(depsText(line[arrow.upperBound...]), to: name)
      } else if let name = current, continues, line.count > column, line.prefix(column).allSatisfy({ $0 == " " }) {
        continues = add(depsText(line.dropFirst(column)), to: name)
      } else if line.first?.isLetter == true, let word = line.split(separator: " ").first, line.dropFirst(word.count).hasPrefix("   ") {
        current = String(word)
        out[String(word)] = []
        continues = false
      } else {
        continues = false
      }
    }
    return out
  }

  /// The dependencies the doc draws as "every adapter below" or "every core below" stand for.
  static func expand(_ deps: Set<String>, _ package: [String: Set<String>]) -> Set<String> {
    if deps == ["every adapter below"] { return package["ScanLinux"] ?? [] }
    if deps == ["every core below"] { return package["ScanCore"] ?? [] }
    return deps
  }

  static func isShim(_ name: String) -> Bool { name.count > 1 && name.first == "C" && name.dropFirst().first!.isUppercase }

  @Test("docs/architecture.md draws every Swift target of Package.swift with exactly its dependencies, and lists every C shim")
  func docMatchesPackage() {
    let all = Self.packageTargets()
    let package = all.filter { !Self.isShim($0.key) }
    let drawn = Self.drawnTargets()
    let text = DomainLimitsTests.readText(packageRoot + "/docs/architecture.md")
    let shims = all.keys.filter(Self.isShim).sorted()
    #expect(shims.count >= 12 && shims.filter { !text.contains("\n  \($0) ") } == [], "C shims missing from the list: \(shims)")
    #expect(package.count >= 30 && drawn.count >= 30, "\(package.count) targets, \(drawn.count) drawn")
    #expect(Set(package.keys).subtracting(drawn.keys).sorted() == [], "targets the doc does not draw")
    #expect(Set(drawn.keys).subtracting(package.keys).sorted() == [], "drawn, not in Package.swift")
    for (name, deps) in package.sorted(by: { $0.key < $1.key }) {
      guard let shown = drawn[name] else { continue }
      let c = deps.filter(Self.isShim), swift = deps.subtracting(c)
      #expect(Self.expand(shown, package) == deps, "\(name): Package.swift \(swift.sorted()) + \(c.sorted()), drawn \(shown.sorted())")
    }
  }
}
