import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// A turnstile with a camera per direction (`direction = "camera"`): the real loop over a
/// `CameraPair`, the engine deciding the codes each camera sees, the turnstile unlocking the
/// direction of the camera that saw the code: with decoding on the loop and in a worker's place
/// (the loop's in-flight camera), hard anti-passback across the two cameras.
@Suite(.serialized) struct TurnstileCamerasTests {
  typealias Loop = RunLoop<
    CameraPair<ScriptedFrameSource>, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock,
    FixtureDigester
  >

  final class World {
    let clock = ManualClock()
    let ring = EventRing(capacity: 1024)
    let entry: RecordingOutputLine
    let exit: RecordingOutputLine
    let entryPassage = SimulatedInputLine()
    let exitPassage = SimulatedInputLine()
    let origin = FrameOrigin()
    var loop: Loop
    let turnstile: TurnstileController

    /// Camera 1 plays `first`, camera 2 `second`: frame values name payloads (1 ALICE, 2 BOB; 0 none).
    init(first: [Int], second: [Int], dir: String) {
      entry = RecordingOutputLine(name: "entry", clock: clock)
      exit = RecordingOutputLine(name: "exit", clock: clock)
      var settings = EngineSettings()
      settings.presence.leaveAfterMilliseconds = 100
      settings.presence.cooldownMilliseconds = 0
      let engine = ScanEngine(
        settings: settings, decoder: FixtureDecoder(payloads: [Array("ALICE".utf8), Array("BOB".utf8)]),
        relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
        clock: clock, wall: clock, digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.handleSignals = false
      loopSettings.allowListPath = nil
      let frames = (0..<3).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
      let (clock, origin) = (self.clock, self.origin)
      func camera(_ script: [Int]) -> ScriptedFrameSource {
        var s = ScriptedFrameSource(width: 64, height: 48, frames: frames, script: script.map { .frame($0) }, loops: true, clock: clock)
        s.advanceMicrosecondsPerStep = 10_000
        return s
      }
      loop = Loop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
        try CameraPair(first: camera(first), second: camera(second), staleAfterMilliseconds: 1_000, origin: origin)
      }
      _ = loop.engine.allowList.load(
        Array("text:ALICE label=alice\ntext:BOB label=bob\n".utf8), digester: FixtureDigester(), nowUnixSeconds: clock.unixSeconds())
      var config = TurnstileConfig()
      config.machine.enabled = true
      config.machine.passageTimeoutMilliseconds = 2_000
      config.direction = .camera
      config.passback.mode = .hard
      turnstile = TurnstileController(
        config: config, ring: ring, wall: clock, time: TrustedTime(), now: clock.now(), entryPassage: entryPassage,
        exitPassage: exitPassage, alarmInput: nil, direction: nil, entryUnlock: entry, exitUnlock: exit, alarm: nil,
        passbackPath: dir + "/passback", occupancyPath: dir + "/occupancy")
      turnstile.frameOrigin = origin
      loop.engine.outcome = .turnstile(turnstile)
      loop.register(turnstile)
    }

    func run(iterations: Int) { for _ in 0..<iterations { loop.runOnce(maximumWaitMilliseconds: 0) } }

    /// Passage events and decisions in the ring, as "kind detail label" strings.
    func events() -> [String] {
      var out: [String] = []
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        let label = e.withLabel { String(decoding: $0, as: UTF8.self) }
        if EventKind.passageKinds.contains(e.kind) {
          out.append(e.kind.name + " " + PassageText.detail(e) + " " + label)
        } else if e.kind == .decision {
          out.append("decision " + e.verdict.name + " " + label)
        }
        s += 1
      }
      return out
    }
  }

  @Test("the first camera's code unlocks entry, the second's exit; the same pass entering again at the entry camera is denied-passback")
  func directionByCamera() {
    let dir = temporaryDirectory("turnstile-cameras")
    defer { removeTree(dir) }
    // Camera 1 shows ALICE for a while, then nothing, then ALICE again; camera 2 shows BOB.
    let w = World(
      first: Array(repeating: 1, count: 10) + Array(repeating: 0, count: 60) + Array(repeating: 1, count: 10) + Array(repeating: 0, count: 200),
      second: Array(repeating: 2, count: 10) + Array(repeating: 0, count: 270), dir: dir)
    w.run(iterations: 30)
    #expect(w.entry.level == .active, "\(w.events())")
    #expect(w.exit.level == .active, "\(w.events())")
    let events = w.events()
    // Each decision, then its direction's unlock (the unlock names the direction, the decision who).
    #expect(
      Array(events.prefix(4)) == ["decision granted alice", "turnstile-unlocked entry grant ", "decision granted bob", "turnstile-unlocked exit grant "],
      "\(events)")
    // ALICE walks in (the entry sensor), then shows her pass at the entry camera again: hard
    // anti-passback refuses a second entry, whichever camera's turn it was.
    w.entryPassage.schedule(.active, at: w.clock.now().adding(milliseconds: 20))
    w.entryPassage.schedule(.inactive, at: w.clock.now().adding(milliseconds: 200))
    w.run(iterations: 160)
    let after = w.events()
    #expect(after.contains { $0.hasPrefix("passage entry") && $0.hasSuffix("alice") }, "\(after)")
    #expect(after.contains { $0 == "decision denied-passback alice" }, "\(after)")
    #expect(w.entry.level == .inactive)
  }
}
