import ScanConsole
import ScanCore
import ScanSim
import Testing

/// ENROL LAST, REMOVE and LIST as the console parses them: operator-only, strict fields.
@Suite struct PeopleCommandTests {
  func parse(_ text: String) -> (Result<ConsoleRequest, ConsoleError>?, String) {
    var storage = [UInt8](repeating: 0, count: 512)
    var count = 0
    let result = Array(text.utf8).withUnsafeBytes { line in
      storage.withUnsafeMutableBytes { ConsoleRequest.parse(line, argument: $0, argumentCount: &count) }
    }
    return (result, String(decoding: storage[0..<count], as: UTF8.self))
  }

  @Test("ENROL LAST takes label= and schedule=; the argument holds the label, then the schedule")
  func enrol() throws {
    let (r, argument) = parse("enrol last label=bob schedule=evenings")
    let request = try #require(try r?.get())
    #expect(request.verb == .enrol && request.needsOperator && request.labelCount == 3 && argument == "bobevenings")
    let (r2, a2) = parse("ENROL LAST schedule=day label=b.o_b-1@x+y")
    #expect(try r2?.get().labelCount == 11 && a2 == "b.o_b-1@x+yday")
    #expect(try r2?.get().enrolTag == nil)
  }

  @Test("ENROL <tag> names a candidate by its 16 hex digits; ENROL CANDIDATES lists them (operator)")
  func enrolByTag() throws {
    let (r, argument) = parse("ENROL 5a0c11e2d4f7A9B1 label=bob")
    let request = try #require(try r?.get())
    #expect(request.enrolTag == 0x5a0c_11e2_d4f7_a9b1 && argument == "bob" && !request.flag)
    let list = try #require(try parse("enrol candidates").0?.get())
    #expect(list.verb == .enrol && list.flag && list.needsOperator)
    for bad in ["ENROL 5a0c11e2d4f7a9b label=bob", "ENROL 5a0c11e2d4f7a9bx label=bob", "ENROL CANDIDATES 3", "ENROL NEWEST label=bob"] {
      guard case .failure? = parse(bad).0 else {
        Issue.record("accepted \(bad)")
        continue
      }
    }
  }

  @Test(
    "ENROL refuses what it cannot write as asked",
    arguments: [
      ("ENROL label=bob", ConsoleError.badArgument), ("ENROL LAST", .badArgument), ("ENROL LAST schedule=x", .badLabel),
      ("ENROL LAST label=", .badLabel), ("ENROL LAST label=bo%2", .badLabel), ("ENROL LAST label=a label=b", .badLabel),
      ("ENROL LAST label=bob schedule=Bad", .badSchedule), ("ENROL LAST label=bob zones=a,b", .noZones),
      ("ENROL LAST label=bob colour=red", .badArgument), ("ENROL LAST label=a schedule=b x=1 y=2", .tooManyArguments),
    ])
  func enrolRefused(_ line: String, _ error: ConsoleError) {
    guard case .failure(let e)? = parse(line).0 else {
      Issue.record("accepted \(line)")
      return
    }
    #expect(e == error, "\(line)")
  }

  @Test("REMOVE label=..., LIST [n]; both operator-only; other verbs still take at most two arguments")
  func removeAndList() throws {
    let (r, argument) = parse("REMOVE label=bob")
    #expect(try r?.get().verb == .remove && argument == "bob")
    #expect(ConsoleVerb.remove.needsOperator && ConsoleVerb.list.needsOperator && ConsoleVerb.enrol.needsOperator)
    if case .failure(let e)? = parse("REMOVE bob").0 { #expect(e == .badLabel) } else { Issue.record("REMOVE bob accepted") }
    #expect(try parse("LIST 20").0?.get().number == 20)
    // Pages and a search, on the reader's side.
    let page = try parse("LIST 30 from=120 match=Ivy%20").0?.get().entries
    #expect(page?.count == 30 && page?.from == 120 && page?.matchCount == 6)
    let ivy = Array("| x Ivy%20Smith".utf8), zoe = Array("Zo%C3%AB".utf8)
    #expect(ivy.withUnsafeBytes { page?.matches($0) } == true && zoe.withUnsafeBytes { page?.matches($0) } == false)
    #expect(Array("ivy%20smith".utf8).withUnsafeBytes { page?.matches($0) } == true, "ASCII case ignored")
    #expect(try parse("LIST 500 from=3").0?.get().entries.count == 200)
    for bad in ["LIST from=x", "LIST from=1 from=2", "LIST match=", "LIST match=a%2", "LIST 1 2", "LIST match=a match=b", "LIST 1 from=1 match=a x"] {
      if case .failure? = parse(bad).0 {} else { Issue.record("\(bad) accepted") }
    }
    if case .failure(let e)? = parse("CLOCK FLOOR RESET NOW").0 { #expect(e == .tooManyArguments) } else { Issue.record("4 words accepted") }
  }
}

/// ENROL, REMOVE and LIST through the interpreter: operator-only, the host is asked with who,
/// and its answer is the reply (the tag, never a digest).
@Suite struct PeopleInterpreterTests {
  struct Host: ConsoleHost {
    var base = LockdownCommandTests.Host()
    var change = AllowListChange.enrolled(tag: "5a0c11e2d4f7a9b1", version: 5, sequence: 97)
    var asked: [String] = []
    func consoleStatus() -> ReaderStatus { base.consoleStatus() }
    func writeLastDecisions(_ count: Int, payloads: PayloadVisibility, into w: inout ByteWriter) -> Int { 0 }
    mutating func startLog(_ query: AuditQuery, for session: SessionTicket) -> LogStart { .notConfigured }
    func check(_ payload: UnsafeRawBufferPointer, label: UnsafeMutableRawBufferPointer) -> (Verdict, labelCount: Int) {
      (.deniedUnknown, 0)
    }
    mutating func open(milliseconds: Int?) -> OpenOutcome { .pulsed(milliseconds: 0) }
    mutating func reload() -> ReloadOutcome { .loaded(version: 1, entries: 0) }
    mutating func selfTest() {}
    mutating func startSnapshot(for session: SessionTicket, text: Bool, redacted: Bool) -> SnapshotStart { .busy }
    mutating func record(_ kind: EventKind, code: UInt16, text: UnsafeRawBufferPointer) -> UInt64 {
      base.record(kind, code: code, text: text)
    }
    mutating func enrol(
      tag: UInt64?, label: UnsafeRawBufferPointer, schedule: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer
    )
      -> AllowListChange
    {
      let which = tag.map { String($0, radix: 16) } ?? "last"
      asked.append(
        "enrol \(which) \(String(decoding: label, as: UTF8.self)) [\(String(decoding: schedule, as: UTF8.self))] by \(String(decoding: who, as: UTF8.self))"
      )
      return change
    }
    func writeEnrolCandidates(payloads: PayloadVisibility, into w: inout ByteWriter) -> Int {
      w.write("| 5a0c11e2d4f7a9b1 2026-12-04T10:00:00Z denied-unknown qr payload=BOB-0002\n")
      return 1
    }
    mutating func removeEntry(label: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer) -> AllowListChange {
      asked.append("remove \(String(decoding: label, as: UTF8.self)) by \(String(decoding: who, as: UTF8.self))")
      return change
    }
    final class Listed { var queries: [EntryQuery] = [] }
    let listed = Listed()
    func writeEntries(_ query: EntryQuery, into w: inout ByteWriter) -> (shown: Int, total: Int, next: Int?) {
      listed.queries.append(query)
      w.write("| bob tag=5a0c11e2d4f7a9b1 schedule\n")
      return (1, query.count + 7, query.from > 0 ? query.from + 1 : nil)
    }
  }

  final class Session {
    let output = ClockCommandTests.Output()
    var host = Host()
    let commands: ConsoleCommands<ManualClock>
    init() {
      commands = ConsoleCommands(
        slots: 4, limits: ConsoleLimits(), auth: AuthGate.Settings(), secret: ClockCommandTests.Secret(), clock: ManualClock())
      commands.opened(0, peer: .localUser(1000), transport: .tcp)
    }
    func say(_ line: String) -> String {
      output.text[0] = ""
      Array(line.utf8).withUnsafeBytes { commands.handle(0, line: $0, host: &host, output: output) }
      return output.text[0, default: ""]
    }
  }

  @Test("without AUTH nothing is asked of the host; with it, the host is asked with who and answers")
  func enrolRemoveList() {
    let s = Session()
    #expect(s.say("ENROL LAST label=bob").hasPrefix("ERR 401") && s.say("REMOVE label=bob").hasPrefix("ERR 401"))
    #expect(s.say("LIST").hasPrefix("ERR 401") && s.host.asked.isEmpty)
    _ = s.say("AUTH sesame-open")
    #expect(s.say("ENROL LAST label=bob schedule=evenings") == "OK #97 enrolled bob tag=5a0c11e2d4f7a9b1 allow-list version 5\n")
    #expect(s.host.asked == ["enrol last bob [evenings] by uid 1000"])
    #expect(s.say("ENROL CANDIDATES").hasPrefix("| 5a0c11e2d4f7a9b1 2026-12-04T10:00:00Z denied-unknown qr payload=BOB-0002\nOK 1 candidates"))
    _ = s.say("ENROL 5a0c11e2d4f7a9b1 label=bob")
    #expect(s.host.asked.last == "enrol 5a0c11e2d4f7a9b1 bob [] by uid 1000")
    s.host.change = .removed(tag: "5a0c11e2d4f7a9b1", version: 6, sequence: 98)
    #expect(s.say("REMOVE label=bob") == "OK #98 removed bob tag=5a0c11e2d4f7a9b1 allow-list version 6\n")
    #expect(s.host.asked.last == "remove bob by uid 1000")
    s.host.change = .refused(code: 409, reason: "label bob is used by another entry")
    #expect(s.say("ENROL LAST label=bob") == "ERR 409 label bob is used by another entry\n")
    #expect(s.say("LIST 20") == "| bob tag=5a0c11e2d4f7a9b1 schedule\nOK list 1 of 27 entries\n")
    #expect(s.say("LIST 20 from=40 match=bo").hasSuffix("OK list 1 of 27 entries next from=41\n"))
    #expect(s.host.listed.queries.last?.from == 40 && s.host.listed.queries.last?.matchCount == 2)
    // LIST and ENROL CANDIDATES (payloads) are recorded by verb and number; ENROL and REMOVE record themselves in the host.
    #expect(s.host.base.base.recorded.map(\.2) == ["AUTH ok", "ENROL CANDIDATES", "LIST 20", "LIST 20"])
  }
}
