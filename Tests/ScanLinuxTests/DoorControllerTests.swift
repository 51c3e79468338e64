import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanSim
import Testing

/// The door controller registered with the real loop on a manual clock, over simulated input
/// lines: the strike the engine drives, the exit button's release, relock on close, the
/// forced and held-open alarms on the alarm line, and the console's DOOR view.
@Suite(.serialized) struct DoorControllerTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, FixtureDigester
  >

  final class World {
    let clock = ManualClock()
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let alarm: RecordingOutputLine
    let aux: RecordingOutputLine
    let ring = EventRing(capacity: 1024)
    let contact = SimulatedInputLine()
    let exitButton = SimulatedInputLine()
    let tamper = SimulatedInputLine()
    var loop: Loop
    let door: DoorController
    let start: Instant

    init(settings: DoorSettings = World.settings()) {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      alarm = RecordingOutputLine(name: "alarm", clock: clock)
      aux = RecordingOutputLine(name: "aux", clock: clock)
      let engine = ScanEngine(
        settings: EngineSettings(), decoder: FixtureDecoder(payloads: []), relay: relay, buzzer: buzzer, clock: clock,
        wall: clock, digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.handleSignals = false
      loopSettings.allowListPath = nil
      let frames = [FixtureDecoder.frame(width: 64, height: 48, naming: 0)]
      let clock = self.clock
      loop = Loop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
        ScriptedFrameSource(width: 64, height: 48, frames: frames, script: [.frame(0)], loops: true, clock: clock)
      }
      start = clock.now()
      door = DoorController(
        settings: settings, ring: ring, wall: clock, now: clock.now(), contact: contact, exitButton: exitButton,
        tamper: tamper, alarm: alarm, auxRelay: aux)
      loop.register(door)
    }

    static func settings() -> DoorSettings {
      var s = DoorSettings()
      s.enabled = true
      s.heldOpenMilliseconds = 2_000
      s.forcedAlarmMilliseconds = 1_000
      s.debounceMilliseconds = [20, 20, 20]
      return s
    }

    /// Runs the loop in 5 ms steps of the manual clock for `ms`.
    func run(ms: Int) {
      for _ in 0..<(ms / 5) {
        clock.advance(milliseconds: 5)
        loop.runOnce(maximumWaitMilliseconds: 0)
      }
    }

    func at(_ ms: Int) -> Instant { start.adding(milliseconds: ms) }

    /// The door events in the ring, as "kind detail" strings.
    func doorEvents() -> [String] {
      var out: [String] = []
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        if EventKind.doorKinds.contains(e.kind) {
          let detail = DoorText.detail(e.kind, code: e.code)
          out.append(detail.isEmpty ? e.kind.name : e.kind.name + " " + detail)
        }
        s += 1
      }
      return out
    }
  }

  @Test("exit button: a debounced press releases the strike; the door opens and closes; the strike locks on close")
  func exitRelease() {
    let w = World()
    w.exitButton.schedule(.active, at: w.at(100))
    w.exitButton.schedule(.inactive, at: w.at(300))
    w.contact.schedule(.active, at: w.at(600))
    w.contact.schedule(.inactive, at: w.at(1_500))
    w.run(ms: 2_500)
    #expect(w.doorEvents() == ["exit-request", "door-unlocked exit-button", "door-opened", "door-closed 0s", "door-locked"])
    // The relay went active once, and was driven inactive on close, long before its 3 s pulse.
    let periods = w.relay.activePeriodsMilliseconds
    #expect(periods.count == 1)
    #expect(periods.first.map { $0 >= 1_400 - 120 && $0 < 1_500 } == true)
    #expect(w.alarm.edgeCount == 0)
    #expect(w.door.machine.state == .closed)
  }

  @Test("a console OPEN is an unlock by console; held open past held_open_ms beeps the alarm line until closed")
  func heldOpen() {
    let w = World()
    w.run(ms: 50)
    w.loop.engine.openManually(milliseconds: 1_000)
    w.contact.schedule(.active, at: w.at(200))
    w.contact.schedule(.inactive, at: w.at(4_000))
    w.run(ms: 4_500)
    #expect(
      w.doorEvents() == ["door-unlocked console", "door-opened", "door-locked", "door-held-open 2s", "door-closed 3s"])
    // Held open at 2.22 s (open at 0.22 s after debounce), closed at 4.02 s: 200 ms on, 800 off.
    let beeps = w.alarm.activePeriodsMilliseconds
    #expect(beeps.count == 2 && beeps.allSatisfy { $0 >= 195 && $0 <= 205 })
    // The second relay: steady from held open (2.22 s) to closed (4.02 s).
    let aux = w.aux.activePeriodsMilliseconds
    #expect(aux.count == 1 && aux[0] >= 1_795 && aux[0] <= 1_805)
    #expect(w.alarm.level == .inactive)
  }

  @Test("a door opened without an unlock is forced: the alarm line sounds for forced_alarm_ms")
  func forced() {
    let w = World()
    w.contact.schedule(.active, at: w.at(100))
    w.contact.schedule(.inactive, at: w.at(400))
    w.run(ms: 2_000)
    #expect(w.doorEvents() == ["door-forced", "door-closed 0s"])
    let alarm = w.alarm.activePeriodsMilliseconds
    #expect(alarm.count == 1 && alarm[0] >= 995 && alarm[0] <= 1_005)
    // The second relay follows the alarm's state steadily.
    let aux = w.aux.activePeriodsMilliseconds
    #expect(aux.count == 1 && aux[0] >= 995 && aux[0] <= 1_005)
    #expect(w.relay.edgeCount == 0)
    #expect(w.loop.consoleStatus().door?.forcedCount == 1)
  }

  @Test("contact bounce: 20 edges in 10 ms on opening give one transition")
  func bounce() {
    let w = World()
    w.run(ms: 50)
    w.loop.engine.openManually(milliseconds: 2_000)
    var level = LineLevel.active
    for k in 0...20 {
      w.contact.schedule(level, at: w.at(200).adding(milliseconds: 0).adding(milliseconds: k / 2))
      level = level == .active ? .inactive : .active
    }
    w.run(ms: 500)
    #expect(w.doorEvents() == ["door-unlocked console", "door-opened"])
    #expect(w.door.machine.rawEdges == 21)
  }

  @Test("tamper: recorded both ways; the alarm line sounds while it lasts; DOOR and STATUS show the door")
  func tamperAndStatus() {
    let w = World()
    w.tamper.schedule(.active, at: w.at(100))
    w.run(ms: 500)
    #expect(w.alarm.level == .active)
    let status = w.loop.consoleStatus()
    let text = withUnsafeTemporaryAllocation(byteCount: 4_096, alignment: 1) { buffer in
      var writer = ByteWriter(buffer)
      ConsoleText.writeDoor(status.door, into: &writer)
      return String(decoding: writer.written, as: UTF8.self)
    }
    #expect(text.hasPrefix("| door closed, strike locked; contact closed, exit released, tamper active, alarm on"))
    #expect(text.hasSuffix("OK door closed\n"))
    w.tamper.schedule(.inactive, at: w.at(1_000))
    w.run(ms: 1_000)
    #expect(w.alarm.level == .inactive)
    #expect(w.doorEvents() == ["tamper active", "tamper restored"])
  }
}
