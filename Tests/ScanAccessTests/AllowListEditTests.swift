import ScanAccess
import ScanBase
import ScanSim
import Testing

/// Edits of the allow-list file: one line added, removed or replaced, every other byte kept,
/// and the result loads.
@Suite struct AllowListEditTests {
  let digester = FixtureDigester()
  let handWritten = "# staff, by hand\ntext:ALICE-0001 label=alice   # the first\n\n# visitors\r\ntext:VISIT-7 label=visitor from=2026-12-01T08:00:00Z\n"
  let bob = "sha256:" + String(repeating: "ab", count: 32)

  func loads(_ text: [UInt8]) -> AllowListError? {
    var list = AllowList(limits: AllowListLimits())
    return list.validate(text, digester: digester)
  }

  @Test("an entry is appended as one line; comments, blank lines and order stay byte for byte")
  func append() throws {
    var entry = AllowListEdit.Entry(match: bob, label: "bob")
    entry.schedule = "evenings"
    let out = try AllowListEdit.appending(entry.line, to: Array(handWritten.utf8)).get()
    #expect(String(decoding: out, as: UTF8.self) == handWritten + bob + " label=bob schedule=evenings\n")
    #expect(loads(out) == nil)
    // A file cut short is refused, not repaired by guessing.
    #expect(throws: AllowListEdit.Refusal.self) { try AllowListEdit.appending("x", to: Array("text:A".utf8)).get() }
    // A CRLF file gets a CRLF line.
    let crlf = try AllowListEdit.appending("text:B label=b", to: Array("text:A label=a\r\n".utf8)).get()
    #expect(String(decoding: crlf, as: UTF8.self) == "text:A label=a\r\ntext:B label=b\r\n")
  }

  @Test("entries are found by label as the parser reads lines (comments cut, CR dropped)")
  func find() {
    let entries = AllowListEdit.entries(Array(handWritten.utf8))
    #expect(entries.map(\.label) == ["alice", "visitor"])
    #expect(entries.map(\.line) == [1, 4])
    #expect(AllowListEdit.entry(labelled: "visitor", in: Array(handWritten.utf8))?.fields == ["label=visitor", "from=2026-12-01T08:00:00Z"])
    #expect(AllowListEdit.entry(labelled: "bo", in: Array(handWritten.utf8)) == nil)
  }

  @Test("removing a line keeps the rest; the last entry removed leaves a list marked empty that loads")
  func remove() {
    let text = Array(handWritten.utf8)
    let out = AllowListEdit.removingLine(1, from: text)
    #expect(String(decoding: out, as: UTF8.self) == "# staff, by hand\n\n# visitors\r\ntext:VISIT-7 label=visitor from=2026-12-01T08:00:00Z\n")
    let none = AllowListEdit.removingLine(3, from: out)
    #expect(String(decoding: none, as: UTF8.self) == "# staff, by hand\n\n# visitors\r\n# scangate: empty\n")
    #expect(loads(none) == nil)
  }

  @Test("replacing a line keeps its comment and its CR")
  func replace() {
    let out = AllowListEdit.replacingLine(1, with: "text:ALICE-0001 label=alice lockdown=yes", in: Array(handWritten.utf8))
    #expect(String(decoding: out, as: UTF8.self).contains("\ntext:ALICE-0001 label=alice lockdown=yes # the first\n"))
    let crlf = AllowListEdit.replacingLine(0, with: "text:B", in: Array("text:A\r\n".utf8))
    #expect(crlf == Array("text:B\r\n".utf8))
  }

  @Test(
    "labels the reader writes need no escaping",
    arguments: [
      ("bob", true), ("b.o_b-1@site+x", true), ("", false), ("bo b", false), ("bo%20b", false), ("bob#1", false),
      (String(repeating: "a", count: 48), true), (String(repeating: "a", count: 49), false), ("é", false),
    ])
  func labels(_ label: String, _ valid: Bool) { #expect(AllowListEdit.isValidLabel(label) == valid) }

  @Test("a spreadsheet's name becomes a label shown escaped; the console and the file accept that form, and only valid escapes")
  func shownLabels() {
    #expect(AllowListEdit.labelFromText(" ivy smith ") == "ivy%20smith")
    #expect(AllowListEdit.labelFromText("Zo\u{EB} 50%") == "Zo%C3%AB%2050%25")
    #expect(AllowListEdit.labelFromText("   ") == nil && AllowListEdit.labelFromText("") == nil)
    #expect(AllowListEdit.labelFromText(String(repeating: "\u{EB}", count: 9)) == nil, "48 bytes as shown at most")
    for (shown, valid) in [("ivy%20smith", true), ("bob", true), ("bo%2", false), ("bo%zz", false), ("bo b", false), ("%", false), ("", false)] {
      #expect(AllowListEdit.isShownLabel(Array(shown.utf8)) == valid, "\(shown)")
    }
  }

  @Test("validate checks in the spare table: the live list is untouched")
  func validateKeepsLive() {
    var list = AllowList(limits: AllowListLimits())
    #expect(list.load(Array("text:A label=a\n".utf8), digester: digester, nowUnixSeconds: 0) == nil)
    #expect(list.validate(Array("not an entry\n".utf8), digester: digester)?.line == 1)
    #expect(list.validate(Array("text:B\ntext:C\n".utf8), digester: digester) == nil)
    #expect(list.count == 1 && list.version == 1 && list.lastError == nil)
    #expect(list.withLabel(0) { Array($0) } == Array("a".utf8))
  }
}
