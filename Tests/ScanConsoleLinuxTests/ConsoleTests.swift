import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The console on real transports: TCP on loopback and a pty pair for serial, served by the real
/// run loop (stepped on the test's thread between sends and reads).
@Suite(.serialized) struct ConsoleTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock, FixtureDigester
  >

  final class Rig: @unchecked Sendable {
    let clock = SystemMonotonicClock()
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let directory = temporaryDirectory("console")
    var loop: Loop
    let port: UInt16

    init(
      consoleSettings: (inout ConsoleSettings) -> Void = { _ in }, secret: String? = "correct horse battery",
      payloads: [[UInt8]] = [Array("ALICE".utf8)], script: [ScriptedFrameSource.Step] = [.frame(0)]
    ) {
      relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
      writeFile(directory + "/allow-list.txt", "text:ALICE label=alice\n")
      var settings = ConsoleSettings()
      settings.listen = ["127.0.0.1:0"]
      if let secret {
        writeFile(directory + "/secret", secret + "\n")
        chmod(directory + "/secret", 0o600)
        settings.secretFile = directory + "/secret"
      }
      settings.auth.failuresMax = 3
      settings.auth.lockoutSeconds = 60
      consoleSettings(&settings)
      let console = try! ConsoleServer(settings: settings, clock: clock)
      port = UInt16(console.boundAddresses.first.map { $0.split(separator: ":").last! }.flatMap { UInt16($0) } ?? 0)
      var engineSettings = EngineSettings()
      engineSettings.actuation.relayPulseMillisecondsMax = 5_000
      let engine = ScanEngine(
        settings: engineSettings, decoder: FixtureDecoder(payloads: payloads), relay: relay, buzzer: buzzer, clock: clock,
        wall: SystemWallClock(), digester: FixtureDigester(), events: EventRing(capacity: 4096), maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.allowListPath = directory + "/allow-list.txt"
      loopSettings.handleSignals = false
      let frames = (0...payloads.count).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
      let clock = self.clock
      loop = Loop(engine: engine, settings: loopSettings, console: console) { () throws(CaptureError) in
        ScriptedFrameSource(width: 64, height: 48, frames: frames, script: script, loops: true, clock: clock)
      }
      _ = loop.reloadAllowList()
    }

    deinit { removeTree(directory) }

    func step(_ times: Int = 1) {
      for _ in 0..<times { loop.runOnce(maximumWaitMilliseconds: 2) }
    }

    func connect() -> TestClient {
      let client = rawConnect(port: port)
      _ = client.readUntil { $0.contains("console ready") }
      return client
    }

    /// A plain non-blocking TCP connection to `port` on loopback (no wait for the greeting).
    func rawConnect(port: UInt16) -> TestClient {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var sa = sockaddr_in()
      sa.sin_family = sa_family_t(AF_INET)
      sa.sin_port = port.bigEndian
      sa.sin_addr.s_addr = inet_addr("127.0.0.1")
      let rc = withUnsafePointer(to: &sa) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      precondition(rc == 0, "connect failed")
      _ = sg_fcntl_int(fd, F_SETFL, sg_fcntl_int(fd, F_GETFL, 0) | O_NONBLOCK)
      return TestClient(fd: fd, rig: self)
    }
  }

  /// A client socket; reads step the loop until the expected text arrives.
  final class TestClient {
    let fd: Int32
    unowned let rig: Rig
    var received: [UInt8] = []
    init(fd: Int32, rig: Rig) {
      self.fd = fd
      self.rig = rig
    }
    deinit { close(fd) }

    /// Sends `bytes` in chunks, stepping the loop in between. Stops early if the reader
    /// closed the connection; returns whether everything was sent.
    @discardableResult
    func send(_ bytes: [UInt8], chunk: Int = 1 << 20) -> Bool {
      var offset = 0
      for _ in 0..<100_000 where offset < bytes.count {
        let n = bytes[offset..<min(bytes.count, offset + chunk)].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n > 0 { offset += n } else if n < 0 && errno != EAGAIN && errno != EINTR { return false }
        rig.step()
      }
      return offset == bytes.count
    }
    @discardableResult func send(_ text: String, chunk: Int = 1 << 20) -> Bool { send(Array(text.utf8), chunk: chunk) }

    /// Reads (stepping the loop) until `done` holds for the text received so far, or 5 s pass.
    @discardableResult
    func readUntil(_ done: (String) -> Bool) -> String {
      let end = SystemMonotonicClock().now().adding(milliseconds: 5_000)
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while SystemMonotonicClock().now() < end {
        rig.step()
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { received += buffer[0..<n] }
        if n == 0 { break }
        if done(text) { break }
      }
      return text
    }
    var text: String { String(decoding: received, as: UTF8.self) }
    func statusLines() -> [Substring] { text.split(separator: "\n").filter { $0.hasPrefix("OK") || $0.hasPrefix("ERR") } }
    func clear() { received = [] }
    /// Sends `line` and returns the reply (body and status) once its status line arrived, its
    /// continuation lines joined (ConsoleLayout.join): a line as the reader wrote it.
    func command(_ line: String) -> [Substring] {
      clear()
      send(line + "\n")
      readUntil { t in t.split(separator: "\n").contains { $0.hasPrefix("OK") || $0.hasPrefix("ERR") } }
      return ConsoleLayout.join(text).split(separator: "\n").filter { !$0.hasPrefix("!") }
    }
  }

  @Test("one byte at a time, or many commands in one write; LF and CRLF")
  func chunking() {
    // This test is about framing: a budget large enough for 200 commands in one write.
    let rig = Rig(consoleSettings: { $0.limits.lineBurst = 1_000 })
    let client = rig.connect()
    client.send("version\r\n", chunk: 1)
    client.readUntil { $0.contains("OK scangate") }
    #expect(client.statusLines().count == 1)
    client.clear()
    let many = String(repeating: "VERSION\nstatus\r\n", count: 100)
    client.send(many, chunk: 4_096)
    client.readUntil { $0.split(separator: "\n").filter { $0.hasPrefix("OK") }.count >= 200 }
    #expect(client.statusLines().count == 200)
    #expect(client.statusLines().allSatisfy { $0.hasPrefix("OK") })
  }

  @Test("an overlong line is rejected whole; nothing of it runs; the next line works")
  func overlong() {
    let rig = Rig()
    let client = rig.connect()
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    let reply = client.command("OPEN " + String(repeating: "9", count: 600))
    #expect(reply.last == "ERR 413 line too long (max 512 bytes)")
    // "OPEN" past the limit must not become a command either.
    let reply2 = client.command(String(repeating: " ", count: 510) + "XXOPEN")
    #expect(reply2.last?.hasPrefix("ERR 413") == true)
    rig.step(50)
    #expect(rig.relay.edges.isEmpty)
    #expect(client.command("VERSION").last?.hasPrefix("OK scangate") == true)
  }

  @Test("NUL, binary garbage and escape sequences are rejected, never crash or echo raw")
  func garbage() {
    let rig = Rig()
    let client = rig.connect()
    client.clear()
    var garbage: [UInt8] = [0, 1, 2, 0xFF, 0xFE, 0x1B, 0x5B, 0x32, 0x4A, 0x0A]
    garbage += Array("STA\u{0}TUS\n".utf8) + [0x80, 0x81, 0x0D, 0x0A]
    for seed in 0..<50 { garbage += (0..<97).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) } }
    garbage += [0x0A]
    client.send(garbage, chunk: 333)
    client.send("VERSION\n")
    client.readUntil { $0.contains("OK scangate") }
    #expect(client.statusLines().filter { $0.hasPrefix("ERR 400") }.count >= 3)
    #expect(!client.received.contains(0x1B) && !client.received.contains(0))
  }

  @Test("a scanned payload with CRLF, a fake OK and ANSI escapes reaches WATCH and LAST escaped")
  func hostilePayload() {
    let evil = Array("X\r\nOK operator\u{1b}[2J\u{1b}]0;pwned\u{7}".utf8)
    let rig = Rig(payloads: [evil], script: [.frame(1)])
    let client = rig.connect()
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    #expect(client.command("WATCH ON").last == "OK watching")
    client.clear()
    client.readUntil { $0.contains("decision denied-unknown") }
    let last = client.command("LAST 1")
    #expect(last.first?.contains("payload=X%0D%0AOK%20operator%1B[2J%1B]0;pwned%07") == true, "\(last)")
    #expect(!client.received.contains(0x1B) && !client.received.contains(0x07))
    #expect(!client.text.split(separator: "\n").contains("OK operator"))
    let check = client.command("CHECK X%0D%0AOK")
    #expect(check.last == "OK denied-unknown")
  }

  @Test("without AUTH, LAST and WATCH show label and digest but never the pass; LOG, SNAPSHOT and CHECK are refused")
  func unauthenticatedSeesNoPayload() {
    let rig = Rig(script: [.frame(1)])
    let client = rig.connect()
    #expect(client.command("WATCH ON").last == "OK watching (payloads hidden until AUTH)")
    client.readUntil { $0.contains("decision granted") }
    let last = client.command("LAST 5")
    #expect(last.first?.contains("decision granted") == true && last.first?.contains("label=alice") == true, "\(last)")
    #expect(last.first?.contains("sha256=") == false)  // never an unkeyed digest (PayloadTagTests)
    #expect(!client.text.contains("ALICE") && !client.text.contains("payload="), "\(client.text)")
    for command in ["LOG 5", "SNAPSHOT", "SNAPSHOT TEXT", "CHECK ALICE"] {
      #expect(client.command(command).last == "ERR 401 operator command: AUTH first", "\(command)")
    }
  }

  @Test("QUIT answers OK bye and closes the connection at once, freeing the slot")
  func quitCloses() {
    let rig = Rig()
    let client = rig.connect()
    #expect(rig.loop.console!.connectedClients == 1)
    client.send("QUIT\n")
    let end = SystemMonotonicClock().now().adding(milliseconds: 1_000)
    var closed = false
    var buffer = [UInt8](repeating: 0, count: 256)
    while !closed && SystemMonotonicClock().now() < end {
      rig.step()
      let n = buffer.withUnsafeMutableBytes { Glibc.recv(client.fd, $0.baseAddress, $0.count, 0) }
      if n > 0 { client.received += buffer[0..<n] }
      closed = n == 0
    }
    #expect(client.text.contains("OK bye"))
    #expect(closed, "the connection stayed open after QUIT")
    #expect(rig.loop.console!.connectedClients == 0)
  }

  @Test("a client that floods lines is throttled, told once, and its lines are dropped, not queued")
  func throttled() {
    let rig = Rig()
    let client = rig.connect()
    client.send(String(repeating: "STATUS\n", count: 200), chunk: 8_192)
    client.readUntil { $0.contains("ERR 429 too many lines") }
    rig.step(20)
    let replies = client.statusLines()
    #expect(replies.filter { $0.hasPrefix("ERR 429") }.count == 1, "\(replies.count) replies")
    #expect(replies.filter { $0.hasPrefix("OK status") }.count <= ConsoleLimits().lineBurst + 2)
    #expect(rig.loop.console!.commands.counters.throttledLines >= 150)
  }

  @Test("operator commands need AUTH; wrong secrets back off, then lock out; OPEN is capped")
  func authentication() {
    let rig = Rig()
    let client = rig.connect()
    #expect(client.command("OPEN").last == "ERR 401 operator command: AUTH first")
    #expect(client.command("AUTH wrong-secret").last == "ERR 403 wrong secret")
    #expect(client.command("AUTH correct%20horse%20battery").last?.hasPrefix("ERR 429") == true)  // backing off
    // The backoff is per address: a second connection from 127.0.0.1 is held too.
    let other = rig.connect()
    #expect(other.command("AUTH correct%20horse%20battery").last?.hasPrefix("ERR 429") == true)
    usleep(1_100_000)
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    let open = client.command("OPEN 60000")
    #expect(open.last?.hasSuffix("open 5000 ms") == true, "\(open)")
    #expect(client.command("RELOAD").last?.contains("allow-list version 2") == true)
    #expect(other.command("RELOAD").last == "ERR 401 operator command: AUTH first")
    rig.step(20)
    #expect(rig.relay.level == .active)
  }

  @Test("repeated failures lock the address out")
  func lockout() {
    let rig = Rig { $0.auth.firstBackoffMilliseconds = 1 }
    let client = rig.connect()
    for _ in 0..<3 {
      _ = client.command("AUTH nope-nope")
      usleep(5_000)
    }
    #expect(client.command("AUTH correct%20horse%20battery").last?.hasPrefix("ERR 423") == true)
  }

  @Test("with no secret file every AUTH fails: there is no default secret")
  func noSecret() {
    let rig = Rig(secret: nil)
    let client = rig.connect()
    #expect(client.command("AUTH anything-at-all").last == "ERR 403 no operator secret is configured")
  }

  @Test("a secret file readable by others is refused")
  func looseSecret() {
    let rig = Rig { settings in
      let path = settings.secretFile
      chmod(path, 0o644)
    }
    let client = rig.connect()
    let status = client.command("STATUS")
    #expect(status.contains { $0.contains("readable by group or others") })
  }

  @Test("64 idle clients are served; one more is refused; the loop keeps scanning")
  func manyClients() {
    let rig = Rig(
      consoleSettings: { s in
        s.clientsMax = 64
        s.clientsPerPeerMax = 65  // one user's 64 sessions and one more: this test is about the slots, not the per-user cap
      }, script: [.frame(0)])
    var clients: [TestClient] = []
    for _ in 0..<64 { clients.append(rig.connect()) }
    #expect(rig.loop.console!.connectedClients == 64)
    let framesBefore = rig.loop.engine.stats.frames
    let extra = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = rig.port.bigEndian
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &sa) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(extra, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    rig.step(20)
    var buffer = [UInt8](repeating: 0, count: 256)
    let n = buffer.withUnsafeMutableBytes { recv(extra, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    #expect(n > 0 && String(decoding: buffer[0..<max(0, n)], as: UTF8.self).hasPrefix("ERR 503 too many clients"))
    close(extra)
    #expect(clients[63].command("STATUS").last?.hasPrefix("OK status ") == true)
    // The count is of the lines sent (continuation lines included), each within 80 columns.
    let sent = clients[63].text.split(separator: "\n").filter { !$0.hasPrefix("!") }
    #expect(sent.last == "OK status \(sent.count - 1) lines" && sent.allSatisfy { $0.utf8.count <= 80 }, "\(sent)")
    #expect(rig.loop.engine.stats.frames > framesBefore)
  }

  @Test("a client that never reads is dropped when its buffer fills; the loop is never blocked")
  func slowClient() {
    let rig = Rig(consoleSettings: { $0.clientOutputBytes = 4_096 })
    let reader = rig.connect()
    let hog = rig.connect()
    #expect(throws: Never.self) { try setSocketOption(hog.fd, level: SOL_SOCKET, name: SO_RCVBUF, value: 4_096) }
    let framesBefore = rig.loop.engine.stats.frames
    // Ask for megabytes of replies and never read them.
    for _ in 0..<200 {
      if !hog.send(String(repeating: "HELP\n", count: 50)) { break }
    }
    rig.step(200)
    #expect(rig.loop.console!.droppedClients >= 1)
    #expect(rig.loop.engine.stats.frames > framesBefore + 100)
    #expect(reader.command("VERSION").last?.hasPrefix("OK scangate") == true)
  }

  @Test("serial through a pty: raw 8N1, commands and replies, and a reopen after unplugging")
  func serial() throws {
    func makePty() -> (Int32, String) {
      var name = [CChar](repeating: 0, count: 128)
      let master = sg_open_pty(&name, name.count)
      precondition(master >= 0)
      return (master, name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }
    let link = temporaryDirectory("tty") + "/ttyUSB"
    var (master, path) = makePty()
    symlink(path, link)
    let rig = Rig { $0.serialPath = link }
    func exchange(_ line: String) -> String {
      _ = line.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
      var got: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      for _ in 0..<2_000 {
        rig.step()
        let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
        if n > 0 { got += buffer[0..<n] }
        let text = String(decoding: got, as: UTF8.self)
        if text.contains("\nOK") || text.contains("\nERR") || text.hasPrefix("OK") || text.hasPrefix("ERR") { return text }
      }
      return String(decoding: got, as: UTF8.self)
    }
    rig.step(5)
    #expect(rig.loop.console!.serialOpen)
    // A technician's terminal (picocom, screen) needs CR LF: a bare LF would step down without returning.
    let reply = exchange("STATUS\r\n")
    let bytes = Array(reply.utf8)
    let lineFeeds = bytes.indices.filter { bytes[$0] == 0x0A }
    #expect(!lineFeeds.isEmpty && lineFeeds.allSatisfy { $0 > 0 && bytes[$0 - 1] == 0x0D } && !reply.contains("\r\r"), "\(reply)")
    // Unplug: the pty goes away. The console closes it and keeps retrying.
    close(master)
    unlink(link)
    rig.step(100)
    #expect(!rig.loop.console!.serialOpen)
    // Plug back in (a new device node behind the same stable name).
    (master, path) = makePty()
    symlink(path, link)
    for _ in 0..<300 where !rig.loop.console!.serialOpen {
      rig.step()
      usleep(10_000)
    }
    #expect(rig.loop.console!.serialOpen)
    #expect(exchange("VERSION\n").contains("OK scangate"))
    close(master)
    unlink(link)
  }

  @Test("operator actions and AUTH outcomes are recorded by verb; no typed line, secret or guess is ever recorded")
  func audit() {
    let rig = Rig()
    let client = rig.connect()
    // Mistyped AUTH lines, as a careless technician types them: none may reach the ring.
    _ = client.command("AUTH correct%20horse%20battery extra")
    _ = client.command("AUHT correct%20horse%20battery")
    _ = client.command("AUTH correct%2horse")
    _ = client.command("STATUS")
    usleep(1_100_000)
    _ = client.command("AUTH correct%20horse%20battery")
    _ = client.command("OPEN 100")
    var commands: [String] = []
    var s: UInt64 = 1
    while case .event(let e) = rig.loop.engine.events.read(s) {
      if e.kind == .command { commands.append(e.withPayload { String(decoding: $0, as: UTF8.self) }) }
      s += 1
    }
    #expect(commands == ["AUTH ok", "OPEN 100"])
    var s2: UInt64 = 1
    while case .event(let e) = rig.loop.engine.events.read(s2) {
      let text = e.withPayload { String(decoding: $0, as: UTF8.self) }
      #expect(!text.contains("horse"), "the secret reached the event ring: \(text)")
      s2 += 1
    }
    #expect(rig.loop.console!.commands.counters.badLines >= 3)
    #expect(client.text.contains("OK #"))
  }

  // MARK: - Local users as peers (issue 26, item 8)

  /// A pty standing in for the serial cable: (master fd, slave path).
  static func makePty() -> (Int32, String) {
    var name = [CChar](repeating: 0, count: 128)
    let master = sg_open_pty(&name, name.count)
    precondition(master >= 0)
    return (master, name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
  }

  /// Sends `line` on the pty's master side and steps the loop until a status line comes back.
  static func serialExchange(_ rig: Rig, _ master: Int32, _ line: String) -> String {
    _ = line.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    for _ in 0..<2_000 {
      rig.step()
      let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
      if n > 0 { got += buffer[0..<n] }
      let lines = String(decoding: got, as: UTF8.self).split(separator: "\n")
      if lines.contains(where: { $0.hasPrefix("OK") || $0.hasPrefix("ERR") }) { break }
    }
    return String(decoding: got, as: UTF8.self)
  }

  /// A console client run as user `nobody` (another local user than the tests' root): opens
  /// `connections` sockets to the console, reads each one's first line, then sends `AUTH
  /// wrong-N` `wrongAuths` times on the first one that was greeted (waiting out each backoff),
  /// prints what it got, and holds every socket open until `holdSeconds` pass.
  static let nobodyClient = """
    import socket, sys, time
    port, connections, wrong, hold = (int(a) for a in sys.argv[1:5])
    socks, firsts = [], []
    for i in range(connections):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        socks.append(s)
    for s in socks:
        f = s.makefile("rb")
        firsts.append(f.readline().decode(errors="replace").strip())
    greeted = [s for s, line in zip(socks, firsts) if "console ready" in line]
    print("greeted %d refused %d" % (len(greeted), sum(1 for line in firsts if line.startswith("ERR 503"))), flush=True)
    if greeted and wrong:
        f = greeted[0].makefile("rb")
        for i in range(wrong):
            for attempt in range(50):
                greeted[0].sendall(b"AUTH wrong-%d\\n" % i)
                reply = f.readline().decode(errors="replace").strip()
                if not reply.startswith("ERR 429"):
                    break
                time.sleep(0.05)
            print("auth %d: %s" % (i, reply), flush=True)
    print("done", flush=True)
    time.sleep(hold)
    """

  /// Starts `nobodyClient` as user nobody; steps the loop until it printed "done" (or 20 s).
  static func runAsNobody(_ rig: Rig, connections: Int, wrongAuths: Int, holdSeconds: Int = 30) -> Child {
    let script = rig.directory + "/nobody.py"
    writeFile(script, nobodyClient)
    chmod(rig.directory, 0o755)
    chmod(script, 0o644)
    let child = Child.start([
      "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", script, "\(rig.port)",
      "\(connections)", "\(wrongAuths)", "\(holdSeconds)",
    ])
    let end = SystemMonotonicClock().now().adding(milliseconds: 20_000)
    while SystemMonotonicClock().now() < end && !child.output.contains("done") { rig.step(5) }
    return child
  }

  static var canSwitchUser: Bool { getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0 && access("/usr/bin/python3", X_OK) == 0 }

  @Test(
    "another local user's 20 idle sockets and 5 wrong AUTHs lock out that user only: root connects and AUTHs, the serial console answers",
    .enabled(if: canSwitchUser))
  func otherLocalUserCannotLockOutOperator() {
    let link = temporaryDirectory("tty") + "/ttyUSB"
    let (master, path) = Self.makePty()
    symlink(path, link)
    defer {
      close(master)
      unlink(link)
    }
    let rig = Rig { s in
      s.serialPath = link
      s.auth.failuresMax = 5
      s.auth.lockoutSeconds = 300
      s.auth.firstBackoffMilliseconds = 10
    }
    #expect(rig.loop.console!.settings.clientsMax == 16 && rig.loop.console!.settings.clientsPerPeerMax == 4)
    let child = Self.runAsNobody(rig, connections: 20, wrongAuths: 5)
    defer {
      kill(child.pid, SIGKILL)
      _ = child.wait(timeoutSeconds: 5)
    }
    let report = child.output
    #expect(report.contains("greeted 4 refused 16"), "\(report)")
    #expect(report.contains("auth 4: ERR 403 wrong secret"), "\(report)")
    #expect(rig.loop.console!.connectedClients == 4)
    if case .lockedOut = rig.loop.console!.commands.gate.admit(.localUser(65_534), at: rig.clock.now()) {
    } else {
      Issue.record("nobody is not locked out after 5 failures")
    }
    // The operator, as root on the same host, while nobody's sockets are still open.
    let operatorClient = rig.rawConnect(port: rig.port)
    #expect(operatorClient.readUntil { $0.contains("\n") }.contains("console ready"), "\(operatorClient.text)")
    #expect(operatorClient.command("AUTH correct%20horse%20battery").last == "OK operator")
    // The serial console answers and authenticates through all of it.
    #expect(Self.serialExchange(rig, master, "STATUS\r").contains("OK status"))
    #expect(Self.serialExchange(rig, master, "AUTH correct%20horse%20battery\r").contains("OK operator"))
    let status = operatorClient.command("STATUS").joined(separator: "\n")
    #expect(status.contains("16 rejected") && status.contains("local peers by user"), "\(status)")
  }

  @Test(
    "with no per-user cap, 16 idle sockets of one user take every slot: the next user gets the longest-idle one",
    .enabled(if: canSwitchUser))
  func idleUnauthenticatedSlotIsReclaimed() {
    let rig = Rig { $0.clientsPerPeerMax = 16 }
    let child = Self.runAsNobody(rig, connections: 16, wrongAuths: 0)
    defer {
      kill(child.pid, SIGKILL)
      _ = child.wait(timeoutSeconds: 5)
    }
    #expect(child.output.contains("greeted 16 refused 0"), "\(child.output)")
    #expect(rig.loop.console!.connectedClients == 16)
    let operatorClient = rig.rawConnect(port: rig.port)
    #expect(operatorClient.readUntil { $0.contains("\n") }.contains("console ready"), "\(operatorClient.text)")
    #expect(operatorClient.command("AUTH correct%20horse%20battery").last == "OK operator")
    #expect(rig.loop.console!.reclaimedClients == 1 && rig.loop.console!.connectedClients == 16)
    // An operator's connection is never reclaimed: nobody's 17th is refused now.
    let again = Self.runAsNobody(rig, connections: 1, wrongAuths: 0, holdSeconds: 0)
    #expect(again.output.contains("greeted 0 refused 1"), "\(again.output)")
    _ = again.wait(timeoutSeconds: 5)
  }

  @Test("an AUTH from a socket closed before it was accepted is charged to the unknown local peer, never to root")
  func closedSocketIsNotRoot() {
    let rig = Rig { $0.auth.firstBackoffMilliseconds = 60_000 }
    let operatorClient = rig.connect()
    // Connect, send a wrong AUTH and close, all before the loop accepts: the kernel then reports
    // the closed end as uid 0, inode 0.
    let ghost = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = rig.port.bigEndian
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &sa) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(ghost, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    _ = "AUTH wrong-ghost\n".withCString { Glibc.send(ghost, $0, 17, 0) }
    close(ghost)
    usleep(20_000)
    rig.step(20)
    if case .allowed = rig.loop.console!.commands.gate.admit(.loopback, at: rig.clock.now()) {
      Issue.record("the closed socket's AUTH was not counted against the unknown local peer")
    }
    #expect(operatorClient.command("AUTH correct%20horse%20battery").last == "OK operator")
  }

  // MARK: - Allow-list errors on STATUS (issue 26, item 10)

  @Test("STATUS shows a rejected allow-list's line number and reason, never the line")
  func rejectedListLineNotShown() {
    let rig = Rig()
    writeFile(rig.directory + "/allow-list.txt", "text:ALICE label=alice\ntxt:VAULT-99812\n")
    _ = rig.loop.reloadAllowList()
    let client = rig.connect()
    let status = client.command("STATUS").joined(separator: "\n")
    #expect(status.contains("last load failed: line 2: entry must start with text: or sha256:"), "\(status)")
    #expect(!status.contains("VAULT") && !status.contains("9981"), "\(status)")
  }
}
