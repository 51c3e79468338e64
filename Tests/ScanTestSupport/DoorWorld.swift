import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim

/// The real loop on a manual clock with the door controller over simulated input lines.
package typealias DoorLoop = RunLoop<
  ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, FixtureDigester
>

/// The door controller registered with the real loop on a manual clock, over simulated input
/// lines (the strike the engine drives, the exit button, the contact, tamper and the alarm line).
package final class DoorWorld {
  package let clock = ManualClock()
  package let relay: RecordingOutputLine
  package let buzzer: RecordingOutputLine
  package let alarm: RecordingOutputLine
  package let aux: RecordingOutputLine
  package let ring = EventRing(capacity: 1024)
  package let contact = SimulatedInputLine()
  package let exitButton = SimulatedInputLine()
  package let tamper = SimulatedInputLine()
  package var loop: DoorLoop
  package let door: DoorController
  package let start: Instant

  /// `contactLine` replaces the simulated contact (nil: `contact`).
  package init(settings: DoorSettings = DoorWorld.settings(), contactLine: (any InputLine)? = nil) {
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
    loop = DoorLoop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
      ScriptedFrameSource(width: 64, height: 48, frames: frames, script: [.frame(0)], loops: true, clock: clock)
    }
    start = clock.now()
    door = DoorController(
      settings: settings, ring: ring, wall: clock, now: clock.now(), contact: contactLine ?? contact,
      exitButton: exitButton,
      tamper: tamper, alarm: alarm, auxRelay: aux)
    loop.register(door)
  }

  package static func settings() -> DoorSettings {
    var s = DoorSettings()
    s.enabled = true
    s.heldOpenMilliseconds = 2_000
    s.forcedAlarmMilliseconds = 1_000
    s.debounceMilliseconds = [20, 20, 20]
    return s
  }

  /// Runs the loop in `step` ms steps of the manual clock for `ms`.
  package func run(ms: Int, step: Int = 5) {
    for _ in 0..<(ms / step) {
      clock.advance(milliseconds: step)
      loop.runOnce(maximumWaitMilliseconds: 0)
    }
  }

  /// Schedules from `text`, their unlock windows kept by an `UnlockWindowKeeper` on this loop
  /// (local time: UTC's time of day, every day a Monday; the clock starts at 20:26:41).
  @discardableResult
  package func keepUnlockWindows(_ text: String, clockTrusted: @escaping () -> Bool = { true }) -> UnlockWindowKeeper {
    let store = ScheduleStore(calendar: UTCMondays())
    precondition(store.load(Array(text.utf8)) == nil, "schedules refused: \(text)")
    loop.engine.policy.schedules = store
    let keeper = UnlockWindowKeeper(store: store, ring: ring, wall: clock, now: clock.now(), clockTrusted: clockTrusted)
    loop.register(keeper)
    return keeper
  }

  /// A granted decision in the ring, as the engine records one.
  package func recordGrant() {
    var e = ScanEvent()
    e.kind = .decision
    e.verdict = .granted
    e.monotonic = clock.now()
    ring.append(e)
  }

  package func at(_ ms: Int) -> Instant { start.adding(milliseconds: ms) }

  /// The door events in the ring, as "kind detail" strings.
  package func doorEvents() -> [String] { ring.doorEventLines() }

}

/// Local time for schedules: UTC's time of day, every day a Monday (21 December 2026).
package struct UTCMondays: LocalCalendar {
  package init() {}
  package func civil(unixSeconds: Int64) -> CivilTime {
    CivilTime(year: 2026, month: 12, day: 21, weekday: 1, minuteOfDay: Int(unixSeconds / 60 % 1_440))
  }
}
