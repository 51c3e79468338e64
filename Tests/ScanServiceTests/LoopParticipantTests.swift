import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// A participant on the real loop (manual clock): what it adds to STATUS reaches the console
/// without the loop knowing its type; the clock floor's keeper is found the same way (STATUS,
/// CLOCK, CLOCK FLOOR RESET); its requests apply in the loop's order and coalesce.
@Suite(.serialized) struct LoopParticipantTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, FixtureDigester
  >

  /// A participant the loop has never heard of: a keypad that shows one line on STATUS (in the
  /// panel's place) and asks the loop for whatever the test gives it, once.
  final class Keypad: PollParticipant {
    var line: String? = "keypad online, 12 keys pressed"
    var ask: [LoopRequest] = []
    var seenUnixSeconds: Int64 = 0
    var pollCapacity: Int { 0 }
    func prepare(_ poll: PollSet, now: Instant) -> Instant? { nil }
    func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
      for request in ask { #expect(requests.post(request)) }
      ask = []
    }
    func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
      seenUnixSeconds = unixSeconds
      if let line { status.panelLine = line }
    }
  }

  typealias NoSecret = NoOperatorSecret

  typealias Output = TextConsoleOutput

  final class World {
    /// The wall clock reads 2026-12-02T10:00:00Z at the start.
    let clock = ManualClock(epochSeconds: 1_796_205_599)
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let ring = EventRing(capacity: 1024)
    var loop: Loop
    let commands: ConsoleCommands<ManualClock>

    init() {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      let engine = ScanEngine(
        settings: EngineSettings(), decoder: FixtureDecoder(payloads: []), relay: relay, buzzer: buzzer, clock: clock,
        wall: clock, digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
      var settings = LoopSettings()
      settings.handleSignals = false
      settings.allowListPath = nil
      let frames = [FixtureDecoder.frame(width: 64, height: 48, naming: 0)]
      let clock = self.clock
      loop = Loop(engine: engine, settings: settings) { () throws(CaptureError) in
        ScriptedFrameSource(width: 64, height: 48, frames: frames, script: [.frame(0)], loops: true, clock: clock)
      }
      commands = ConsoleCommands(
        slots: 1, limits: ConsoleLimits(), auth: AuthGate.Settings(), secret: NoSecret(), clock: clock)
      commands.opened(0, peer: .localUser(1000), transport: .tcp)
    }

    /// One iteration after `milliseconds` of the manual clock.
    func step(_ milliseconds: Int = 10) {
      clock.advance(milliseconds: milliseconds)
      loop.runOnce(maximumWaitMilliseconds: 0)
    }

    /// A console command's whole reply, the loop as its host.
    func say(_ line: String) -> String {
      let output = Output()
      Array(line.utf8).withUnsafeBytes { commands.handle(0, line: $0, host: &loop, output: output) }
      return output.text
    }

    /// STATUS's lines between the console line and the uptime line, and its line count.
    func statusMiddle() -> (lines: [String], count: String) {
      let lines = ConsoleLayout.join(say("STATUS")).split(separator: "\n").map(String.init)
      let first = (lines.firstIndex { $0.hasPrefix("| console ") } ?? 0) + 1
      let last = lines.firstIndex { $0.hasPrefix("| uptime ") } ?? lines.count
      return (Array(lines[first..<max(first, last)]), lines.last ?? "")
    }
  }

  @Test("a participant's part of STATUS shows without the loop knowing its type; nothing when it adds nothing")
  func statusContribution() {
    let w = World()
    let keypad = Keypad()
    keypad.line = nil
    w.loop.register(keypad)
    w.step()
    let without = w.statusMiddle()
    #expect(without.lines == [])
    #expect(without.count.hasPrefix("OK status "))  // the lines sent: the console line folds
    keypad.line = "keypad online, 12 keys pressed"
    let with = w.statusMiddle()
    #expect(with.lines == ["| keypad online, 12 keys pressed"])
    #expect(Int(with.count.split(separator: " ")[2]) == Int(without.count.split(separator: " ")[2])! + 1)
    #expect(keypad.seenUnixSeconds == 1_796_205_600)
  }

  @Test("the clock floor's keeper, registered like any participant: STATUS and CLOCK show it, CLOCK FLOOR RESET reaches it")
  func clockFloorKeeper() {
    let w = World()
    #expect(w.loop.clockReport() == nil)
    #expect(w.loop.resetClockFloor() == nil)
    let wall: Int64 = 1_796_205_600
    let time = TrustedTime()
    let keeper = ClockFloorKeeper(
      time: time, ring: w.ring, path: nil, bootID: "boot-a",
      read: { ClockReading(wall: wall, sinceBoot: 1_000, synchronized: false) })
    w.loop.register(keeper)
    w.step()
    time.raise(to: wall + 366 * 86_400)  // a floor a year ahead (a bad reading was kept)
    let behind =
      "| clock 2026-12-02T10:00:00Z floor 2027-12-03T10:00:00Z unsynchronised, BEHIND its floor by 31622400 s"
      + " (expiry is judged at the floor; CLOCK FLOOR RESET if the floor is wrong)"
    #expect(w.statusMiddle().lines == [behind])
    #expect(w.say("CLOCK") == behind + "\nOK clock\n")
    let reset = w.loop.resetClockFloor()
    #expect(reset?.before == wall + 366 * 86_400 && reset?.after == wall)
    #expect(time.floor == wall)
    #expect(w.statusMiddle().lines == ["| clock 2026-12-02T10:00:00Z floor 2026-12-02T10:00:00Z unsynchronised"])
  }

  @Test("an OPEN and the door's relock in one iteration: the OPEN applies first and the relock ends it, in either posting order")
  func openThenRelock() {
    for relockFirst in [true, false] {
      let w = World()
      let asker = Keypad()
      w.loop.register(asker)
      w.step()
      asker.ask = relockFirst ? [.relockStrike, .open(milliseconds: 500)] : [.open(milliseconds: 500), .relockStrike]
      w.step()
      #expect(w.relay.edges.map(\.level) == [.active, .inactive], "relock first: \(relockFirst)")
      #expect(w.relay.level == .inactive)
    }
    // The OPEN alone pulses for what it asked.
    let w = World()
    let asker = Keypad()
    w.loop.register(asker)
    w.step()
    asker.ask = [.open(milliseconds: 500)]
    for _ in 0..<60 { w.step() }
    #expect(w.relay.activePeriodsMilliseconds == [500])
  }

  @Test("the buzzer held and let go within one iteration: the later wins and the buzzer never sounds")
  func holdCoalesces() {
    let w = World()
    let asker = Keypad()
    w.loop.register(asker)
    w.step()
    asker.ask = [.holdBuzzer(true), .holdBuzzer(false)]
    w.step()
    #expect(w.buzzer.edgeCount == 0)
    asker.ask = [.holdBuzzer(false), .holdBuzzer(true)]
    w.step()
    #expect(w.buzzer.edges.map(\.level) == [.active])
  }
}
