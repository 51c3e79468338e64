import ScanConsole
import ScanCore
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
  }

  @Test(
    "ENROL refuses what it cannot write as asked",
    arguments: [
      ("ENROL label=bob", ConsoleError.badArgument), ("ENROL LAST", .badArgument), ("ENROL LAST schedule=x", .badLabel),
      ("ENROL LAST label=", .badLabel), ("ENROL LAST label=bo%20b", .badLabel), ("ENROL LAST label=a label=b", .badLabel),
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
    if case .failure(let e)? = parse("CLOCK FLOOR RESET NOW").0 { #expect(e == .tooManyArguments) } else { Issue.record("4 words accepted") }
  }
}
