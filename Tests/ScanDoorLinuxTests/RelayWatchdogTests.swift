import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The relay watchdog (the GPIO shim's thread) on a simulated line, on the real monotonic clock:
/// a loop that stalls mid-pulse still gets its relay driven inactive by the cap, and a loop that
/// runs never sees the watchdog act.
@Suite(.serialized) struct RelayWatchdogTests {
  typealias Engine = ScanEngine<FixtureDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock, FixtureDigester>

  /// Scheduling slack allowed on top of the deadline (the CI machine's 2 cores are shared).
  static let slackMilliseconds = 250

  final class Rig {
    let clock = SystemMonotonicClock()
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let ring = EventRing(capacity: 256)
    let watchdog: RelayWatchdog
    let frames: [[UInt8]]
    init() throws {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      watchdog = try RelayWatchdog(simulated: relay)
      frames = (0...1).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
    }
    deinit { watchdog.stop() }
    /// relay_pulse_ms and relay_pulse_ms_max as given, the watchdog attached.
    func engine(pulse: Int, max: Int) -> Engine {
      var settings = EngineSettings()
      settings.actuation.relayPulseMilliseconds = pulse
      settings.actuation.relayPulseMillisecondsMax = max
      settings.presence.leaveAfterMilliseconds = 100
      settings.presence.cooldownMilliseconds = 0
      var e = Engine(
        settings: settings, decoder: FixtureDecoder(payloads: [Array("ALICE".utf8)]), relay: relay, buzzer: buzzer,
        clock: clock, wall: SystemWallClock(), digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
      #expect(e.allowList.load(Array("text:ALICE\n".utf8), digester: FixtureDigester(), nowUnixSeconds: SystemWallClock().unixSeconds()) == nil)
      e.relayGuard = watchdog
      return e
    }
    /// One frame: 1 shows ALICE (a grant), 0 nothing.
    func process(_ engine: inout Engine, _ index: Int) {
      frames[index].withUnsafeBytes { raw in
        engine.process(LumaFrame(bytes: raw, geometry: .gray(width: 64, height: 48), captured: clock.now(), sequence: 0))
      }
    }
    func events(_ kind: EventKind) -> [ScanEvent] {
      var out: [ScanEvent] = []
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        if e.kind == kind { out.append(e) }
        s += 1
      }
      return out
    }
  }

  static func sleep(milliseconds: Int) {
    var t = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var left = timespec()
    while nanosleep(&t, &left) != 0 { t = left }
  }

  @Test("a loop stalled mid-pulse: the watchdog drives the relay inactive at cap + margin, the next tick records it and leaves the relay off")
  func stalledLoop() throws {
    let rig = try Rig()
    var engine = rig.engine(pulse: 300, max: 300)
    rig.process(&engine, 1)  // the grant: relay active, watchdog armed for its cap end + 250 ms
    #expect(engine.stats.grants == 1)
    #expect(rig.relay.level == .active)
    #expect(rig.watchdog.arms == 1)

    Self.sleep(milliseconds: 1_500)  // the stall: no tick for 1.5 s
    let stallEnd = rig.clock.now()

    let edges = rig.relay.edges
    try #require(edges.count == 2, "relay edges while the loop stalled: \(edges)")
    #expect(edges[0].level == .active && edges[1].level == .inactive)
    // The deadline: the period's cap end (300 ms after the pulse started, at the decision) plus
    // the margin (250 ms). The inactive edge must come after it (never early) and within the
    // slack (the active edge itself may come a few ms after the decision on a busy machine).
    let pulseStart = try #require(rig.events(.decision).first).monotonic
    let deadline = 300 + ActuationSettings.relayWatchdogMarginMilliseconds
    let held = edges[1].at.milliseconds(since: pulseStart)
    #expect(held >= deadline && held <= deadline + Self.slackMilliseconds, "relay inactive \(held) ms after the pulse start; deadline \(deadline) ms")
    #expect(edges[1].at < stallEnd)
    #expect(rig.watchdog.trips == 1)
    // The loop has not run: it still believes the relay active, and has recorded nothing.
    #expect(engine.relayLevel == .active)
    #expect(rig.events(.fault).isEmpty)

    engine.tick()  // the loop resumes
    #expect(engine.stats.relayWatchdogTrips == 1)
    #expect(engine.relayLevel == .inactive)
    let faults = rig.events(.fault)
    #expect(faults.map(\.code) == [FaultCode.relayWatchdog.rawValue])
    #expect(FaultCode.relayWatchdog.name == "relay-watchdog")
    // The relay's inactive edge is recorded at the watchdog's time (taken just after its write), before the fault.
    let relayEdges = rig.events(.edge).filter { $0.code & 0xF0 == EdgeCode.relay }
    #expect(relayEdges.map(\.code) == [EdgeCode.code(line: EdgeCode.relay, level: .active), EdgeCode.code(line: EdgeCode.relay, level: .inactive)])
    if let last = relayEdges.last, let fault = faults.first {
      #expect(last.monotonic <= fault.monotonic && last.monotonic >= edges[1].at && last.monotonic.milliseconds(since: edges[1].at) <= 1)
    }
    #expect(rig.buzzer.level == .active, "the fault pattern plays")
    // Not re-activated: no new edge, and a pulse asked for now is refused (the rest after a cap).
    let reopened = engine.openManually(milliseconds: 200)
    #expect(!reopened)
    for _ in 0..<20 {
      engine.tick()
      Self.sleep(milliseconds: 5)
    }
    #expect(rig.relay.edges.count == 2)
    #expect(rig.events(.fault).count == 1, "the trip is taken once")
    #expect(rig.watchdog.trips == 1)
  }

  @Test("a loop that runs: pulses up to the cap and repeated grants never trip the watchdog", arguments: [100, 300])
  func runningLoop(pulse: Int) throws {
    let rig = try Rig()
    var engine = rig.engine(pulse: pulse, max: 300)
    for round in 0..<3 {
      rig.process(&engine, 1)  // a grant
      for _ in 0..<70 {  // ~1.4 s of a loop ticking every ~20 ms (frames without codes)
        Self.sleep(milliseconds: 20)
        rig.process(&engine, 0)
      }
      // The code left (presence) and a capped period's rest ended: the next round pulses again.
      #expect(engine.stats.grants == UInt64(round + 1))
    }
    Self.sleep(milliseconds: 600)  // past every deadline
    engine.tick()
    #expect(rig.watchdog.arms == 3)
    #expect(rig.watchdog.trips == 0)
    #expect(engine.stats.relayWatchdogTrips == 0)
    #expect(rig.events(.fault).isEmpty)
    let periods = rig.relay.activePeriodsMilliseconds
    #expect(periods.count == 3 && periods.allSatisfy { $0 >= pulse && $0 < pulse + 100 }, "\(periods)")
  }

  @Test("the thread trips only an expired, still armed deadline: disarm and re-arm replace it")
  func armDisarm() throws {
    let rig = try Rig()
    let clock = SystemMonotonicClock()
    try rig.relay.set(.active)
    rig.watchdog.arm(deadline: clock.now().adding(milliseconds: 100))
    rig.watchdog.disarm()
    rig.watchdog.arm(deadline: clock.now().adding(milliseconds: 5_000))  // later: replaces the first
    Self.sleep(milliseconds: 300)
    #expect(rig.watchdog.trips == 0 && rig.relay.level == .active && rig.watchdog.takeTrip() == nil)
    let armed = clock.now()
    rig.watchdog.arm(deadline: armed.adding(milliseconds: 100))  // earlier: wakes the sleeping thread
    Self.sleep(milliseconds: 400)
    #expect(rig.watchdog.trips == 1 && rig.relay.level == .inactive)
    let trip = rig.watchdog.takeTrip()
    #expect(trip.map { $0.milliseconds(since: armed) >= 100 && $0.milliseconds(since: armed) <= 100 + Self.slackMilliseconds } == true)
    #expect(rig.watchdog.takeTrip() == nil, "taken once")
  }
}
