import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

@Suite struct ActuatorTests {
  /// Runs the actuator at 1 ms resolution and returns the relay's active periods.
  func relayPeriods(_ actuator: inout Actuator, clock: ManualClock, for ms: Int, actions: [Int: (inout Actuator) -> Void] = [:]) -> [Int] {
    var periods: [Int] = []
    var since: Instant? = nil
    for t in 0..<ms {
      actions[t]?(&actuator)
      let level = actuator.levels(at: clock.now()).relay
      if level == .active && since == nil { since = clock.now() }
      if level == .inactive, let s = since { periods.append(clock.now().milliseconds(since: s)); since = nil }
      clock.advance(milliseconds: 1)
    }
    if let s = since { periods.append(clock.now().milliseconds(since: s)) }
    return periods
  }

  @Test("a grant pulses the relay for relay_pulse_ms")
  func pulse() {
    let clock = ManualClock()
    var settings = ActuationSettings()
    settings.relayPulseMilliseconds = 500
    var actuator = Actuator(settings: settings)
    actuator.pulseRelay(at: clock.now())
    #expect(relayPeriods(&actuator, clock: clock, for: 2_000) == [500])
  }

  @Test("repeated grants and huge OPEN requests never hold the relay past the cap")
  func cap() {
    let clock = ManualClock()
    var settings = ActuationSettings()
    settings.relayPulseMilliseconds = 3_000
    settings.relayPulseMillisecondsMax = 5_000
    var actuator = Actuator(settings: settings)
    var actions: [Int: (inout Actuator) -> Void] = [:]
    // A grant every second for 20 s, and a manual OPEN asking for an hour.
    for t in stride(from: 0, to: 20_000, by: 1_000) { actions[t] = { [clock] in $0.pulseRelay(at: clock.now()) } }
    actions[2_500] = { [clock] in $0.pulseRelay(at: clock.now(), milliseconds: 3_600_000) }
    let periods = relayPeriods(&actuator, clock: clock, for: 30_000, actions: actions)
    #expect(!periods.isEmpty)
    #expect(periods.allSatisfy { $0 <= 5_000 }, "\(periods)")
  }

  @Test("the hard cap holds even when the configured maximum is larger")
  func hardCap() {
    let clock = ManualClock()
    var settings = ActuationSettings()
    settings.relayPulseMillisecondsMax = 10_000_000
    var actuator = Actuator(settings: settings)
    actuator.pulseRelay(at: clock.now(), milliseconds: 10_000_000)
    let periods = relayPeriods(&actuator, clock: clock, for: 40_000)
    #expect(periods == [ActuationSettings.relayPulseMillisecondsCap])
  }

  @Test("buzzer patterns alternate on and off, then stop")
  func pattern() {
    let clock = ManualClock()
    var actuator = Actuator(settings: ActuationSettings())
    actuator.play(BuzzerPattern([100, 50, 100]), at: clock.now())
    var timeline: [LineLevel] = []
    for _ in 0..<300 {
      timeline.append(actuator.levels(at: clock.now()).buzzer)
      clock.advance(milliseconds: 1)
    }
    #expect(timeline[0..<100].allSatisfy { $0 == .active })
    #expect(timeline[100..<150].allSatisfy { $0 == .inactive })
    #expect(timeline[150..<250].allSatisfy { $0 == .active })
    #expect(timeline[250...].allSatisfy { $0 == .inactive })
  }

  @Test("the next deadline is the next edge")
  func deadline() {
    let clock = ManualClock()
    var actuator = Actuator(settings: ActuationSettings())
    #expect(actuator.nextChange(after: clock.now()) == nil)
    actuator.play(BuzzerPattern([120]), at: clock.now())
    actuator.pulseRelay(at: clock.now(), milliseconds: 1_000)
    #expect(actuator.nextChange(after: clock.now()) == clock.now().adding(milliseconds: 120))
    clock.advance(milliseconds: 200)
    _ = actuator.levels(at: clock.now())
    #expect(actuator.nextChange(after: clock.now()) == clock.now().adding(milliseconds: 800))
  }
}
