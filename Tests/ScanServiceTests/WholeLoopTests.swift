import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Synchronization
import ScanTestSupport
import Testing

/// The whole loop on a manual clock, as the service composes it, with every part but the
/// camera and the broker real: the engine and its allow-list, the door controller on simulated
/// inputs, the console's commands with the loop as their host, and the fleet's side of the loop
/// (`FleetRequests`) fed by a fake link in place of MQTT. Ten milliseconds a frame.
@Suite(.serialized) struct WholeLoopTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, SodiumDigester
  >

  /// The fleet link without a broker: its offline flag and STATUS line are the test's.
  final class FakeLink: FleetLinkView, @unchecked Sendable {
    private let offline = Atomic<Bool>(false)
    var isOffline: Bool {
      get { offline.load(ordering: .acquiring) }
      set { offline.store(newValue, ordering: .releasing) }
    }
    func writeStatus(into w: inout ByteWriter) {
      w.write(isOffline ? "fake broker: offline, deny-all-but-static" : "fake broker: connected, 0 queued")
    }
  }

  typealias Output = TextConsoleOutput

  typealias NoSecret = NoOperatorSecret

  final class World {
    let clock = ManualClock(epochSeconds: 1_796_205_599)
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let alarm: RecordingOutputLine
    let ring = EventRing(capacity: 2048)
    let contact = SimulatedInputLine()
    let link = FakeLink()
    let fleet: FleetRequests
    let door: DoorController
    let commands: ConsoleCommands<ManualClock>
    var loop: Loop

    /// `script`: per frame, 0 nothing, 1 ALICE (static=yes), 2 BOB.
    init(script: [Int]) {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      alarm = RecordingOutputLine(name: "alarm", clock: clock)
      var settings = EngineSettings()
      settings.presence.leaveAfterMilliseconds = 100
      settings.presence.cooldownMilliseconds = 0
      settings.actuation.relayPulseMilliseconds = 500
      let engine = ScanEngine(
        settings: settings, decoder: FixtureDecoder(payloads: [Array("ALICE".utf8), Array("BOB".utf8)]), relay: relay,
        buzzer: buzzer, clock: clock, wall: clock, digester: SodiumDigester(), events: ring, maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.handleSignals = false
      loopSettings.allowListPath = nil
      let frames = (0..<3).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
      let clock = self.clock
      loop = Loop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
        var s = ScriptedFrameSource(width: 64, height: 48, frames: frames, script: script.map { .frame($0) }, loops: false, clock: clock)
        s.advanceMicrosecondsPerStep = 10_000
        return s
      }
      let list = "text:ALICE label=alice static=yes\ntext:BOB label=bob\n"
      #expect(loop.engine.allowList.load(Array(list.utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds()) == nil)
      var d = DoorSettings()
      d.enabled = true
      d.heldOpenMilliseconds = 5_000
      d.forcedAlarmMilliseconds = 1_000
      d.debounceMilliseconds = [20, 20, 20]
      door = DoorController(
        settings: d, ring: ring, wall: clock, now: clock.now(), contact: contact, exitButton: SimulatedInputLine(),
        tamper: SimulatedInputLine(), alarm: alarm, auxRelay: RecordingOutputLine(name: "aux", clock: clock))
      loop.register(door)
      fleet = FleetRequests(link: link, followsOffline: true)
      loop.register(fleet)
      commands = ConsoleCommands(slots: 1, limits: ConsoleLimits(), auth: AuthGate.Settings(), secret: NoSecret(), clock: clock)
      commands.opened(0, peer: .localUser(1000), transport: .tcp)
    }

    func run(_ iterations: Int) { for _ in 0..<iterations { loop.runOnce(maximumWaitMilliseconds: 0) } }

    func say(_ line: String) -> String {
      let output = Output()
      Array(line.utf8).withUnsafeBytes { commands.handle(0, line: $0, host: &loop, output: output) }
      return output.text
    }

    /// STATUS's line that starts with `prefix` (e.g. "| fleet "), or nil.
    func statusLine(_ prefix: String) -> String? {
      ConsoleLayout.join(say("STATUS")).split(separator: "\n").map(String.init).first { $0.hasPrefix(prefix) }
    }

    /// Decisions in the ring, as "verdict label".
    func decisions() -> [String] { ring.decisionLines() }

    /// The door events in the ring, as "kind detail".
    func doorEvents() -> [String] { ring.doorEventLines() }

    /// The relay's pulses, as (start, length in ms) on the manual clock.
    func pulses() -> [(start: Instant, milliseconds: UInt64)] {
      let edges = relay.edges
      var out: [(Instant, UInt64)] = []
      for (i, e) in edges.enumerated() where e.level == .active {
        if let off = edges[(i + 1)...].first(where: { $0.level == .inactive }) { out.append((e.at, off.at.microseconds(since: e.at) / 1_000)) }
      }
      return out
    }
  }

  /// 2 s of nothing between each part, so every 500 ms pulse and the relay's rest end first.
  static let gap = [Int](repeating: 0, count: 200)
  static func shown(_ code: Int) -> [Int] { [Int](repeating: code, count: 6) }

  @Test("scan, door, console and a fake fleet link on one manual clock: offline keeps only static=yes, online again grants all")
  func offlinePolicyFollowsTheLink() {
    let script = Self.gap + Self.shown(2) + Self.gap + Self.shown(2) + Self.gap + Self.shown(1) + Self.gap + Self.shown(2) + Self.gap
    let w = World(script: script)
    w.run(200 + 6 + 100)
    #expect(w.decisions() == ["granted bob"])
    #expect(w.statusLine("| fleet ") == "| fleet fake broker: connected, 0 queued")
    #expect(w.statusLine("| door ") != nil, "the door controller's own STATUS line, found without a cast")

    w.link.isOffline = true  // the broker is gone past fleet.offline_after
    w.run(100 + 6 + 200 + 6 + 100)
    #expect(w.decisions() == ["granted bob", "denied-offline bob", "granted alice"])
    #expect(w.statusLine("| fleet ") == "| fleet fake broker: offline, deny-all-but-static")

    w.link.isOffline = false
    w.run(100 + 6 + 200)
    #expect(w.decisions() == ["granted bob", "denied-offline bob", "granted alice", "granted bob"])
    #expect(w.pulses().map(\.milliseconds) == [500, 500, 500], "a 500 ms pulse per grant, none for the denial \(w.relay.edges)")
  }

  @Test("a fleet OPEN reaches the relay through the loop's queue: one pulse of the length asked, the door unlocks and relocks")
  func fleetOpenDrivesTheDoor() {
    let w = World(script: Self.gap + Self.gap)
    w.run(50)
    let asked = w.clock.now()
    w.fleet.accept(
      FleetCommand(reader: "door-1", action: .open, nonce: "n1", expiresUnixSeconds: w.clock.unixSeconds() + 60, pulseMilliseconds: 700),
      by: "fleet key ops")
    #expect(w.relay.edges.isEmpty, "nothing happens off the loop's thread")
    w.run(150)
    let pulses = w.pulses()
    #expect(pulses.count == 1)
    if let p = pulses.first {
      #expect(p.start.microseconds(since: asked) <= 20_000, "applied on the next iteration")
      #expect(p.milliseconds >= 700 && p.milliseconds <= 710)
    }
    #expect(w.decisions().isEmpty, "an OPEN is not a scan decision")
    #expect(w.doorEvents() == ["door-unlocked fleet", "door-locked"], "the fleet, not the console, released the strike")
    // Who opened it reaches the console's event line and the audit record.
    var opened: ScanEvent? = nil
    var s: UInt64 = 1
    while case .event(let e) = w.ring.read(s) {
      if e.kind == .manualOpen { opened = e }
      s += 1
    }
    if let opened {
      #expect(EventText.line(opened, since: asked, payloads: .hidden).hasSuffix("manual-open relay 700ms by fleet"))
      #expect(AuditRecord(opened, sequence: 1, run: 1, keepPayload: false).line.hasSuffix("by fleet relay 700ms"))
    } else {
      Issue.record("no manual-open event")
    }
    // A status or snapshot command asks nothing of the loop.
    w.fleet.accept(FleetCommand(reader: "door-1", action: .status, nonce: "n2", expiresUnixSeconds: w.clock.unixSeconds() + 60), by: "x")
    w.run(100)
    #expect(w.pulses().count == 1)
  }

  @Test("a signed fleet OPEN and Home Assistant's, asked in the same cycle, are each carried out in its own name")
  func fleetAndHomeAssistantKeepTheirNames() {
    let w = World(script: Self.gap + Self.gap + Self.gap)
    w.run(50)
    let asked = w.clock.now()
    w.fleet.accept(
      FleetCommand(reader: "door-1", action: .open, nonce: "n1", expiresUnixSeconds: w.clock.unixSeconds() + 60, pulseMilliseconds: 300),
      by: "fleet key ops")
    w.fleet.accept(HomeAssistantRequest.open)
    w.run(150)
    let opens = w.ring.lines { e in e.kind == .manualOpen ? EventText.line(e, since: asked, payloads: .hidden) : nil }
    // One pulse (one open a cycle), in the signed command's name: never the fleet's pulse recorded
    // as Home Assistant's.
    #expect(opens.count == 1 && opens[0].hasSuffix("manual-open relay 300ms by fleet"), "\(opens)")
    w.run(300)  // past the relay's rest
    w.fleet.accept(HomeAssistantRequest.open)
    w.run(150)
    let after = w.ring.lines { e in e.kind == .manualOpen ? EventText.line(e, since: asked, payloads: .hidden) : nil }
    #expect(after.last?.hasSuffix("by home-assistant") == true && after.filter { $0.hasSuffix("by fleet") }.count == 1, "\(after)")
  }

  @Test("the loop publishes the frame rate it measures to its gauge, which the fleet's state topic reads")
  func frameRateGauge() {
    let w = World(script: Array(repeating: 0, count: 400))
    var settings = FleetSettings()
    settings.brokers = ["mqtt://127.0.0.1:1"]
    settings.readerID = "door-1"
    let link = FleetLink(settings: settings, logPath: "/nonexistent/audit.db", auditLog: nil)
    w.loop.framesPerSecondGauge = link.telemetry.framesPerSecond
    w.run(50)
    #expect(link.telemetry.framesPerSecond.load() == 0, "nothing before a whole second")
    w.run(300)
    // Ten milliseconds a frame on the manual clock: 100 frames a second.
    let fps = link.telemetry.framesPerSecond.load()
    #expect(fps >= 9_500 && fps <= 10_500, "\(fps)")
    // What the state topic says of a rate the loop stored.
    for (stored, shown) in [(1_234, #""fps":12.34"#), (1_205, #""fps":12.05"#)] {
      link.telemetry.framesPerSecond.store(Int64(stored))
      let state = String(decoding: link.telemetry.stateJSON(link: link), as: UTF8.self)
      #expect(state.contains(shown), "\(state)")
    }
  }
}
