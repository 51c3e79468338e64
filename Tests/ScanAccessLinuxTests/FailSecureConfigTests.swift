import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// A configuration that looks right never fails open (docs/credentials.md, "Every flag on every
/// reader"), on the built binary: a PIN on a reader that cannot ask for one, a schedule name that
/// resolves to nothing.
@Suite(.serialized) struct FailSecureConfigTests {
  /// A replayed reader showing HANK-0001, hank on the list; `more` adds sections.
  func reader(
    _ tag: String, allowList: String = "text:HANK-0001 label=hank\n", _ more: @escaping (String) -> String = { _ in "" }
  ) -> (String, String) {
    hankReader(tag, allowList: allowList, more)
  }

  func consolePort(_ child: Child) -> String {
    child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?
      .split(separator: ":").last.map(String.init) ?? "0"
  }

  func file(_ path: String) -> String { (try? readWholeFile(path, maxBytes: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

  @Test("a PIN set on a reader with no keypad is never skipped: denied-pin-unavailable on scans and CHECK, said at load, on STATUS and by check-config")
  func pinWithoutKeypad() {
    let (dir, config) = reader("pin-no-keypad")
    defer { removeTree(dir) }
    var (status, out) = runCommand([scangateBinary, "allow-list", "pin-key", dir + "/pin.key"])
    #expect(status == 0, "\(out)")
    // The site admin's shortcut: a PIN for hank, on a reader whose config has no [keypad].
    (status, out) = runCommand(["/bin/sh", "-c", "echo 2468 | '\(scangateBinary)' allow-list pin --config '\(config)' --pin-key '\(dir)/pin.key' --label hank"])
    #expect(status == 0 && out.contains("hank now needs a PIN"), "\(out)")
    #expect(out.contains("no keypad") && out.contains("denied-pin-unavailable"), "the command says the reader cannot ask: \(out)")
    #expect(file(dir + "/allow-list.txt").contains(" pin="))

    (status, out) = runCommand([scangateBinary, "check-config", "--config", config])
    #expect(status != 0 && out.contains("1 entries need a PIN") && out.contains("denied-pin-unavailable"), "\(out)")

    let child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision denied-pin-unavailable qr label=hank"), "\(child.output)")
    #expect(child.output.contains("1 entries need a PIN after the pass and this reader cannot ask for one"), "said at load: \(child.output)")
    // Held for a while: every scan of hank is refused, none granted, the relay never pulses.
    #expect(child.waitForOutput("decision denied-pin-unavailable qr label=hank", timeoutSeconds: 5))
    usleep(1_500_000)
    #expect(!child.output.contains("decision granted"), "\(child.output)")
    #expect(!child.output.contains("relay active"), "\(child.output)")
    let port = consolePort(child)
    (status, out) = runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret", "--command", "CHECK HANK-0001"])
    #expect(out.contains("denied-pin-unavailable") && !out.contains("granted"), "\(out)")
    (status, out) = runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--command", "STATUS"])
    out = ConsoleLayout.join(out)  // a line as written: its continuation lines joined
    #expect(out.contains("1 need a PIN and no keypad asks here: denied-pin-unavailable"), "\(out)")
  }

  @Test("a schedule name that does not exist is refused whole at load, import, dry run and check-config, naming the line and the name")
  func unknownScheduleName() {
    let (dir, config) = reader(
      "schedule-ref", allowList: "text:HANK-0001 label=hank schedule=day\n",
      { dir in
        """
        [schedule]
        path = "\(dir)/schedules.txt"
        """
      })
    defer { removeTree(dir) }
    writeFile(dir + "/schedules.txt", "schedule day mon-sun 00:00-24:00\n")

    // check-config: the list resolves; then a list naming `evenings` is refused with its line and name.
    var (status, out) = runCommand([scangateBinary, "check-config", "--config", config])
    #expect(status == 0 && out.contains("1 schedules (day)") && out.contains("allow-list.txt: 1 entries"), "\(out)")
    writeFile(dir + "/allow-list.txt", "text:HANK-0001 label=hank schedule=day\ntext:IVY-0002 label=ivy schedule=evenings\n")
    (status, out) = runCommand([scangateBinary, "check-config", "--config", config])
    #expect(status != 0 && out.contains("line 2: schedule=evenings: the schedule file has no schedule of that name (it defines day)"), "\(out)")
    writeFile(dir + "/allow-list.txt", "text:HANK-0001 label=hank schedule=day\n")

    // Import and its dry run: refused whole, the CSV row named, nothing written.
    writeFile(dir + "/people.csv", "payload,label,schedule\r\nIVY-0002,ivy,evenings\r\nJO-0003,jo,day\r\n")
    for dry in [true, false] {
      (status, out) = runCommand(
        [scangateBinary, "allow-list", "import", "--config", config, "--csv", dir + "/people.csv"] + (dry ? ["--dry-run"] : []))
      #expect(status != 0 && out.contains("record 2") && out.contains("schedule=evenings") && out.contains("nothing written"), "\(out)")
    }
    #expect(file(dir + "/allow-list.txt") == "text:HANK-0001 label=hank schedule=day\n")

    // The running reader: a reload naming a missing schedule is refused, the live list stays (hank granted).
    let child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    let port = consolePort(child)
    writeFile(dir + "/allow-list.txt", "text:HANK-0001 label=hank schedule=evenings\n")
    (status, out) = runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret", "--command", "RELOAD"])
    #expect(out.contains("schedule=evenings"), "\(out)")
    #expect(child.waitForOutput("line 1: schedule=evenings: the schedule file has no schedule of that name"), "\(child.output)")
    // A schedule file that drops a name the live list uses is refused too; the live schedules stay.
    writeFile(dir + "/schedules.txt", "schedule night mon-sun 00:00-24:00\n")
    #expect(child.waitForOutput("it drops \"day\", which the allow-list names"), "\(child.output)")
    let grants = child.output.ranges(of: "decision granted qr label=hank").count
    #expect(
      child.waitForOutput("decision granted qr label=hank", count: grants + 1), "hank is still granted by the live list and schedules: \(child.output)")
    #expect(!child.output.contains("denied-outside-schedule"), "\(child.output)")
    _ = kill(child.pid, SIGTERM)
    _ = child.wait()
    // A start with nothing live: refusing the file would deny everyone, so it loads, the entry
    // naming the missing schedule is denied, and the fault says the line and the name.
    let restarted = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(restarted.pid, SIGTERM); _ = restarted.wait() }
    #expect(restarted.waitForOutput("decision denied-outside-schedule qr label=hank"), "\(restarted.output)")
    #expect(restarted.output.contains("line 1: schedule=evenings") && restarted.output.contains("loaded at the start all the same"), "\(restarted.output)")
  }

  @Test("every file the reader makes has its own mode: started with umask 000, nothing in its state folder is readable by others")
  func fileModes() {
    let (dir, config) = reader("file-modes")
    defer { removeTree(dir) }
    let (status, out) = runCommand(["/bin/sh", "-c", "umask 000; exec '\(scangateBinary)' run --config '\(config)' --frames 40"])
    #expect(status == 0 && out.contains("decision granted qr label=hank"), "\(out)")
    var checked: [String] = []
    for name in ["audit.db", "audit.db-wal", "audit.db-shm", "audit.db.key", "audit.db.tag-key", "audit.db.committed", "log-id", "clock-floor"] {
      var st = stat()
      guard stat(dir + "/" + name, &st) == 0 else { continue }
      checked.append(name)
      #expect(st.st_mode & 0o077 == 0, "\(name) is \(String(st.st_mode & 0o777, radix: 8)): group or others can read it")
    }
    #expect(checked.contains("audit.db") && checked.contains("log-id"), "\(checked)")
  }

  @Test("ENROL CANDIDATES shows what was scanned; ENROL <tag> enrols that one; a code with control characters or a signed pass is refused")
  func enrolCandidates() {
    let (dir, config) = reader("enrol-candidates")
    defer { removeTree(dir) }
    // Three codes in turn: a visitor's badge, a hostile code with a control byte, a pass's text
    // on a reader without signed passes (denied as unknown like any code it does not know).
    for (name, payload) in [("b-visitor", "VISITOR-0042"), ("c-hostile", "EVIL\u{01}X"), ("d-pass", "SG1:NC3T9W8")] {
      #expect(writePNG(path: dir + "/" + name + ".png", pixels: qrFrame(payload).pixels, width: 640, height: 480, components: 1))
    }
    let child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    #expect(child.waitForOutput("decision denied-unknown", count: 3), "\(child.output)")
    let port = consolePort(child)
    func console(_ line: String) -> String {
      // Lines as written: their continuation lines joined (docs/console.md).
      ConsoleLayout.join(
        runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret", "--command", line]).1)
    }
    let listing = console("ENROL CANDIDATES")
    #expect(listing.contains("OK 3 candidates"), "\(listing)")
    func tag(_ payload: String) -> String {
      let line = listing.split(separator: "\n").first { $0.contains("payload=" + payload) } ?? ""
      return line.split(separator: " ").dropFirst().first.map(String.init) ?? "none"
    }
    #expect(listing.contains("payload=EVIL%01X (control characters: not enrolled)"), "escaped, and said: \(listing)")
    #expect(listing.contains("payload=SG1:NC3T9W8 (a signed pass: not enrolled)"), "\(listing)")
    #expect(!listing.contains("payload=HANK"), "a granted code is no candidate: \(listing)")
    var reply = console("ENROL \(tag("EVIL%01X")) label=evil")
    #expect(reply.contains("ERR 409") && reply.contains("control characters"), "\(reply)")
    reply = console("ENROL \(tag("SG1:NC3T9W8")) label=pass")
    #expect(reply.contains("ERR 409") && reply.contains("signed pass"), "\(reply)")
    reply = console("ENROL 0000000000000000 label=nobody")
    #expect(reply.contains("ERR 404"), "\(reply)")
    // From a shell on the reader: `allow-list enrol` goes through the console as an operator, a
    // spreadsheet's name kept escaped, shown once-escaped in the reply and the journal.
    let (enrolStatus, enrolled) = runCommand([
      scangateBinary, "allow-list", "enrol", "--config", config, "--tcp", "127.0.0.1:" + port, "--tag", tag("VISITOR-0042"),
      "--label", "Vis Itor",
    ])
    #expect(enrolStatus == 0 && enrolled.contains(" enrolled Vis%20Itor tag=\(tag("VISITOR-0042"))"), "\(enrolled)")
    #expect(child.waitForOutput("decision granted qr label=Vis%20Itor tag="), "\(child.output)")
    reply = console("LIST")
    #expect(reply.contains("| Vis%20Itor tag=\(tag("VISITOR-0042"))"), "\(reply)")
    reply = console("ENROL \(tag("VISITOR-0042")) label=visitor2")
    #expect(reply.contains("ERR 409") && reply.contains("already decides"), "\(reply)")
    let list = file(dir + "/allow-list.txt")
    #expect(list.contains(" label=Vis%20Itor\n") && !list.contains("evil") && !list.contains("label=pass"), "\(list)")
    #expect(!child.output.contains("VISITOR-0042") && !child.output.contains("EVIL"), "the journal shows tags, never payloads")
  }
}
