import ScanBase
import ScanSim
import ScanTurnstile
import Testing

/// The turnstile machine on a manual clock: every transition, the passage timers, pulse wiring,
/// chatter and fire release. Expected codes are written out by hand: a turnstile code is the
/// direction (entry 0, exit 1) plus the reason times 16 (grant 1, fire 3, no-grant 4, alarm-input 5).
@Suite struct TurnstileMachineTests {
  static func settings(_ wiring: TurnstileWiring = .held) -> TurnstileSettings {
    var s = TurnstileSettings()
    s.enabled = true
    s.wiring = wiring
    s.passageTimeoutMilliseconds = 2_000
    s.debounceMilliseconds = 20
    s.grantsQueuedMax = 2
    s.forcedAlarmMilliseconds = 3_000
    s.pulseMilliseconds = 500
    s.pulseGapMilliseconds = 100
    return s
  }

  /// Drains the transitions as "kind code ticket @ms" (milliseconds since `start`).
  static func drain(_ m: inout TurnstileMachine, from start: Instant) -> [String] {
    var out: [String] = []
    while let t = m.takeTransition() { out.append("\(t.kind.name) \(t.code) \(t.ticket) @\(t.at.milliseconds(since: start))") }
    return out
  }

  /// Steps the clock 1 ms at a time for `ms`, advancing the machine.
  static func run(_ m: inout TurnstileMachine, _ clock: ManualClock, ms: Int) {
    for _ in 0..<ms {
      clock.advance(milliseconds: 1)
      m.advance(to: clock.now())
    }
  }

  /// One clean rotation of `input`: active now, inactive 100 ms later, 200 ms run in all.
  static func rotate(_ m: inout TurnstileMachine, _ clock: ManualClock, _ input: TurnstileInput) {
    m.edge(input, level: .active, at: clock.now())
    run(&m, clock, ms: 100)
    m.edge(input, level: .inactive, at: clock.now())
    run(&m, clock, ms: 100)
  }

  @Test("grant, rotation: unlocked, passage with its ticket, locked; only that direction's output")
  func grantedPassage() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(m.outputLevel(.entry, at: start) == .inactive)
    #expect(true == m.grant(.entry, ticket: 7, at: start))
    #expect(m.waiting(.entry) == 1 && m.waiting(.exit) == 0)
    #expect(m.outputLevel(.entry, at: start) == .active)
    #expect(m.outputLevel(.exit, at: start) == .inactive)
    Self.run(&m, clock, ms: 500)
    m.edge(.entryPassage, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 19)
    #expect(m.waiting(.entry) == 1 && m.outputLevel(.entry, at: clock.now()) == .active)
    Self.run(&m, clock, ms: 1)
    #expect(m.waiting(.entry) == 0 && m.outputLevel(.entry, at: clock.now()) == .inactive)
    m.edge(.entryPassage, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 100)
    #expect(Self.drain(&m, from: start) == ["turnstile-unlocked 16 0 @0", "passage 16 7 @520", "turnstile-locked 0 0 @520"])
    #expect(m.passageCount(.entry) == 1 && m.passageCount(.exit) == 0 && m.forcedCount == 0)
    #expect(m.alarmLevel(at: clock.now()) == .inactive)
  }

  @Test("no rotation within the timeout: granted-not-passed with the ticket at exactly the limit, relocked")
  func timeout() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.exit, ticket: 9, at: start))
    #expect(m.nextDeadline(after: start) == start.adding(milliseconds: 2_000))
    Self.run(&m, clock, ms: 1_999)
    #expect(m.waiting(.exit) == 1 && m.outputLevel(.exit, at: clock.now()) == .active)
    Self.run(&m, clock, ms: 1)
    #expect(m.waiting(.exit) == 0 && m.outputLevel(.exit, at: clock.now()) == .inactive)
    #expect(m.grantedNotPassedCount == 1 && m.passageCount(.exit) == 0)
    #expect(m.nextDeadline(after: clock.now()) == nil)
    #expect(Self.drain(&m, from: start) == ["turnstile-unlocked 17 0 @0", "granted-not-passed 17 9 @2000", "turnstile-locked 1 0 @2000"])
    // A rotation after the timeout has no grant: forced.
    Self.rotate(&m, clock, .exitPassage)
    #expect(Self.drain(&m, from: start) == ["turnstile-forced 65 0 @2020"])
  }

  @Test("a rotation without a grant: forced (no-grant), the alarm steady for forced_alarm_ms")
  func forced() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    Self.run(&m, clock, ms: 100)
    m.edge(.exitPassage, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 20)
    let forcedAt = start.adding(milliseconds: 120)
    #expect(m.forcedCount == 1 && m.passageCount(.exit) == 0)
    #expect(m.alarmLevel(at: forcedAt) == .active)
    #expect(m.alarmLevel(at: forcedAt.adding(milliseconds: 2_999)) == .active)
    #expect(m.alarmLevel(at: forcedAt.adding(milliseconds: 3_000)) == .inactive)
    #expect(m.nextDeadline(after: forcedAt) == forcedAt.adding(milliseconds: 3_000))
    #expect(m.outputLevel(.exit, at: forcedAt) == .inactive)
    #expect(Self.drain(&m, from: start) == ["turnstile-forced 65 0 @120"])
  }

  @Test("a forced rotation read late sounds the alarm for all of forced_alarm_ms from the read")
  func forcedReadLate() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    clock.advance(milliseconds: 400)
    m.learn(at: clock.now())
    m.edge(.entryPassage, level: .active, at: start)  // happened 400 ms ago
    m.advance(to: clock.now())
    #expect(Self.drain(&m, from: start) == ["turnstile-forced 64 0 @20"])
    #expect(m.alarmLevel(at: start.adding(milliseconds: 3_399)) == .active)
    #expect(m.alarmLevel(at: start.adding(milliseconds: 3_400)) == .inactive)
  }

  @Test("two grants queued: two passages with their tickets in order, the second's timer from the first passage")
  func queuedGrants() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    Self.run(&m, clock, ms: 100)
    #expect(true == m.grant(.entry, ticket: 2, at: clock.now()))
    #expect(m.waiting(.entry) == 2)
    Self.run(&m, clock, ms: 880)
    m.edge(.entryPassage, level: .active, at: clock.now())  // settles at 1000
    Self.run(&m, clock, ms: 20)
    #expect(m.waiting(.entry) == 1 && m.outputLevel(.entry, at: clock.now()) == .active)
    // The second grant's timer started at the first passage, not at its grant.
    #expect(m.nextDeadline(after: clock.now()) == start.adding(milliseconds: 3_000))
    m.edge(.entryPassage, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 1_480)
    m.edge(.entryPassage, level: .active, at: clock.now())  // settles at 2500, past grant 2's own 2100
    Self.run(&m, clock, ms: 20)
    #expect(m.waiting(.entry) == 0 && m.outputLevel(.entry, at: clock.now()) == .inactive)
    #expect(m.passageCount(.entry) == 2 && m.grantedNotPassedCount == 0)
    #expect(
      Self.drain(&m, from: start) == [
        "turnstile-unlocked 16 0 @0", "passage 16 1 @1000", "passage 16 2 @2500", "turnstile-locked 0 0 @2500",
      ])
  }

  @Test("the second queued grant times out from the first passage: passage, granted-not-passed, locked")
  func queuedTimeout() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    #expect(true == m.grant(.entry, ticket: 2, at: start))
    Self.run(&m, clock, ms: 980)
    m.edge(.entryPassage, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 2_019)
    #expect(m.waiting(.entry) == 1)
    Self.run(&m, clock, ms: 1)
    #expect(m.waiting(.entry) == 0)
    #expect(
      Self.drain(&m, from: start) == [
        "turnstile-unlocked 16 0 @0", "passage 16 1 @1000", "granted-not-passed 16 2 @3000", "turnstile-locked 0 0 @3000",
      ])
  }

  @Test("queue full: the grant is refused and nothing changes; the other direction is its own queue")
  func queueFull() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    #expect(true == m.grant(.entry, ticket: 2, at: start))
    #expect(false == m.grant(.entry, ticket: 3, at: start))
    #expect(m.waiting(.entry) == 2)
    #expect(true == m.grant(.exit, ticket: 4, at: start))
    #expect(Self.drain(&m, from: start) == ["turnstile-unlocked 16 0 @0", "turnstile-unlocked 17 0 @0"])
    // The refused ticket never comes back: two timeouts, tickets 1 then 2.
    Self.run(&m, clock, ms: 4_000)
    #expect(
      Self.drain(&m, from: start) == [
        "granted-not-passed 16 1 @2000", "granted-not-passed 17 4 @2000", "turnstile-locked 1 0 @2000",
        "granted-not-passed 16 2 @4000", "turnstile-locked 0 0 @4000",
      ])
  }

  @Test("pulse wiring: a pulse per grant, pulse_ms long, queued ones after the gap; timers as held")
  func pulseWiring() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(.pulse), now: start)
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    #expect(true == m.grant(.entry, ticket: 2, at: start.adding(milliseconds: 100)))
    clock.advance(milliseconds: 100)
    let expected: [(Int, LineLevel)] = [
      (0, .active), (499, .active), (500, .inactive), (599, .inactive), (600, .active), (1_099, .active),
      (1_100, .inactive), (1_700, .inactive), (1_900, .inactive),
    ]
    for (ms, level) in expected {
      #expect(m.outputLevel(.entry, at: start.adding(milliseconds: ms)) == level, "at \(ms) ms")
    }
    #expect(m.outputLevel(.exit, at: start) == .inactive)
    #expect(m.nextDeadline(after: start.adding(milliseconds: 100)) == start.adding(milliseconds: 500))
    #expect(m.nextDeadline(after: start.adding(milliseconds: 500)) == start.adding(milliseconds: 600))
    #expect(m.nextDeadline(after: start.adding(milliseconds: 600)) == start.adding(milliseconds: 1_100))
    #expect(m.nextDeadline(after: start.adding(milliseconds: 1_100)) == start.adding(milliseconds: 2_000))
    // The rotation ends the first grant; the second times out from it.
    Self.run(&m, clock, ms: 880)
    m.edge(.entryPassage, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 2_020)
    #expect(
      Self.drain(&m, from: start) == [
        "turnstile-unlocked 16 0 @0", "passage 16 1 @1000", "granted-not-passed 16 2 @3000", "turnstile-locked 0 0 @3000",
      ])
    // A grant after the series ended starts its pulse at once.
    let later = clock.now()
    #expect(true == m.grant(.entry, ticket: 3, at: later))
    #expect(m.outputLevel(.entry, at: later) == .active)
    #expect(m.outputLevel(.entry, at: later.adding(milliseconds: 499)) == .active)
    #expect(m.outputLevel(.entry, at: later.adding(milliseconds: 500)) == .inactive)
  }

  @Test("chatter shorter than the debounce time is no rotation; debounce 0 takes edges as they come")
  func chatter() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    for i in 0..<4 {
      m.edge(.entryPassage, level: i % 2 == 0 ? .active : .inactive, at: clock.now())
      Self.run(&m, clock, ms: 5)
    }
    Self.run(&m, clock, ms: 200)
    #expect(m.rawEdges == 4 && m.waiting(.entry) == 1 && m.passageCount(.entry) == 0)
    #expect(m.level(.entryPassage) == .inactive)
    m.edge(.entryPassage, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.waiting(.entry) == 0 && m.passageCount(.entry) == 1)

    var s = Self.settings()
    s.debounceMilliseconds = 0
    var z = TurnstileMachine(settings: s, now: start)
    #expect(true == z.grant(.exit, ticket: 5, at: start))
    z.edge(.exitPassage, level: .active, at: start)
    #expect(Self.drain(&z, from: start) == ["turnstile-unlocked 17 0 @0", "passage 17 5 @0", "turnstile-locked 1 0 @0"])
  }

  @Test("fire release: both outputs active, grants cleared, rotations are fire passages, no timeouts, relock after")
  func fire() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    #expect(true == m.grant(.entry, ticket: 5, at: start))
    Self.run(&m, clock, ms: 100)
    m.setFree(true, at: clock.now())
    #expect(m.waiting(.entry) == 0)
    #expect(m.outputLevel(.entry, at: clock.now()) == .active && m.outputLevel(.exit, at: clock.now()) == .active)
    #expect(true == m.grant(.exit, ticket: 6, at: clock.now()))  // accepted, dropped
    #expect(m.waiting(.exit) == 0)
    Self.rotate(&m, clock, .entryPassage)
    Self.rotate(&m, clock, .exitPassage)
    Self.run(&m, clock, ms: 10_000)
    #expect(m.forcedCount == 0 && m.grantedNotPassedCount == 0 && m.alarmLevel(at: clock.now()) == .inactive)
    #expect(m.passageCount(.entry) == 1 && m.passageCount(.exit) == 1)
    #expect(m.outputLevel(.entry, at: clock.now()) == .active && m.outputLevel(.exit, at: clock.now()) == .active)
    #expect(m.nextDeadline(after: clock.now()) == nil)
    m.setFree(false, at: clock.now())
    #expect(m.outputLevel(.entry, at: clock.now()) == .inactive && m.outputLevel(.exit, at: clock.now()) == .inactive)
    #expect(
      Self.drain(&m, from: start) == [
        "turnstile-unlocked 16 0 @0", "turnstile-unlocked 49 0 @100", "passage 48 0 @120", "passage 49 0 @320",
        "turnstile-locked 48 0 @10500", "turnstile-locked 49 0 @10500",
      ])
    Self.rotate(&m, clock, .entryPassage)
    #expect(Self.drain(&m, from: start) == ["turnstile-forced 64 0 @10520"])
  }

  @Test("pulse wiring while free: the output held active, not pulsed")
  func firePulse() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(.pulse), now: start)
    m.setFree(true, at: start)
    for ms in [0, 499, 500, 600, 60_000] {
      #expect(m.outputLevel(.entry, at: start.adding(milliseconds: ms)) == .active)
      #expect(m.outputLevel(.exit, at: start.adding(milliseconds: ms)) == .active)
    }
  }

  @Test("the alarm input: forced (alarm-input, entry), the alarm line sounding; each new activation again")
  func alarmInput() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start)
    m.edge(.alarm, level: .active, at: start)
    Self.run(&m, clock, ms: 1_000)
    #expect(m.alarmLevel(at: start.adding(milliseconds: 3_019)) == .active)
    #expect(m.alarmLevel(at: start.adding(milliseconds: 3_020)) == .inactive)
    m.edge(.alarm, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 1_000)
    m.edge(.alarm, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.forcedCount == 2)
    #expect(m.alarmLevel(at: start.adding(milliseconds: 5_019)) == .active)
    #expect(m.alarmLevel(at: start.adding(milliseconds: 5_020)) == .inactive)
    #expect(Self.drain(&m, from: start) == ["turnstile-forced 80 0 @20", "turnstile-forced 80 0 @2020"])
  }

  @Test("more transitions than the queue holds: the rest are counted as dropped")
  func queueOverflow() {
    var s = Self.settings()
    s.debounceMilliseconds = 0
    let clock = ManualClock()
    var m = TurnstileMachine(settings: s, now: clock.now())
    for _ in 0..<20 {
      m.edge(.alarm, level: .active, at: clock.now())
      clock.advance(milliseconds: 1)
      m.edge(.alarm, level: .inactive, at: clock.now())
      clock.advance(milliseconds: 1)
    }
    #expect(m.forcedCount == 20 && m.droppedTransitions == 4)
    var taken = 0
    while m.takeTransition() != nil { taken += 1 }
    #expect(taken == 16)
  }

  @Test("a sensor found active at start is no passage; only its next rising edge is")
  func activeAtStart() {
    let clock = ManualClock()
    let start = clock.now()
    var m = TurnstileMachine(settings: Self.settings(), now: start, levels: [.active, .inactive, .inactive])
    #expect(true == m.grant(.entry, ticket: 1, at: start))
    Self.run(&m, clock, ms: 100)
    #expect(m.waiting(.entry) == 1)
    m.edge(.entryPassage, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 100)
    Self.rotate(&m, clock, .entryPassage)
    #expect(Self.drain(&m, from: start) == ["turnstile-unlocked 16 0 @0", "passage 16 1 @220", "turnstile-locked 0 0 @220"])
  }
}
