import ScanConsole
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// HELP and docs/console.md are one list, and HELP fits a technician's 80-column terminal.
@Suite struct ConsoleDocsTests {
  static func help(_ verb: ConsoleVerb? = nil) -> [String] {
    withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      ConsoleText.writeHelp(operator: false, verb: verb, into: &w)
      return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[0..<w.count]), as: UTF8.self)
        .split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
  }

  /// The verbs docs/console.md's command tables start a row with (`| \`VERB ...`).
  static func documentedVerbs() throws -> Set<String> {
    let text = String(decoding: try readWholeFile(packageRoot + "/docs/console.md", maxBytes: 1 << 20), as: UTF8.self)
    var verbs = Set<String>()
    for line in text.split(separator: "\n") where line.hasPrefix("| `") {
      let word = line.dropFirst(3).prefix { $0.isUppercase }
      if !word.isEmpty { verbs.insert(String(word)) }
    }
    return verbs
  }

  @Test("every verb HELP lists has a row in docs/console.md, and every verb there is one HELP lists")
  func oneList() throws {
    let documented = try Self.documentedVerbs()
    let listed = Set(ConsoleVerb.allCases.map(\.name))
    #expect(listed.subtracting(documented).isEmpty, "not in docs/console.md: \(listed.subtracting(documented).sorted())")
    #expect(documented.subtracting(listed).isEmpty, "in the docs, not a verb: \(documented.subtracting(listed).sorted())")
    // HELP's body names each verb at the start of a line.
    let body = Self.help().filter { $0.hasPrefix("| ") && !$0.hasPrefix("|  ") }.map { $0.dropFirst(2).prefix { $0.isUppercase } }
    #expect(Set(body.map(String.init)) == listed, "\(body)")
  }

  @Test("every line of HELP and of HELP <verb> fits 80 columns, continuation lines indented")
  func fitsEightyColumns() {
    var replies = [Self.help()]
    for verb in ConsoleVerb.allCases { replies.append(Self.help(verb)) }
    for reply in replies {
      for line in reply { #expect(line.utf8.count <= 80, "\(line.utf8.count) columns: \(line)") }
    }
    #expect(Self.help().last?.hasPrefix("OK help (operator commands need AUTH) \(Self.help().count - 1) lines") == true)
    let lockdown = Self.help(.lockdown)
    #expect(lockdown.first == "| LOCKDOWN [ON|OFF]   fire and lockdown; operator: latch or lift a lockdown")
    #expect(lockdown.contains { $0.contains("never a fire") } && lockdown.last == "OK help LOCKDOWN", "\(lockdown)")
  }

  @Test("HELP <verb> is parsed case-blind; an unknown verb is ERR 400, a second argument too many")
  func parsesHelpVerb() {
    func parse(_ line: String) -> Result<ConsoleRequest, ConsoleError>? {
      var count = 0
      return withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { argument in
        Array(line.utf8).withUnsafeBytes { ConsoleRequest.parse($0, argument: argument, argumentCount: &count) }
      }
    }
    if case .success(let r) = parse("help turnstile") { #expect(r.verb == .help && r.helpVerb == .turnstile) } else { Issue.record("help turnstile") }
    if case .success(let r) = parse("HELP") { #expect(r.helpVerb == nil) } else { Issue.record("HELP") }
    if case .failure(let e) = parse("HELP FROB") { #expect(e == .unknownVerb) } else { Issue.record("HELP FROB") }
    if case .failure(let e) = parse("HELP LOG 5") { #expect(e == .tooManyArguments) } else { Issue.record("HELP LOG 5") }
  }
}
