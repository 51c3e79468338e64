import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// Managing people without editing files, on the built binary: ENROL LAST / REMOVE / LIST on
/// the console, `allow-list import/export --csv` and `log --csv` read and written by Python's
/// csv module (the outside implementation of RFC 4180).
@Suite(.serialized) struct PeopleTests {
  let comment = "# hand-written: keep me, and my place"

  func setUp() -> (String, String) {
    replayReader("people", payload: "BOB-0002", allowList: "\(comment)\ntext:ALICE-0001 label=alice\n") { dir in
      """
      relay_pulse_ms = 100
      [presence]
      repeat_ms = 1000
      [log]
      path = "\(dir)/audit.db"
      commit_interval_ms = 50
      [decoder]
      isolation = "inline"
      [console]
      listen = ["127.0.0.1:0"]
      secret_file = "\(dir)/secret"
      """
    }
  }

  func file(_ path: String) -> String { (try? readWholeFile(path, maxBytes: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

  func count(_ text: String, in child: Child) -> Int { child.output.ranges(of: text).count }

  @Test("ENROL LAST as operator: the unknown code is granted; REMOVE: denied again; the file keeps its comment")
  func enrolByScanning() {
    let (dir, config) = setUp()
    defer { removeTree(dir) }
    let child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision denied-unknown"), "\(child.output)")
    let port =
      child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?
      .split(separator: ":").last.map(String.init) ?? "0"
    func console(_ line: String, asOperator: Bool = true) -> (Int32, String) {
      let (status, text) = runCommand(
        [scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--command", line]
          + (asOperator ? ["--secret-file", dir + "/secret"] : []))
      return (status, ConsoleLayout.join(text))  // lines as written: continuation lines joined
    }
    var (status, reply) = console("ENROL LAST label=bob", asOperator: false)
    #expect(status == 1 && reply.contains("ERR 401"), "ENROL needs AUTH: \(reply)")
    #expect(!file(dir + "/allow-list.txt").contains("bob"))
    (status, reply) = console("ENROL LAST label=alice")
    #expect(status == 1 && reply.contains("ERR 409") && reply.contains("label alice is used"), "\(reply)")
    // A file that cannot be written (a directory where the durable write's temporary goes):
    // refused, the file and the live list as they were.
    #expect(mkdir(dir + "/allow-list.txt.tmp", 0o755) == 0)
    (status, reply) = console("ENROL LAST label=bob")
    #expect(status == 1 && reply.contains("ERR 503 the allow-list file cannot be written"), "\(reply)")
    #expect(file(dir + "/allow-list.txt") == comment + "\ntext:ALICE-0001 label=alice\n")
    rmdir(dir + "/allow-list.txt.tmp")
    (status, reply) = console("ENROL LAST label=bob")
    #expect(status == 0 && reply.contains(" enrolled bob tag=") && reply.contains(" allow-list version "), "\(reply)")
    #expect(!reply.contains("sha256") && !reply.contains("BOB-0002"), "only the keyed tag leaves the reader: \(reply)")
    #expect(child.waitForOutput("decision granted qr label=bob"), "\(child.output)")
    var text = file(dir + "/allow-list.txt")
    #expect(text.hasPrefix(comment + "\ntext:ALICE-0001 label=alice\nsha256:") && text.hasSuffix(" label=bob\n"), "\(text)")
    #expect(!text.contains("BOB-0002"))
    // The code is granted now: a second ENROL of it is refused.
    (status, reply) = console("ENROL LAST label=bob2")
    #expect(status == 1 && reply.contains("ERR 409"), "\(reply)")
    (status, reply) = console("LIST")
    #expect(status == 0 && reply.contains("| alice tag=") && reply.contains("| bob tag=") && reply.contains("OK list 2 of 2"), "\(reply)")
    #expect(!reply.contains("ALICE-0001") && !reply.contains("sha256"))
    // A page of one, then the next from where it stopped; a search by part of a label.
    (status, reply) = console("LIST 1")
    #expect(status == 0 && reply.contains("| alice tag=") && reply.contains("OK list 1 of 2 entries next from=1"), "\(reply)")
    (status, reply) = console("LIST 1 from=1")
    #expect(status == 0 && reply.contains("| bob tag=") && reply.contains("OK list 1 of 2 entries\n"), "\(reply)")
    (status, reply) = console("LIST match=OB")
    #expect(status == 0 && !reply.contains("alice") && reply.contains("| bob tag=") && reply.contains("OK list 1 of 2"), "\(reply)")
    (status, reply) = console("REMOVE label=bob")
    #expect(status == 0 && reply.contains(" removed bob tag="), "\(reply)")
    let denials = count("decision denied-unknown", in: child)
    #expect(child.waitForOutput("decision denied-unknown", count: denials + 1), "\(child.output)")
    text = file(dir + "/allow-list.txt")
    #expect(text == comment + "\ntext:ALICE-0001 label=alice\n", "\(text)")
    (status, reply) = console("REMOVE label=bob")
    #expect(status == 1 && reply.contains("ERR 409"), "\(reply)")
    kill(child.pid, SIGTERM)
    #expect(child.wait() == 0)
    // The audit log names who did it, with the label and the tag, read as CSV by Python.
    let (logStatus, csv) = runCommand([scangateBinary, "log", "--csv", "--db", dir + "/audit.db"])
    #expect(logStatus == 0)
    writeFile(dir + "/log.csv", csv)
    let script = """
      import csv, sys
      rows = list(csv.DictReader(open(sys.argv[1], newline='')))
      for r in rows:
          if r['kind'] == 'command' and r['label'] == 'bob': print(r['payload'], len(r['tag']))
      print('rows', len(rows))
      """
    let (pyStatus, lines) = runCommand(["/usr/bin/python3", "-c", script, dir + "/log.csv"])
    #expect(pyStatus == 0, "\(lines)")
    #expect(lines.contains("ENROL by uid \(getuid()) 16") && lines.contains("REMOVE by uid \(getuid()) 16"), "\(lines)")
    #expect(!csv.contains("BOB-0002") && !csv.contains("horse"))
  }

  @Test("allow-list import/export --csv: Python's csv module writes and reads the files")
  func importExport() {
    let dir = temporaryDirectory("people-csv")
    defer { removeTree(dir) }
    writeFile(dir + "/allow-list.txt", "\(comment)\ntext:ALICE-0001 label=alice\n")
    writeFile(
      dir + "/config.toml",
      "[allow_list]\npath = \"\(dir)/allow-list.txt\"\n[log]\npath = \"\"\n[schedule]\npath = \"\(dir)/schedules.txt\"\n")
    writeFile(dir + "/schedules.txt", "schedule evenings mon-fri 18:00-22:00\n")
    let write = """
      import csv, sys
      with open(sys.argv[1], 'w', newline='') as f:
          w = csv.writer(f)
          w.writerow(['payload', 'label', 'schedule', 'until'])
          w.writerow(['CAROL, "the" 3rd\\nline', 'carol', '', '2027-01-01T00:00:00Z'])
          w.writerow(['DAVE-4', 'dave', 'evenings', ''])
          w.writerow(['', 'alice', '', '2027-06-01T00:00:00Z'])
          w.writerow(['GUEST-7', '+1visitor', '', ''])
          w.writerow(['IVY-8', ' ivy smith ', '', ''])
          w.writerow(['ZOE-9', 'Zo\\u00eb 50%', '', ''])
      with open(sys.argv[2], 'w', newline='') as f:
          w = csv.writer(f)
          w.writerow(['payload', 'label'])
          w.writerow(['EVE-5', 'eve'])
          w.writerow(['FRANK-6', 'frank ' * 10])
      """
    #expect(runCommand(["/usr/bin/python3", "-c", write, dir + "/people.csv", dir + "/bad.csv"]).0 == 0)
    let before = file(dir + "/allow-list.txt")
    var (status, output) = runCommand([scangateBinary, "allow-list", "import", "--csv", dir + "/people.csv", "--dry-run", "--config", dir + "/config.toml"])
    #expect(status == 0 && output.contains("would add carol") && output.contains("would add dave") && output.contains("would change alice"), "\(output)")
    #expect(file(dir + "/allow-list.txt") == before, "a dry run writes nothing")
    (status, output) = runCommand([scangateBinary, "allow-list", "import", "--csv", dir + "/bad.csv", "--config", dir + "/config.toml"])
    #expect(status == 1 && output.contains("record 3: label") && !output.contains("FRANK"), "\(output)")
    #expect(file(dir + "/allow-list.txt") == before, "a bad row refuses the whole file")
    (status, output) = runCommand([scangateBinary, "allow-list", "import", "--csv", dir + "/people.csv", "--config", dir + "/config.toml"])
    #expect(status == 0 && output.contains("5 added, 1 changed"), "\(output)")
    let text = file(dir + "/allow-list.txt")
    #expect(text.hasPrefix(comment + "\ntext:ALICE-0001 label=alice until=2027-06-01T00:00:00Z\nsha256:"), "\(text)")
    #expect(!text.contains("CAROL") && !text.contains("DAVE") && text.contains(" label=dave schedule=evenings\n"))
    // A spreadsheet's names as they are: kept escaped, as the file, the console and the log show them.
    #expect(text.contains(" label=ivy%20smith\n") && text.contains(" label=Zo%C3%AB%2050%25\n"), "\(text)")
    // The payload with a quote, a comma and a line break is what Python wrote: its SHA-256 by hashlib.
    let (_, digest) = runCommand([
      "/usr/bin/python3", "-c", "import hashlib; print(hashlib.sha256(b'CAROL, \"the\" 3rd\\nline').hexdigest())",
    ])
    #expect(digest.count == 65 && text.contains("sha256:\(digest.dropLast()) label=carol until=2027-01-01T00:00:00Z\n"), "\(digest) \(text)")
    (status, output) = runCommand([scangateBinary, "allow-list", "export", "--csv", "--config", dir + "/config.toml"])
    #expect(status == 0)
    writeFile(dir + "/export.csv", output.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("scangate") }.joined(separator: "\n"))
    let read = """
      import csv, sys
      for r in csv.DictReader(open(sys.argv[1], newline='')):
          print(r['label'], r['kind'], r['until'] or '-', r['schedule'] or '-')
      """
    let (_, rows) = runCommand(["/usr/bin/python3", "-c", read, dir + "/export.csv"])
    #expect(
      rows.split(separator: "\n").map(String.init) == [
        "alice text 2027-06-01T00:00:00Z -", "carol sha256 2027-01-01T00:00:00Z -", "dave sha256 - evenings",
        "'+1visitor sha256 - -", "ivy smith sha256 - -", "Zo\u{EB} 50% sha256 - -",
      ], "a label a spreadsheet would run as a formula is written inert; names as they were given: \(rows)")
    // The export reads back as it was: importing it changes nothing (the inert quote is dropped).
    let unchanged = file(dir + "/allow-list.txt")
    (status, output) = runCommand([scangateBinary, "allow-list", "import", "--csv", dir + "/export.csv", "--config", dir + "/config.toml"])
    #expect(status == 0 && output.contains("0 added, 0 changed") && file(dir + "/allow-list.txt") == unchanged, "\(output)")
    #expect(!output.contains("ALICE-0001") && !output.contains("CAROL"), "export never shows a payload")
    #expect(!output.contains(try! Regex("[0-9a-f]{64}")), "nor a digest: \(output)")
    // --remove-missing: labelled entries no row names go; a hand-written entry without a label stays.
    writeFile(dir + "/allow-list.txt", file(dir + "/allow-list.txt") + "text:NOLABEL-9\n")
    writeFile(dir + "/dave.csv", "label,schedule\r\ndave,evenings\r\n")
    (status, output) = runCommand([
      scangateBinary, "allow-list", "import", "--csv", dir + "/dave.csv", "--remove-missing", "--config", dir + "/config.toml",
    ])
    #expect(
      status == 0 && output.contains("removed alice") && output.contains("removed carol") && output.contains("removed +1visitor")
        && output.contains("1 unchanged"), "\(output)")
    let left = file(dir + "/allow-list.txt")
    #expect(left.hasPrefix(comment + "\nsha256:") && left.hasSuffix(" label=dave schedule=evenings\ntext:NOLABEL-9\n"), "\(left)")
  }
}
