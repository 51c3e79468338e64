import ScanCore
import ScanSim
import Testing

@Suite struct AllowListTests {
  let digester = FixtureDigester()
  let now: Int64 = 1_780_000_000  // 2026-05-28

  func load(_ text: String, into list: inout AllowList) -> AllowListError? {
    list.load(Array(text.utf8), digester: digester, nowUnixSeconds: now)
  }

  func verdict(_ list: borrowing AllowList, _ payload: String, at time: Int64? = nil) -> Verdict {
    list.decide(digester.digest(payload), nowUnixSeconds: time ?? now).0
  }

  @Test("grants listed text and digest entries, denies the rest")
  func grantsListedEntries() {
    var list = AllowList(limits: AllowListLimits())
    let text = """
      # staff
      text:ALICE-0001 label=alice
      sha256:\(digester.hex("BOB-0002")) label=bob   # the file need not hold the secret

      text:with%20space%25%23hash

      """
    #expect(load(text, into: &list) == nil)
    #expect(list.count == 3)
    #expect(list.version == 1)
    #expect(verdict(list, "ALICE-0001") == .granted)
    #expect(verdict(list, "BOB-0002") == .granted)
    #expect(verdict(list, "with space%#hash") == .granted)
    #expect(verdict(list, "MALLORY") == .deniedUnknown)
    #expect(verdict(list, "ALICE-000") == .deniedUnknown)
  }

  @Test("validity windows: not yet valid before from, expired at until")
  func validityWindows() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:X from=2026-06-01T00:00:00Z until=2026-06-02T00:00:00+00:00\n", into: &list) == nil)
    let from = RFC3339.daysFromCivilForTesting(2026, 6, 1) * 86_400
    #expect(verdict(list, "X", at: from - 1) == .deniedNotYetValid)
    #expect(verdict(list, "X", at: from) == .granted)
    #expect(verdict(list, "X", at: from + 86_399) == .granted)
    #expect(verdict(list, "X", at: from + 86_400) == .deniedExpired)
  }

  @Test("labels come back with the decision's entry")
  func labels() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:A label=front%20desk\n", into: &list) == nil)
    let (v, entry) = list.decide(digester.digest("A"), nowUnixSeconds: now)
    #expect(v == .granted)
    let label = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      let n = list.copyLabel(entry!, into: buffer)
      return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[0..<n]), as: UTF8.self)
    }
    #expect(label == "front%20desk")
  }

  @Test(
    "bad files name the line and keep the live list",
    arguments: [
      ("text:A\ntext:A\n", 2, "duplicate"),
      ("text:A\nfoo:B\n", 2, "must start with"),
      ("text:A label=x colour=red\n", 1, "unknown key"),
      ("text:bad%zz\n", 1, "escape"),
      ("text:tab\there\n", 1, "expected key=value"),
      ("\n\ntext:A until=2026-13-01T00:00:00Z\n", 3, "month"),
      ("text:A from=2026-01-02T00:00:00Z until=2026-01-01T00:00:00Z\n", 1, "not after"),
      ("sha256:abcd\n", 1, "64 hex"),
      ("sha256:\(String(repeating: "g", count: 64))\n", 1, "not hex"),
      ("text:A label=x label=y\n", 1, "twice"),
      ("text:A\u{7}\n", 1, "control character"),
      ("text:A label=\(String(repeating: "x", count: 49))\n", 1, "longer"),
    ])
  func rejectsBadFiles(text: String, line: Int, reason: String) {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:GOOD\n", into: &list) == nil)
    let error = load(text, into: &list)
    #expect(error?.line == line)
    #expect(error?.reason.contains(reason) == true, "\(String(describing: error))")
    #expect(list.lastError == error)
    #expect(list.version == 1)
    #expect(list.count == 1)
    #expect(verdict(list, "GOOD") == .granted)
  }

  @Test("a file cut off mid-entry is rejected, not half-loaded")
  func truncatedFileKeepsLiveList() {
    var list = AllowList(limits: AllowListLimits())
    let full = "text:ONE\nsha256:\(digester.hex("TWO"))\ntext:THREE\n"
    #expect(load(full, into: &list) == nil)
    // The same file as a reader would see it while a writer is halfway through rewriting it.
    let cut = String(full.prefix(30))
    #expect(load(cut, into: &list) != nil)
    #expect(list.count == 3)
    #expect(verdict(list, "THREE") == .granted)
  }

  @Test("a last line without its newline is a file cut short: rejected, never loaded as a shorter pass")
  func unterminatedLastLine() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:ONE\n", into: &list) == nil)
    // `cat > allow.txt` caught mid-write: "text:THIRTEEN" cut to "text:TH".
    let error = load("text:ONE\ntext:TH", into: &list)
    #expect(error?.line == 2)
    #expect(error?.reason.contains("newline") == true)
    #expect(verdict(list, "TH") == .deniedUnknown)
    #expect(verdict(list, "ONE") == .granted && list.version == 1)
  }

  @Test("entry and size limits are checked at load")
  func limits() {
    var list = AllowList(limits: AllowListLimits(entriesMax: 2, fileBytesMax: 64, lineBytesMax: 32))
    #expect(load("text:A\ntext:B\n", into: &list) == nil)
    #expect(load("text:A\ntext:B\ntext:C\n", into: &list)?.reason.contains("more than 2 entries") == true)
    #expect(load("text:" + String(repeating: "A", count: 40) + "\n", into: &list)?.reason.contains("longer than 32") == true)
    #expect(load(String(repeating: "# padding\n", count: 10), into: &list)?.reason.contains("over the 64-byte limit") == true)
    #expect(list.count == 2)
  }

  @Test("a reload replaces the list completely")
  func reloadReplaces() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:A\ntext:B\n", into: &list) == nil)
    #expect(load("text:C\n", into: &list) == nil)
    #expect(list.version == 2)
    #expect(verdict(list, "A") == .deniedUnknown)
    #expect(verdict(list, "C") == .granted)
  }
}

@Suite struct RFC3339Tests {
  @Test(
    "known instants",
    arguments: [
      ("1970-01-01T00:00:00Z", Int64(0)),
      ("2000-02-29T12:00:00Z", Int64(951_825_600)),
      ("2026-11-30T02:40:11Z", Int64(1_796_006_411)),
      ("2026-11-30T03:40:11+01:00", Int64(1_796_006_411)),
      ("2026-11-29T21:40:11.999-05:00", Int64(1_796_006_411)),
      ("1969-12-31T23:59:59Z", Int64(-1)),
    ])
  func parses(text: String, seconds: Int64) throws {
    #expect(try RFC3339.parse(text[...]) == seconds)
    if !text.contains("+") && !text.contains("-05") && !text.contains(".") {
      #expect(RFC3339.format(seconds) == text)
    }
  }

  @Test("rejects", arguments: ["2026-02-30T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01 00:00", "2026-01-01T24:00:00Z", "x", "2026-01-01T00:00:00Zjunk"])
  func rejects(text: String) {
    #expect(throws: ParseError.self) { try RFC3339.parse(text[...]) }
  }
}
