import ScanBase
import ScanSim
import Testing

/// The RFC 4180 reader: every form the RFC allows, every hostile form refused whole and named
/// by record, and a round trip through the writer for seeded random fields.
@Suite struct CSVTests {
  func parse(_ text: String, _ limits: CSV.Limits = CSV.Limits()) -> Result<[[String]], CSV.Problem> {
    CSV.parseText(Array(text.utf8), limits: limits)
  }

  @Test("quotes, commas, CRLF and LF inside quoted fields; doubled quotes; blank lines skipped")
  func rfcForms() throws {
    let text = "label,payload\r\n\"a,b\",\"say \"\"hi\"\"\"\r\n\r\nbob,\"line1\r\nline2\nline3\"\n\"\",x"
    let records = try parse(text).get()
    #expect(records == [["label", "payload"], ["a,b", "say \"hi\""], ["bob", "line1\r\nline2\nline3"], ["", "x"]])
    #expect(try parse("a,,\n").get() == [["a", "", ""]])
    #expect(try parse("\u{FEFF}a,b\n").get() == [["a", "b"]])  // a spreadsheet's byte order mark
    #expect(try parse("").get() == [])
  }

  @Test(
    "hostile rows are refused whole, naming the record and never the text",
    arguments: [
      ("a,b\nc,d\"e\n", 2), ("a,\"b\"x\n", 1), ("a\rb\n", 1), ("ok\n\"SECRET-1\n", 2), ("a,b\r", 1),
    ])
  func hostile(_ text: String, _ record: Int) {
    guard case .failure(let problem) = parse(text) else {
      Issue.record("accepted \(text.debugDescription)")
      return
    }
    #expect(problem.record == record, "\(problem)")
    #expect(!problem.description.contains("SECRET") && !problem.description.contains("d\"e"))
  }

  @Test("every bound holds: file, records, fields, field bytes")
  func bounds() {
    let limits = CSV.Limits(fileBytesMax: 64, recordsMax: 2, fieldsMax: 3, fieldBytesMax: 8)
    #expect(parse(String(repeating: "a\n", count: 40), limits).failureRecord == 0)
    #expect(parse("a\nb\nc\n", limits).failureRecord == 3)
    #expect(parse("a,b,c,d\n", limits).failureRecord == 1)
    #expect(parse("\"123456789\"\n", limits).failureRecord == 1)
    #expect(parse("123456789\n", limits).failureRecord == 1)
    #expect((try? parse("12345678,b,c\n", limits).get()) == [["12345678", "b", "c"]])
    #expect(CSV.parseText([0x61, 0xFF, 0x0A]).failureRecord == 1)  // not UTF-8
  }

  @Test("what the writer writes, the reader reads back exactly (seeded random fields)")
  func roundTrip() throws {
    var random = SplitMix(seed: 42)
    let alphabet: [String] = ["a", "Z", ",", "\"", "\r", "\n", " ", "é", "=", "#", "%", "\t"]
    for _ in 0..<300 {
      let fields = (0..<Int(random.next() % 5 + 1)).map { _ in
        (0..<Int(random.next() % 12)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
      }
      let text = CSV.record(fields) + CSV.record(["end"])
      let back = try parse(text).get()
      // A record that is one empty field is a blank line to the reader (as to Python's).
      if fields == [""] { #expect(back == [["end"]]) } else { #expect(back == [fields, ["end"]], "\(text.debugDescription)") }
    }
  }

  @Test("random bytes never crash the reader and never yield more than its bounds")
  func randomBytes() {
    var random = SplitMix(seed: 7)
    let limits = CSV.Limits(fileBytesMax: 512, recordsMax: 8, fieldsMax: 4, fieldBytesMax: 16)
    let bytes: [UInt8] = [0x22, 0x2C, 0x0D, 0x0A, 0x61, 0x00, 0xFF]
    for _ in 0..<2_000 {
      let input = (0..<Int(random.next() % 64)).map { _ in bytes[Int(random.next() % UInt64(bytes.count))] }
      if case .success(let records) = CSV.parse(input, limits: limits) {
        #expect(records.count <= 8 && records.allSatisfy { $0.count <= 4 && $0.allSatisfy { $0.count <= 16 } })
      }
    }
  }

  @Test("a first field starting with U+FEFF is quoted: read back whole, not taken for the byte order mark (found by the fuzz harness)")
  func byteOrderMarkField() throws {
    let fields = ["\u{FEFF}66", "x"]
    let written = CSV.record(fields)
    #expect(written.hasPrefix("\""))
    #expect(try parse(written).get() == [fields])
    // A real byte order mark before the first record is still dropped.
    #expect(try parse("\u{FEFF}a,b\r\n").get() == [["a", "b"]])
  }

  @Test("inert: a cell a spreadsheet would run as a formula gets a leading quote")
  func inert() {
    #expect(CSV.inert("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")")
    #expect(CSV.inert("-1") == "'-1" && CSV.inert("@a") == "'@a" && CSV.inert("bob") == "bob")
  }
}

extension Result where Failure == CSV.Problem {
  fileprivate var failureRecord: Int? {
    if case .failure(let p) = self { return p.record }
    return nil
  }
}
