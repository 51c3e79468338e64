import ScanConsole
import ScanCore
import ScanSim
import Testing

/// Issue 27 item 6: CLOCK shows the clock, its floor and whether it is synchronised; an operator's
/// CLOCK FLOOR RESET sets the floor to the clock, is recorded with the floor before and after and
/// who asked, and is answered with both. Without AUTH the reset is refused and nothing moves.
@Suite struct ClockCommandTests {
  final class Secret: OperatorSecretVerifier {
    var problem: String? = nil
    func matches(_ candidate: UnsafeRawBufferPointer) -> Bool { Array(candidate) == Array("sesame-open".utf8) }
  }

  final class Output: ConsoleOutput {
    var text: [Int: String] = [:]
    func send(_ slot: Int, _ body: (inout ByteWriter) -> Void) {
      withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        body(&w)
        text[slot, default: ""] += String(decoding: w.written, as: UTF8.self)
      }
    }
    func closeWhenFlushed(_ slot: Int) {}
  }

  /// A reader whose floor is a year ahead of its clock (a bad synchronised reading was kept).
  struct Host: ConsoleHost {
    var wall: Int64 = 1_796_205_600  // 2026-12-02T10:00:00Z
    var floor: Int64 = 1_796_205_600 + 366 * 86_400
    var synchronized = true
    var keepsFloor = true
    var problem: String? = nil
    var resets = 0
    var recorded: [(EventKind, UInt16, String)] = []

    func consoleStatus() -> ReaderStatus {
      var s = ReaderStatus()
      s.clock = clockReport()
      return s
    }
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
      recorded.append((kind, code, String(decoding: text, as: UTF8.self)))
      return UInt64(100 + recorded.count)
    }
    func clockReport() -> ClockReport? {
      keepsFloor
        ? ClockReport(wall: wall, floor: floor, synchronized: synchronized, problem: problem)
        : nil
    }
    mutating func resetClockFloor() -> (before: Int64, after: Int64)? {
      guard keepsFloor else { return nil }
      resets += 1
      let before = floor
      floor = wall
      return (before, floor)
    }
  }

  struct Rig {
    let output = Output()
    var host = Host()
    let commands: ConsoleCommands<ManualClock>
    init() {
      commands = ConsoleCommands(slots: 4, limits: ConsoleLimits(), auth: AuthGate.Settings(), secret: Secret(), clock: ManualClock())
      commands.opened(0, peer: .localUser(1000), transport: .tcp)
      commands.opened(1, peer: .ipv4(0x0A00_0105), transport: .tcp)
      commands.opened(3, peer: .serial, transport: .serial)
    }
    mutating func say(_ line: String, slot: Int = 0) -> String {
      output.text[slot] = ""
      Array(line.utf8).withUnsafeBytes { commands.handle(slot, line: $0, host: &host, output: output) }
      return output.text[slot, default: ""]
    }
  }

  @Test("CLOCK is read-only and open to all: clock, floor, synchronised, how far behind")
  func clockShown() {
    var rig = Rig()
    let reply = rig.say("clock")
    #expect(
      reply
        == "| clock 2026-12-02T10:00:00Z floor 2027-12-03T10:00:00Z synchronised, BEHIND its floor by 31622400 s"
        + " (expiry is judged at the floor; CLOCK FLOOR RESET if the floor is wrong)\nOK clock\n", "\(reply)")
    #expect(rig.host.recorded.isEmpty && rig.host.resets == 0)
    rig.host.floor = rig.host.wall - 5
    rig.host.synchronized = false
    #expect(rig.say("CLOCK") == "| clock 2026-12-02T10:00:00Z floor 2026-12-02T09:59:55Z unsynchronised\nOK clock\n")
  }

  @Test("a damaged floor file is shown on CLOCK and STATUS")
  func damagedFloorFileOnStatus() {
    var rig = Rig()
    rig.host.floor = 0
    rig.host.problem = "/var/lib/scangate/clock-floor: damaged: refused (the floor stays where it was)"
    let status = ConsoleLayout.join(rig.say("STATUS"))
    #expect(
      status.contains(
        "| clock 2026-12-02T10:00:00Z floor none synchronised; floor file /var/lib/scangate/clock-floor: damaged: refused"),
      "\(status)")
    #expect(rig.say("CLOCK").contains("; floor file /var/lib/scangate/clock-floor: damaged"))
  }

  @Test("CLOCK FLOOR RESET without AUTH is refused and changes nothing")
  func resetNeedsOperator() {
    var rig = Rig()
    #expect(rig.say("CLOCK FLOOR RESET") == "ERR 401 operator command: AUTH first\n")
    #expect(rig.host.resets == 0 && rig.host.recorded.isEmpty)
    #expect(rig.host.floor == rig.host.wall + 366 * 86_400)
  }

  @Test("an operator's reset moves the floor to the clock, answers with both and records them with who")
  func operatorReset() {
    var rig = Rig()
    #expect(rig.say("AUTH sesame-open") == "OK operator\n")
    let before = rig.host.floor
    #expect(rig.say("clock floor reset") == "OK #102 clock floor reset from 2027-12-03T10:00:00Z to 2026-12-02T10:00:00Z\n")
    #expect(rig.host.resets == 1 && rig.host.floor == rig.host.wall)
    let record = rig.host.recorded.last!
    #expect(record.0 == .command && record.1 == UInt16(ConsoleVerb.clock.rawValue))
    #expect(record.2 == "CLOCK FLOOR RESET \(before)->\(rig.host.wall) by uid 1000")
    #expect(record.2.utf8.count <= ScanEvent.payloadBytesMax)
    // Over the network and on the serial port, who is the address or the port.
    #expect(rig.say("AUTH sesame-open", slot: 1) == "OK operator\n")
    rig.host.synchronized = false
    #expect(rig.say("CLOCK FLOOR RESET", slot: 1).hasPrefix("| the clock is not synchronised: check it is right\nOK #"))
    #expect(rig.host.recorded.last!.2.hasSuffix(" by 10.0.1.5"))
    #expect(rig.say("AUTH sesame-open", slot: 3) == "OK operator\n")
    _ = rig.say("CLOCK FLOOR RESET", slot: 3)
    #expect(rig.host.recorded.last!.2.hasSuffix(" by serial"))
  }

  @Test("CLOCK takes FLOOR RESET or nothing; a reader without a floor says so")
  func forms() {
    var rig = Rig()
    #expect(rig.say("CLOCK FLOOR") == "ERR 400 bad argument (HELP shows the form)\n")
    #expect(rig.say("CLOCK RESET FLOOR") == "ERR 400 bad argument (HELP shows the form)\n")
    #expect(rig.say("CLOCK FLOOR RESET NOW") == "ERR 400 too many arguments\n")
    rig.host.keepsFloor = false
    #expect(rig.say("CLOCK") == "ERR 503 this reader keeps no clock floor\n")
    _ = rig.say("AUTH sesame-open")
    #expect(rig.say("CLOCK FLOOR RESET") == "ERR 503 this reader keeps no clock floor\n")
    #expect(rig.host.recorded.allSatisfy { $0.2 == "AUTH ok" })
  }
}
