import ScanAccess
import ScanBase
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
    #expect(label == "front desk", "held as the name: escaped once where it leaves the reader")
  }

  @Test(
    "bad files name the line and keep the live list",
    arguments: [
      ("text:A\ntext:A\n", 2, "duplicate"),
      ("text:A\nfoo:B\n", 2, "must start with"),
      ("text:A label=x colour=red\n", 1, "unknown key"),
      ("text:bad%zz\n", 1, "escape"),
      ("text:tab\there\n", 1, "not key=value"),
      ("\n\ntext:A until=2026-13-01T00:00:00Z\n", 3, "month"),
      ("text:A from=2026-01-02T00:00:00Z until=2026-01-01T00:00:00Z\n", 1, "not after"),
      ("sha256:abcd\n", 1, "64 hex"),
      ("sha256:\(String(repeating: "g", count: 64))\n", 1, "not a hex digit"),
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

  /// Lines a technician might get wrong, each holding a working pass (VAULT-99812, card 99812…)
  /// where the parser stumbles; the reason must give the line and the rule, and nothing of it.
  static let leakyLines: [(String, String)] = [
    ("txt:VAULT-99812", "must start with text: or sha256:"),
    ("text:VAULT 99812", "not key=value"),
    ("text:VAULT-99812%zz", "bad percent escape"),
    ("text:VAULT-99812%9", "bad percent escape"),
    ("text:VAULT-99812\u{7F}", "must be written as a %XX escape"),
    ("text:VAULT-99812é", "must be written as a %XX escape"),
    ("sha256:VAULT-99812" + String(repeating: "0", count: 53), "not a hex digit"),
    ("text:A VAULT-99812=x", "unknown key"),
    ("text:A VAULT-99812=x VAULT-99812=y", "unknown key"),
    ("text:A label=VAULT%zz99812", "bad percent escape"),
    ("text:A from=VAULT-99812", "from: not an RFC 3339 time"),
    ("text:A until=2026-13-01T00:00:00ZVAULT99812", "until: not an RFC 3339 time"),
    ("text:A until=2026-13-01T00:00:00Z", "month out of range"),
    ("text:A card=VAULT-99812", "card wants"),
    ("text:A card=VAULT:1:99812", "unknown card format"),
    ("text:A card=26:VAULT:99812", "facility code is not a number"),
    ("text:A card=26:1:VAULT99812", "card number is not a number"),
    ("text:A card=26:1:99812", "card number does not fit 16 bits"),
    ("text:A card=26:99812:1", "facility code does not fit 8 bits"),
    ("text:A card=37:1:9981299812", "card number does not fit 19 bits"),
    ("text:A card=raw:8:99812", "raw value does not fit"),
    ("text:A card=raw:VAULT:99812", "raw bit count is not a number"),
    ("text:A card=raw:99812:1", "raw bit count is not 1–64"),
    ("text:A card=raw:8:VAULT99812", "raw value is not 1–16 hex digits"),
    ("text:A schedule=VAULT-99812", "schedule: names are"),
    ("text:A static=VAULT-99812", "static: yes or no"),
  ]

  @Test("a rejected line's reason names the rule, never a fragment of the line", arguments: leakyLines)
  func reasonsHoldNoFileText(line: String, rule: String) {
    var list = AllowList(limits: AllowListLimits())
    let error = load("text:GOOD\n" + line + "\n", into: &list)
    #expect(error?.line == 2, "\(String(describing: error))")
    #expect(error?.reason.contains(rule) == true, "\(String(describing: error))")
    for fragment in ["VAULT", "99812", "9981"] {
      #expect(error?.reason.contains(fragment) == false, "the reason echoes the line: \(String(describing: error))")
    }
  }

  @Test("a schedule file's errors hold no fragment of the file either (an allow-list given as the schedule file)")
  func scheduleReasonsHoldNoFileText() {
    guard case .failure(let error) = ScheduleSet.parse(Array("schedule day mon-fri 08:00-18:00\ntxt:VAULT-99812\n".utf8)) else {
      Issue.record("the schedule file was accepted")
      return
    }
    #expect(error.line == 2 && error.reason.contains("unknown keyword"), "\(error)")
    #expect(!error.reason.contains("VAULT") && !error.reason.contains("9981"), "\(error)")
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

extension AllowListTests {
  @Test("lockdown=yes|no on an entry; any other value refuses the whole file with its line")
  func lockdownKey() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:A lockdown=yes\ntext:B lockdown=no\ntext:C\n", into: &list) == nil)
    let a = Array("A".utf8).withUnsafeBytes { list.decide(digester.sha256($0), nowUnixSeconds: now).1 }
    let b = Array("B".utf8).withUnsafeBytes { list.decide(digester.sha256($0), nowUnixSeconds: now).1 }
    let c = Array("C".utf8).withUnsafeBytes { list.decide(digester.sha256($0), nowUnixSeconds: now).1 }
    let flags = [a, b, c].map { $0.map { list.isLockdown($0) } }
    #expect(flags == [true, false, false])
    let bad = load("text:A\ntext:D lockdown=maybe\n", into: &list)
    #expect(bad?.line == 2 && bad?.reason.contains("lockdown: yes or no") == true, "\(String(describing: bad))")
    let kept = list.isLockdown(a!)
    #expect(kept, "the live list is kept")
    #expect(load("text:E lockdown=yes lockdown=yes\n", into: &list)?.reason.contains("twice") == true)
  }
}
