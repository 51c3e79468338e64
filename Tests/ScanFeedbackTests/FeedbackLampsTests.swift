import ScanBase
import ScanFeedback
import Testing

/// The lamps' state machine on hand-written instants: what shows, each lamp's level, and when
/// the levels next change.
@Suite struct FeedbackLampsTests {
  static let t0 = Instant(nanoseconds: 100_000_000_000)  // 100 s: a whole number of blink periods
  static func at(_ ms: Int) -> Instant { t0.adding(milliseconds: ms) }
  static func decision(_ verdict: Verdict, at ms: Int) -> ScanEvent {
    var e = ScanEvent(.decision, at: at(ms), wall: 0)
    e.verdict = verdict
    return e
  }
  static func event(_ kind: EventKind, code: UInt16 = 0, at ms: Int) -> ScanEvent { ScanEvent(kind, code: code, at: at(ms), wall: 0) }
  static let wired: FeedbackSettings = {
    var s = FeedbackSettings()
    s.greenLine = 5
    s.redLine = 6
    s.amberLine = 13
    return s
  }()
  static let amber = FeedbackLevels(amber: .active)
  static let green = FeedbackLevels(green: .active)
  static let red = FeedbackLevels(red: .active)
  static let dark = FeedbackLevels()

  @Test("waiting for a code: the idle lamp steady (amber by default, green or none as set)")
  func ready() {
    let lamps = FeedbackLamps(settings: Self.wired)
    #expect(lamps.signal(at: Self.at(0)) == .ready)
    #expect(lamps.levels(at: Self.at(0)) == Self.amber && lamps.levels(at: Self.at(777)) == Self.amber)
    #expect(lamps.nextChange(after: Self.at(0)) == nil, "a steady lamp needs no wake-up")
    var s = Self.wired
    s.idle = .green
    #expect(FeedbackLamps(settings: s).levels(at: Self.at(0)) == Self.green)
    s.idle = .off
    #expect(FeedbackLamps(settings: s).signal(at: Self.at(0)) == .off)
    #expect(FeedbackLamps(settings: s).levels(at: Self.at(0)) == Self.dark)
  }

  @Test("a grant is green for granted_ms, and while the strike is open; a denial red for denied_ms")
  func grantAndDenial() {
    var lamps = FeedbackLamps(settings: Self.wired)  // granted 3,000 ms, denied 2,000 ms
    lamps.observe(Self.decision(.granted, at: 0))
    #expect(lamps.levels(at: Self.at(0)) == Self.green && lamps.levels(at: Self.at(2_999)) == Self.green)
    #expect(lamps.nextChange(after: Self.at(1_000)) == Self.at(3_000))
    #expect(lamps.levels(at: Self.at(3_000)) == Self.amber)
    // The strike held open by a long pulse (relay active at 10 ms, inactive at 8,000 ms).
    lamps.observe(Self.decision(.granted, at: 5_000))
    lamps.observe(Self.event(.edge, code: EdgeCode.code(line: EdgeCode.relay, level: .active), at: 5_010))
    #expect(lamps.signal(at: Self.at(7_999)) == .granted)
    lamps.observe(Self.event(.edge, code: EdgeCode.code(line: EdgeCode.relay, level: .inactive), at: 8_000))
    #expect(lamps.signal(at: Self.at(8_001)) == .ready)
    // The buzzer's edges are not the strike's.
    lamps.observe(Self.event(.edge, code: EdgeCode.code(line: EdgeCode.buzzer, level: .active), at: 9_000))
    #expect(lamps.signal(at: Self.at(9_001)) == .ready)
    lamps.observe(Self.decision(.deniedRevoked, at: 10_000))
    #expect(lamps.levels(at: Self.at(10_000)) == Self.red && lamps.levels(at: Self.at(11_999)) == Self.red)
    #expect(lamps.levels(at: Self.at(12_000)) == Self.amber)
  }

  @Test("a PIN request blinks amber at 2 Hz until the decision that ends it; green blinks when no amber is wired")
  func enterPin() {
    var lamps = FeedbackLamps(settings: Self.wired)
    lamps.observe(Self.decision(.pinRequired, at: 0))
    let expected: [(Int, LineLevel)] = [(0, .active), (249, .active), (250, .inactive), (499, .inactive), (500, .active), (9_999, .inactive)]
    for (ms, level) in expected {
      #expect(lamps.levels(at: Self.at(ms)) == FeedbackLevels(amber: level), "at \(ms) ms")
    }
    #expect(lamps.nextChange(after: Self.at(100)) == Self.at(250))
    #expect(lamps.nextChange(after: Self.at(250)) == Self.at(500))
    #expect(lamps.signal(at: Self.at(10_000)) == .ready, "pin_ms (10 s) without a decision")
    lamps.observe(Self.decision(.pinRequired, at: 20_000))
    lamps.observe(Self.decision(.deniedPin, at: 21_000))
    #expect(lamps.levels(at: Self.at(21_000)) == Self.red)
    var noAmber = Self.wired
    noAmber.amberLine = -1
    var g = FeedbackLamps(settings: noAmber)
    g.observe(Self.decision(.pinRequired, at: 0))
    #expect(g.levels(at: Self.at(0)) == Self.green && g.levels(at: Self.at(250)) == Self.dark)
  }

  @Test("a lockdown blinks red at 1 Hz, the fire release green; fire shows over a lockdown; a decision shows over both")
  func emergencies() {
    var lamps = FeedbackLamps(settings: Self.wired)
    lamps.observe(Self.event(.lockdown, code: 1 | 2 << 8, at: 0))  // latched by the console (authority in the high byte)
    #expect(lamps.levels(at: Self.at(0)) == Self.red && lamps.levels(at: Self.at(499)) == Self.red)
    #expect(lamps.levels(at: Self.at(500)) == Self.dark && lamps.levels(at: Self.at(1_000)) == Self.red)
    #expect(lamps.nextChange(after: Self.at(600)) == Self.at(1_000))
    lamps.observe(Self.decision(.deniedLockdown, at: 2_100))
    #expect(lamps.levels(at: Self.at(2_600)) == Self.red, "the denial, steady, over the blink")
    lamps.observe(Self.event(.fireAlarm, code: 1, at: 5_000))
    #expect(lamps.signal(at: Self.at(5_000)) == .fireRelease)
    #expect(lamps.levels(at: Self.at(5_000)) == Self.green && lamps.levels(at: Self.at(5_500)) == Self.dark)
    lamps.observe(Self.event(.fireAlarm, code: 0, at: 6_000))
    #expect(lamps.signal(at: Self.at(6_000)) == .lockedDown)
    lamps.observe(Self.event(.lockdown, code: 2 << 8, at: 7_000))  // lifted
    #expect(lamps.signal(at: Self.at(7_000)) == .ready)
  }

  @Test("made with a lockdown or the fire release standing (a latch restored at start records no event), the lamps show it at once")
  func standingAtStart() {
    var lamps = FeedbackLamps(settings: Self.wired, lockdown: true)
    #expect(lamps.signal(at: Self.at(0)) == .lockedDown && lamps.levels(at: Self.at(0)) == Self.red)
    lamps.observe(Self.event(.lockdown, code: 2 << 8, at: 100))
    #expect(lamps.signal(at: Self.at(100)) == .ready)
    #expect(FeedbackLamps(settings: Self.wired, fire: true, lockdown: true).signal(at: Self.at(0)) == .fireRelease)
  }

  @Test("a turnstile shows green from unlocked until it locks or someone passes")
  func turnstile() {
    var lamps = FeedbackLamps(settings: Self.wired)
    lamps.observe(Self.decision(.granted, at: 0))
    lamps.observe(Self.event(.turnstileUnlocked, at: 5))
    #expect(lamps.signal(at: Self.at(20_000)) == .granted)
    lamps.observe(Self.event(.passage, at: 20_000))
    #expect(lamps.signal(at: Self.at(20_001)) == .ready)
    lamps.observe(Self.event(.turnstileUnlocked, at: 30_000))
    lamps.observe(Self.event(.grantedNotPassed, at: 40_000))
    #expect(lamps.signal(at: Self.at(40_001)) == .ready)
  }

  @Test("the [feedback] keys: names, defaults and the lines they take")
  func keys() {
    let names = FeedbackSettings.configKeys.map(\.name)
    #expect(
      names == [
        "feedback.green_line", "feedback.red_line", "feedback.amber_line", "feedback.active_low", "feedback.idle",
        "feedback.granted_ms", "feedback.denied_ms", "feedback.pin_ms", "feedback.quiet",
      ])
    #expect(!FeedbackSettings().isWired && Self.wired.isWired)
    #expect(Self.wired.linesInUse.map(\.offset) == [5, 6, 13])
    #expect(FeedbackSignal.allCases.map { "\($0.name)" } == ["off", "ready", "granted", "denied", "enter-pin", "locked-down", "fire-release"])
  }
}
