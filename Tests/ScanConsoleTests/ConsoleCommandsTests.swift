import ScanConsole
import ScanCore
import ScanSim
import Testing

/// The command interpreter without sockets or real time: a fake reader, a fake output and a
/// manual clock.
@Suite struct ConsoleCommandsTests {
  final class Secret: OperatorSecretVerifier {
    var problem: String? = nil
    func matches(_ candidate: UnsafeRawBufferPointer) -> Bool { Array(candidate) == Array("sesame-open".utf8) }
  }

  final class Output: ConsoleOutput {
    var text: [Int: String] = [:]
    var closing: Set<Int> = []
    func send(_ slot: Int, _ body: (inout ByteWriter) -> Void) {
      withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        body(&w)
        text[slot, default: ""] += String(decoding: w.written, as: UTF8.self)
      }
    }
    func closeWhenFlushed(_ slot: Int) { closing.insert(slot) }
    func lastLine(_ slot: Int) -> String { String(text[slot, default: ""].split(separator: "\n").last ?? "") }
  }

  struct Host: ConsoleHost {
    var recorded: [(EventKind, String)] = []
    var opens: [Int?] = []
    var resting = false
    var decision = ScanEvent()

    init() {
      decision.kind = .decision
      decision.verdict = .granted
      decision.setPayload(UnsafeRawBufferPointer(start: "ALICE-0001", count: 10))
      decision.setLabel(UnsafeRawBufferPointer(start: "alice", count: 5))
    }
    func consoleStatus() -> ReaderStatus {
      var s = ReaderStatus()
      s.cameraState = "streaming"
      s.cameraSummary = "usb\u{1b}[2Jcam"  // a hostile USB card name
      return s
    }
    func writeLastDecisions(_ count: Int, payloads: PayloadVisibility, into w: inout ByteWriter) -> Int {
      w.write("| ")
      EventText.write(decision, since: Instant(nanoseconds: 0), payloads: payloads, into: &w)
      w.newline()
      return 1
    }
    var logReads: [Int] = []
    var logQueries: [AuditQuery] = []
    mutating func startLog(_ query: AuditQuery, for session: SessionTicket) -> LogStart {
      logReads.append(query.count)
      logQueries.append(query)
      return .started
    }
    func check(_ payload: UnsafeRawBufferPointer, label: UnsafeMutableRawBufferPointer) -> (Verdict, labelCount: Int) {
      (Array(payload) == Array("ALICE-0001".utf8) ? .granted : .deniedUnknown, 0)
    }
    mutating func open(milliseconds: Int?) -> OpenOutcome {
      opens.append(milliseconds)
      return resting ? .resting(milliseconds: 4_500) : .pulsed(milliseconds: milliseconds ?? 3_000)
    }
    mutating func reload() -> ReloadOutcome { .loaded(version: 2, entries: 7) }
    mutating func selfTest() {}
    mutating func startSnapshot(for session: SessionTicket, text: Bool, redacted: Bool) -> SnapshotStart { .started }
    mutating func record(_ kind: EventKind, code: UInt16, text: UnsafeRawBufferPointer) -> UInt64 {
      recorded.append((kind, String(decoding: text, as: UTF8.self)))
      return UInt64(recorded.count)
    }
  }

  struct Rig {
    let clock = ManualClock()
    let output = Output()
    var host = Host()
    let commands: ConsoleCommands<ManualClock>
    init(limits: ConsoleLimits = ConsoleLimits()) {
      var auth = AuthGate.Settings()
      auth.failuresMax = 3
      commands = ConsoleCommands(slots: 4, limits: limits, auth: auth, secret: Secret(), clock: clock)
      commands.opened(0, peer: .loopback, transport: .tcp)
      commands.opened(3, peer: .serial, transport: .serial)
    }
    mutating func say(_ line: String, slot: Int = 0) -> String {
      output.text[slot] = ""
      Array(line.utf8).withUnsafeBytes { commands.handle(slot, line: $0, host: &host, output: output) }
      return output.lastLine(slot)
    }
  }

  @Test("STATUS is open to all and writes a hostile camera name escaped")
  func status() {
    var rig = Rig()
    #expect(rig.say("STATUS") == "OK status 9 lines")  // the lines sent: the console line folds in three
    #expect(rig.output.text[0]!.contains("| camera streaming usb%1B[2Jcam"))
    #expect(!rig.output.text[0]!.contains("\u{1b}"))
    #expect(rig.host.recorded.isEmpty, "read-only commands are counted, not recorded")
    #expect(rig.commands.counters.readOnlyCommands == 1)
  }

  @Test("STATS counts the console's refusals and the relay watchdog's trips")
  func stats() {
    var rig = Rig()
    _ = rig.say("NOPE")
    #expect(rig.say("STATS") == "OK stats 9 lines")  // the lines sent: two of them fold in two
    let text = ConsoleLayout.join(rig.output.text[0]!)
    #expect(text.contains("relay-watchdog-trips 0"))
    #expect(text.contains("| console read-only 1 bad-lines 1 "), "\(text)")  // STATS itself is read-only
  }

  @Test("LAST hides the payload until AUTH; then shows it, and the read is recorded")
  func lastByRole() {
    var rig = Rig()
    _ = rig.say("LAST 1")
    #expect(!rig.output.text[0]!.contains("ALICE-0001") && rig.output.text[0]!.contains("label=alice"))
    #expect(rig.say("AUTH sesame-open") == "OK operator")
    _ = rig.say("LAST 1")
    #expect(rig.output.text[0]!.contains("payload=ALICE-0001"))
    #expect(rig.host.recorded.map(\.1) == ["AUTH ok", "LAST 1"])
    // LOG is read off the loop's thread: the interpreter only starts it (count capped at 100).
    #expect(rig.say("LOG 500") == "")
    #expect(rig.host.logReads == [100])
    // Filters reach the log as parsed; payloads only for an operator not named by AS.
    #expect(rig.say("LOG 20 verdict=granted label=alice") == "")
    #expect(rig.host.logQueries.last?.verdict == .granted && rig.host.logQueries.last?.labelText == "alice")
    #expect(rig.host.logQueries.map(\.payloads) == [true, true])
  }

  @Test("mistyped AUTH lines are answered but never recorded as typed")
  func mistypedAuth() {
    var rig = Rig()
    #expect(rig.say("AUTH sesame-open extra") == "ERR 400 bad argument (HELP shows the form)")
    #expect(rig.say("AUHT sesame-open") == "ERR 400 unknown command (HELP lists them)")
    #expect(rig.say("AUTH sesame%zzopen") == "ERR 400 bad payload: write bytes as %XX")
    #expect(rig.host.recorded.isEmpty)
    #expect(rig.commands.counters.badLines == 3)
    #expect(rig.say("AUTH wrong-one") == "ERR 403 wrong secret")
    #expect(rig.host.recorded.count == 1 && rig.host.recorded[0].0 == .authFailure && rig.host.recorded[0].1.isEmpty)
  }

  @Test("OPEN during the relay's rest says so instead of OK")
  func openResting() {
    var rig = Rig()
    #expect(rig.say("OPEN") == "ERR 401 operator command: AUTH first")
    #expect(rig.host.opens.isEmpty)
    _ = rig.say("AUTH sesame-open")
    #expect(rig.say("OPEN 500").hasPrefix("OK #") && rig.say("OPEN 500").hasSuffix("open 500 ms"))
    rig.host.resting = true
    #expect(rig.say("OPEN") == "ERR 409 the relay is resting after its maximum on-time; no pulse for 5 s")
  }

  @Test("CHECK is for operators and rate-limited; its answer never echoes the guess")
  func checkBudget() {
    var rig = Rig()
    #expect(rig.say("CHECK ALICE-0001") == "ERR 401 operator command: AUTH first")
    _ = rig.say("AUTH sesame-open")
    #expect(rig.say("CHECK ALICE-0001") == "OK granted")
    #expect(rig.say("CHECK BOB") == "OK denied-unknown")
    #expect(rig.say("CHECK EVE") == "OK denied-unknown")
    #expect(rig.say("CHECK MALLORY") == "ERR 429 CHECK is rate-limited; try again later")
    rig.clock.advance(milliseconds: 5_000)  // 12 per minute: one more after 5 s
    #expect(rig.say("CHECK MALLORY") == "OK denied-unknown")
    #expect(rig.commands.counters.checksRefused == 1)
  }

  @Test("a flood is throttled: one ERR 429, the rest dropped silently, budget refills with time")
  func lineBudget() {
    var limits = ConsoleLimits()
    limits.lineBurst = 5
    limits.linesPerSecond = 2
    var rig = Rig(limits: limits)
    for _ in 0..<5 { #expect(rig.say("VERSION").hasPrefix("OK scangate")) }
    #expect(rig.say("VERSION") == "ERR 429 too many lines; slow down (lines are dropped)")
    #expect(rig.say("VERSION") == "")
    rig.clock.advance(milliseconds: 500)
    #expect(rig.say("VERSION").hasPrefix("OK scangate"))
    #expect(rig.commands.counters.throttledLines == 2)
  }

  @Test("a serial operator session ends after the idle time; TCP sessions are not affected")
  func serialIdle() {
    var rig = Rig()
    #expect(rig.say("AUTH sesame-open", slot: 3) == "OK operator")
    #expect(rig.say("AUTH sesame-open", slot: 0) == "OK operator")
    rig.clock.advance(milliseconds: 119_000)
    var ended: [Int] = []
    rig.commands.expireIdleOperators { ended.append($0) }
    #expect(ended.isEmpty)
    rig.clock.advance(milliseconds: 1_000)
    rig.commands.expireIdleOperators { ended.append($0) }
    #expect(ended == [3])
    #expect(rig.say("OPEN", slot: 3) == "ERR 401 operator command: AUTH first")
    #expect(!rig.commands[3].isOperator && rig.commands[0].isOperator)
  }

  @Test("a session ticket does not survive its client: a reply for a closed slot is not current")
  func tickets() {
    let rig = Rig()
    let ticket = rig.commands.ticket(0)
    #expect(rig.commands.isCurrent(ticket))
    rig.commands.closed(0)
    rig.commands.opened(0, peer: .loopback, transport: .tcp)
    #expect(!rig.commands.isCurrent(ticket))
  }
}

@Suite struct AuthGateNetworkTests {
  @Test("peers are keyed by network: loopback as one, IPv4 /32, IPv6 /64, mapped IPv4 as IPv4")
  func keys() {
    #expect(PeerKey.ipv4(0x7F00_0001) == PeerKey.ipv4(0x7F12_3456))
    #expect(PeerKey.ipv6(high: 0, low: 1) == .loopback)
    #expect(PeerKey.ipv6(high: 0x2001_0db8_0000_0001, low: 5) == PeerKey.ipv6(high: 0x2001_0db8_0000_0001, low: 99))
    #expect(PeerKey.ipv6(high: 0x2001_0db8_0000_0001, low: 5) != PeerKey.ipv6(high: 0x2001_0db8_0000_0002, low: 5))
    #expect(PeerKey.ipv6(high: 0, low: 0xFFFF_C0A8_0001) == PeerKey.ipv4(0xC0A8_0001))
    #expect(PeerKey.ipv4(0xC0A8_0001) != PeerKey.ipv4(0xC0A8_0002))
  }

  @Test("an active lockout is never evicted by a flood of other peers")
  func lockoutSurvivesFlood() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.failuresMax = 2
    settings.globalFailuresMax = 1_000
    var gate = AuthGate(settings: settings, capacity: 4)
    let attacker = PeerKey.ipv4(0x0A00_0001)
    gate.recordFailure(attacker, at: clock.now())
    clock.advance(milliseconds: 1_000)
    gate.recordFailure(attacker, at: clock.now())
    for i in 0..<50 { gate.recordFailure(PeerKey.ipv4(0x0B00_0000 + UInt32(i)), at: clock.now()) }
    if case .lockedOut = gate.admit(attacker, at: clock.now()) {} else { Issue.record("the lockout was evicted") }
  }

  @Test("the global budget locks out every network peer, but not the serial port")
  func globalBudget() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.globalFailuresMax = 10
    var gate = AuthGate(settings: settings)
    for i in 0..<10 { gate.recordFailure(PeerKey.ipv4(0x0C00_0000 + UInt32(i)), at: clock.now()) }
    if case .lockedOut = gate.admit(PeerKey.ipv4(0x0D00_0001), at: clock.now()) {} else { Issue.record("no global lockout") }
    #expect(gate.admit(.serial, at: clock.now()) == .allowed)
    clock.advance(milliseconds: settings.lockoutSeconds * 1000 + 1)
    #expect(gate.admit(PeerKey.ipv4(0x0D00_0001), at: clock.now()) == .allowed)
  }
}
