import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The turnstile controller registered with the real loop on a manual clock, over simulated
/// passage sensors and recording outputs: one passage per grant, the timeout, anti-passback with
/// its durable records across a restart, FORGIVE, occupancy, the direction input and the fire
/// release. Grants come through the gate as the engine asks it (EngineEmergencyTests covers the
/// engine's side).
@Suite(.serialized) struct TurnstileControllerTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, FixtureDigester
  >

  final class World {
    let clock: ManualClock
    let ring = EventRing(capacity: 1024)
    let entryPassage = SimulatedInputLine()
    let exitPassage = SimulatedInputLine()
    let alarmInput = SimulatedInputLine()
    let direction = SimulatedInputLine()
    let entry: RecordingOutputLine
    let exit: RecordingOutputLine
    let alarm: RecordingOutputLine
    var loop: Loop
    let turnstile: TurnstileController
    let start: Instant
    let dir: String

    init(_ config: TurnstileConfig = World.config(), dir: String, clock: ManualClock = ManualClock(), stateKept: Bool = true) {
      self.clock = clock
      self.dir = dir
      entry = RecordingOutputLine(name: "entry", clock: clock)
      exit = RecordingOutputLine(name: "exit", clock: clock)
      alarm = RecordingOutputLine(name: "alarm", clock: clock)
      let engine = ScanEngine(
        settings: EngineSettings(), decoder: FixtureDecoder(payloads: []), relay: RecordingOutputLine(name: "relay", clock: clock),
        buzzer: RecordingOutputLine(name: "buzzer", clock: clock), clock: clock, wall: clock, digester: FixtureDigester(),
        events: ring, maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.handleSignals = false
      loopSettings.allowListPath = nil
      let frames = [FixtureDecoder.frame(width: 64, height: 48, naming: 0)]
      loop = Loop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
        ScriptedFrameSource(width: 64, height: 48, frames: frames, script: [.frame(0)], loops: true, clock: clock)
      }
      start = clock.now()
      turnstile = TurnstileController(
        config: config, ring: ring, wall: clock, time: TrustedTime(), now: clock.now(),
        entryPassage: entryPassage, exitPassage: exitPassage, alarmInput: alarmInput,
        direction: config.direction == .input ? direction : nil, entryUnlock: entry, exitUnlock: exit, alarm: alarm,
        passbackPath: stateKept ? dir + "/passback" : nil,
        occupancyPath: stateKept ? dir + "/occupancy" : nil)
      loop.register(turnstile)
    }

    static func config(_ mode: PassbackMode = .hard) -> TurnstileConfig {
      var c = TurnstileConfig()
      c.machine.enabled = true
      c.machine.passageTimeoutMilliseconds = 2_000
      c.machine.debounceMilliseconds = 20
      c.machine.forcedAlarmMilliseconds = 1_000
      c.passback.mode = mode
      c.passback.timedSeconds = 60
      return c
    }

    func run(ms: Int, step: Int = 5) {
      for _ in 0..<(ms / step) {
        clock.advance(milliseconds: step)
        loop.runOnce(maximumWaitMilliseconds: 0)
      }
    }

    func at(_ ms: Int) -> Instant { clock.now().adding(milliseconds: ms) }

    /// A person's identity as the engine hands it over (a keyed digest; here a fixed one per name).
    static func who(_ name: String) -> Digest { Array(name.utf8).withUnsafeBytes { FixtureDigester().sha256($0) } }

    func admit(_ name: String) -> Verdict {
      Array(name.utf8).withUnsafeBytes { label in
        turnstile.admit(identity: Self.who(name), label: label, tag: .zero, at: clock.now())
      }
    }

    /// A rotation completing on `line` in `ms` (the sensor closes for 150 ms).
    func rotate(_ line: SimulatedInputLine, in ms: Int) {
      line.schedule(.active, at: at(ms))
      line.schedule(.inactive, at: at(ms + 150))
    }

    /// The turnstile's and the emergency events in the ring, as "kind detail" strings.
    func events() -> [String] {
      var out: [String] = []
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        if EventKind.passageKinds.contains(e.kind) {
          let detail = PassageText.detail(e)
          let label = e.withLabel { String(decoding: $0, as: UTF8.self) }
          out.append(e.kind.name + (detail.isEmpty ? "" : " " + detail) + (label.isEmpty ? "" : " " + label))
        }
        s += 1
      }
      return out
    }

    func status() -> String {
      var status = ReaderStatus()
      turnstile.contribute(to: &status, now: clock.now(), unixSeconds: 0)
      return status.section("turnstile") ?? ""
    }
  }

  @Test("a grant unlocks entry for one passage: the rotation relocks it, labelled, and counts one in the area")
  func onePassage() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir)
    #expect(w.admit("alice") == .granted)
    #expect(w.entry.edges.map(\.level) == [.active] && w.exit.edges.isEmpty)
    w.rotate(w.entryPassage, in: 800)
    w.run(ms: 1_500)
    #expect(w.entry.activePeriodsMilliseconds == [820], "unlocked until the debounced rotation (800 + 20 ms)")
    #expect(w.events() == ["turnstile-unlocked entry grant", "passage entry grant alice", "turnstile-locked entry"])
    #expect(w.turnstile.occupancy.count == 1)
    #expect(w.status().contains("occupancy site 1"))
  }

  @Test("no passage within the timeout: relocked, granted-not-passed, and the anti-passback record given back")
  func notPassed() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir)
    #expect(w.admit("bob") == .granted)
    w.run(ms: 2_500)
    #expect(w.entry.activePeriodsMilliseconds == [2_000])
    #expect(w.events() == ["turnstile-unlocked entry grant", "granted-not-passed entry grant bob", "turnstile-locked entry"])
    #expect(w.turnstile.occupancy.count == 0)
    // Bob never went in: hard anti-passback lets him try again.
    #expect(w.admit("bob") == .granted)
  }

  @Test("hard anti-passback: the same way twice is refused, the other way is not; FORGIVE LAST lets the refused one through")
  func hardPassback() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir)
    #expect(w.admit("carol") == .granted)
    w.rotate(w.entryPassage, in: 300)
    w.run(ms: 600)
    #expect(w.admit("carol") == .deniedPassback)
    #expect(w.admit("dave") == .granted)
    let forgiven = w.turnstile.perform(.action(.forgiveLast, authority: .console, who: Array("uid 0".utf8)))
    #expect(forgiven == .action(.forgiven))
    #expect(w.turnstile.perform(.action(.forgiveLast, authority: .console, who: [])) == .action(.unknownCredential))
    #expect(w.admit("carol") == .granted)
    #expect(w.events().contains("passback-forgiven"))
  }

  @Test("anti-passback and occupancy survive a restart (kill -9 after the grant: the record was synced before the unlock)")
  func restart() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let clock = ManualClock()
    do {
      let w = World(dir: dir, clock: clock)
      #expect(w.admit("erin") == .granted)
      w.rotate(w.entryPassage, in: 300)
      w.run(ms: 600)
      #expect(w.turnstile.occupancy.count == 1)
    }
    let w = World(dir: dir, clock: clock)
    #expect(w.admit("erin") == .deniedPassback)
    #expect(w.turnstile.occupancy.count == 1)
    #expect(w.status().contains("passback hard 1 kept"))
    #expect(w.turnstile.perform(.action(.resetOccupancy, authority: .console, who: [])) == .action(.occupancyReset(before: 1)))
    let again = World(dir: dir, clock: clock)
    #expect(again.turnstile.occupancy.count == 0)
  }

  @Test("anti-passback with nowhere durable to keep its records refuses grants rather than forget them")
  func noStateDirectory() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir, stateKept: false)
    #expect(w.admit("frank") == .deniedUnavailable)
    #expect(w.entry.edges.isEmpty)
    #expect(w.status().contains("FAULT no state directory"))
    let off = World(World.config(.off), dir: dir, stateKept: false)
    #expect(off.admit("frank") == .granted)
  }

  @Test("one camera, the direction by an input: active = exit; a rotation with no grant is forced and sounds the alarm")
  func directionInputAndForced() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    var config = World.config(.off)
    config.direction = .input
    let w = World(config, dir: dir)
    w.direction.schedule(.active, at: w.at(5))
    w.run(ms: 50)
    #expect(w.admit("gina") == .granted)
    #expect(w.exit.edges.map(\.level) == [.active] && w.entry.edges.isEmpty)
    w.rotate(w.exitPassage, in: 100)
    w.rotate(w.entryPassage, in: 500)  // nobody was granted entry
    w.run(ms: 2_000)
    #expect(
      w.events() == [
        "turnstile-unlocked exit grant", "passage exit grant gina", "turnstile-locked exit", "turnstile-forced entry no-grant",
      ])
    #expect(w.alarm.activePeriodsMilliseconds == [1_000])
    #expect(w.turnstile.occupancy.count == 0 && w.turnstile.occupancy.underflows == 1)
  }

  @Test("the fire release frees both directions within one loop turn and locks them when it ends")
  func fire() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir)
    var e = ScanEvent()
    e.kind = .fireAlarm
    e.code = 1
    e.monotonic = w.clock.now()
    w.ring.append(e)
    w.run(ms: 5)
    #expect(w.entry.edges.map(\.level) == [.active] && w.exit.edges.map(\.level) == [.active])
    w.rotate(w.entryPassage, in: 100)
    w.run(ms: 5_000)  // past any passage timeout: free passage does not time out
    #expect(w.entry.edges.count == 1 && w.alarm.edges.isEmpty, "a free passage is not forced")
    e.code = 0
    e.monotonic = w.clock.now()
    w.ring.append(e)
    w.run(ms: 5)
    #expect(w.entry.edges.map(\.level) == [.active, .inactive] && w.exit.edges.map(\.level) == [.active, .inactive])
  }

  @Test("OPEN on a turnstile lets one person through the current direction, with no anti-passback record")
  func operatorOpen() {
    let dir = temporaryDirectory("turnstile")
    defer { removeTree(dir) }
    let w = World(dir: dir)
    #expect(w.turnstile.openOnce(at: w.clock.now()))
    w.rotate(w.entryPassage, in: 300)
    w.run(ms: 600)
    #expect(w.events() == ["turnstile-unlocked entry grant", "passage entry grant operator", "turnstile-locked entry"])
    #expect(w.turnstile.passback.count == 0)
  }
}
