import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The panel's beeper and LED wires into a Wiegand reader, on the real loop with a manual clock:
/// the buzzer line the engine drives follows the beeper wire; the LED wire alone plays the grant
/// sound; each change is a panel-command event; the wires' configuration is checked.
@Suite(.serialized) struct WiegandFeedbackTests {
  typealias World = DoorWorld

  /// A loop with the wires registered (nil: not fitted).
  static func world(beeper: SimulatedInputLine? = nil, led: SimulatedInputLine? = nil) -> (World, WiegandFeedback) {
    let w = World()
    let feedback = WiegandFeedback(beeper: beeper, led: led, ring: w.ring, wall: w.clock)
    w.loop.register(feedback)
    return (w, feedback)
  }

  /// The panel-command events in the ring, as their detail text.
  static func commands(_ ring: EventRing) -> [String] {
    var out: [String] = []
    var s: UInt64 = 1
    while case .event(let e) = ring.read(s) {
      if e.kind == .panelCommand { out.append(e.withPayload { String(decoding: $0, as: UTF8.self) }) }
      s += 1
    }
    return out
  }

  @Test("the buzzer sounds while the panel holds the beeper wire active, and stops when it lets go")
  func beeperFollows() {
    let beeper = SimulatedInputLine(), led = SimulatedInputLine()
    let (w, feedback) = Self.world(beeper: beeper, led: led)
    beeper.schedule(.active, at: w.at(100))
    beeper.schedule(.inactive, at: w.at(400))
    beeper.schedule(.active, at: w.at(600))
    beeper.schedule(.inactive, at: w.at(650))
    led.schedule(.active, at: w.at(100))
    w.run(ms: 1_000)
    // The loop runs in 5 ms steps: each edge is seen within one step.
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 2, "\(periods)")
    #expect(periods.first.map { $0 >= 295 && $0 <= 305 } == true, "\(periods)")
    #expect(periods.last.map { $0 >= 45 && $0 <= 55 } == true, "\(periods)")
    #expect(w.buzzer.level == .inactive)
    // With a beeper wire the LED only records: no second sound.
    #expect(Self.commands(w.ring) == ["wiegand-beeper-on", "wiegand-led-on", "wiegand-beeper-off", "wiegand-beeper-on", "wiegand-beeper-off"])
    #expect(feedback.statusText == " beeper=off(2) led=on(1)")
    #expect(w.relay.edgeCount == 0)
  }

  @Test("a pattern the reader plays while the wire is held is heard over it, and the hold resumes after")
  func patternOverHold() {
    let beeper = SimulatedInputLine()
    let (w, _) = Self.world(beeper: beeper)
    beeper.schedule(.active, at: w.at(100))
    beeper.schedule(.inactive, at: w.at(800))
    w.run(ms: 200)
    w.loop.engine.play(.deny)  // 80 on, 80 off, 80 on, 80 off, 80 on, from +200
    w.run(ms: 800)
    // Held from +100; the deny's first step is on (no edge), off 280-360 and 440-520, its last
    // step on to 600, then the hold again to 800.
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 3, "\(periods)")
    #expect(periods.count == 3 && abs(periods[0] - 180) <= 5 && abs(periods[1] - 80) <= 5 && abs(periods[2] - 280) <= 5, "\(periods)")
  }

  @Test("the wire let go while the reader plays a pattern does not cut the pattern short")
  func releaseDuringPattern() {
    let beeper = SimulatedInputLine()
    let (w, _) = Self.world(beeper: beeper)
    beeper.schedule(.active, at: w.at(100))
    beeper.schedule(.inactive, at: w.at(250))
    w.run(ms: 200)
    w.loop.engine.play(.deny)
    w.run(ms: 800)
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 3 && abs(periods[0] - 180) <= 5 && abs(periods[1] - 80) <= 5 && abs(periods[2] - 80) <= 5, "\(periods)")
    #expect(w.buzzer.level == .inactive)
  }

  @Test("a beep shorter than one loop iteration (on and off within one read) is played for its length")
  func beepInsideOneRead() {
    let beeper = SimulatedInputLine()
    let (w, _) = Self.world(beeper: beeper)
    beeper.schedule(.active, at: w.at(110))
    beeper.schedule(.inactive, at: w.at(140))
    w.run(ms: 150, step: 50)  // one read at +150 sees both edges
    w.run(ms: 200, step: 1)
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 1 && abs(periods[0] - 30) <= 2, "\(periods)")
    #expect(Self.commands(w.ring) == ["wiegand-beeper-on", "wiegand-beeper-off"])
  }

  @Test("a beeper wire held for minutes keeps the buzzer sounding")
  func beeperHeld() {
    let beeper = SimulatedInputLine()
    let (w, _) = Self.world(beeper: beeper)
    beeper.schedule(.active, at: w.at(100))
    beeper.schedule(.inactive, at: w.at(150_000))
    w.run(ms: 151_000, step: 100)
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 1 && periods[0] >= 149_800 && periods[0] <= 150_000, "\(periods)")
  }

  @Test("the LED wire alone: its turning active (the panel's green) plays the configured grant pattern once")
  func ledAlone() {
    let led = SimulatedInputLine()
    let (w, feedback) = Self.world(led: led)
    feedback.grantPattern = BuzzerPattern([300])  // gpio.grant_pattern
    led.schedule(.active, at: w.at(200))
    led.schedule(.inactive, at: w.at(3_200))
    w.run(ms: 4_000)
    let periods = w.buzzer.activePeriodsMilliseconds
    #expect(periods.count == 1 && periods[0] >= 295 && periods[0] <= 305, "\(periods)")
    #expect(Self.commands(w.ring) == ["wiegand-led-on", "wiegand-led-off"])
  }

  @Test("a wire already active when the reader starts counts from the first iteration")
  func activeAtStart() {
    let (w, _) = Self.world(beeper: SimulatedInputLine(level: .active))
    w.run(ms: 100)
    #expect(w.buzzer.level == .active)
    #expect(Self.commands(w.ring) == ["wiegand-beeper-on"])
  }

  @Test("[panel] the beeper and LED wires are lines of their own: not the relay's, D0/D1's, the door's or each other's")
  func configErrors() {
    func errors(_ extra: [(String, ConfigValue)]) -> [String] {
      var entries: [(String, ConfigValue)] = [
        ("panel.mode", .string("panel")), ("panel.link", .string("wiegand")), ("panel.wiegand_d0_line", .integer(5)),
        ("panel.wiegand_d1_line", .integer(6)),
      ]
      entries += extra
      let built = ConfigSchema.build(entries.enumerated().map { ConfigEntry(key: $1.0, value: $1.1, line: $0 + 1) })
      guard case .failure(let e) = built else { return [] }
      return e.errors.map(\.key)
    }
    #expect(errors([("panel.wiegand_beeper_line", .integer(7)), ("panel.wiegand_led_line", .integer(8))]) == [])
    #expect(errors([("panel.wiegand_beeper_line", .integer(17))]) == ["panel.wiegand_beeper_line"])  // the relay's
    #expect(errors([("panel.wiegand_led_line", .integer(6))]) == ["panel.wiegand_led_line"])  // D1's
    #expect(errors([("panel.wiegand_beeper_line", .integer(7)), ("panel.wiegand_led_line", .integer(7))]) == ["panel.wiegand_led_line"])
    #expect(
      errors([
        ("door.enabled", .boolean(true)), ("door.contact_line", .integer(22)), ("panel.wiegand_beeper_line", .integer(22)),
      ]) == ["panel.wiegand_beeper_line"])
    #expect(errors([("panel.wiegand_feedback_bias", .string("sideways"))]) == ["panel.wiegand_feedback_bias"])
  }
}
