import ScanAudit
import ScanBase
import ScanDoor
import ScanSim
import Testing

/// The door machine on a manual clock: every transition and timer, and chattering inputs.
/// Expectations are written out by hand from the door's rules, never computed by the machine.
@Suite struct DoorMachineTests {
  static func settings() -> DoorSettings {
    var s = DoorSettings()
    s.enabled = true
    s.heldOpenMilliseconds = 5_000
    s.debounceMilliseconds = [20, 20, 20]
    s.forcedAlarmMilliseconds = 3_000
    s.heldOpenBeepOnMilliseconds = 200
    s.heldOpenBeepOffMilliseconds = 300
    return s
  }

  /// Drains the machine's transitions as "kind code" strings.
  static func drain(_ m: inout DoorMachine) -> [String] {
    var out: [String] = []
    while let t = m.takeTransition() { out.append("\(t.kind.name) \(t.code)") }
    return out
  }

  /// Steps the clock 1 ms at a time for `ms`, advancing the machine.
  static func run(_ m: inout DoorMachine, _ clock: ManualClock, ms: Int) {
    for _ in 0..<ms {
      clock.advance(milliseconds: 1)
      m.advance(to: clock.now())
    }
  }

  @Test("grant, open, close: unlocked, opened, closed, relock asked, locked")
  func grantedPassage() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    #expect(m.state == .closed)
    m.strike(.active, reason: .grant, at: clock.now())
    #expect(m.state == .unlocked)
    clock.advance(milliseconds: 500)
    m.edge(.contact, level: .active, at: clock.now())
    // Not yet: the level must hold for the debounce time.
    #expect(m.state == .unlocked)
    Self.run(&m, clock, ms: 19)
    #expect(m.state == .unlocked)
    Self.run(&m, clock, ms: 1)
    #expect(m.state == .open)
    Self.run(&m, clock, ms: 2_000)
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 25)
    #expect(m.state == .unlocked && m.wantsRelock)
    m.strike(.inactive, reason: .grant, at: clock.now())
    #expect(m.state == .closed)
    #expect(Self.drain(&m) == ["door-unlocked 1", "door-opened 0", "door-closed 2", "door-locked 0"])
    #expect(m.alarmLevel(at: clock.now()) == .inactive)
  }

  @Test("without relock_on_close the strike stays released for its pulse after the door closed")
  func noRelock() {
    let clock = ManualClock()
    var s = Self.settings()
    s.relockOnClose = false
    var m = DoorMachine(settings: s, now: clock.now())
    m.strike(.active, reason: .console, at: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 100)
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 100)
    #expect(m.state == .unlocked && !m.wantsRelock)
    #expect(Self.drain(&m) == ["door-unlocked 3", "door-opened 0", "door-closed 0"])
  }

  @Test("an unlock that is not used locks again: unlocked, then locked")
  func unusedUnlock() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.strike(.active, reason: .grant, at: clock.now())
    clock.advance(milliseconds: 3_000)
    m.strike(.inactive, reason: .grant, at: clock.now())
    #expect(m.state == .closed)
    #expect(Self.drain(&m) == ["door-unlocked 1", "door-locked 0"])
  }

  @Test("open longer than held_open_ms after an unlock: held open at exactly the limit, beeping until closed")
  func heldOpen() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.strike(.active, reason: .grant, at: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    let opened = clock.now().adding(milliseconds: 20)
    Self.run(&m, clock, ms: 20)
    m.strike(.inactive, reason: .grant, at: clock.now())  // the pulse ends while the door is open
    #expect(m.state == .open)
    #expect(m.nextDeadline(after: clock.now()) == opened.adding(milliseconds: 5_000))
    Self.run(&m, clock, ms: 4_999)
    #expect(m.state == .open && m.alarmLevel(at: clock.now()) == .inactive)
    Self.run(&m, clock, ms: 1)
    #expect(m.state == .heldOpen && m.heldOpenCount == 1)
    // Beep: 200 ms on, 300 ms off, from the instant it was held open.
    let held = clock.now()
    #expect(m.alarmLevel(at: held) == .active)
    #expect(m.alarmLevel(at: held.adding(milliseconds: 199)) == .active)
    #expect(m.alarmLevel(at: held.adding(milliseconds: 200)) == .inactive)
    #expect(m.alarmLevel(at: held.adding(milliseconds: 499)) == .inactive)
    #expect(m.alarmLevel(at: held.adding(milliseconds: 500)) == .active)
    #expect(m.nextDeadline(after: held) == held.adding(milliseconds: 200))
    #expect(m.nextDeadline(after: held.adding(milliseconds: 250)) == held.adding(milliseconds: 500))
    Self.run(&m, clock, ms: 10_000)
    #expect(m.state == .heldOpen && m.heldOpenCount == 1)
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.state == .closed && !m.wantsRelock)
    #expect(m.alarmLevel(at: clock.now()) == .inactive)
    #expect(
      Self.drain(&m) == ["door-unlocked 1", "door-opened 0", "door-locked 0", "door-held-open 5", "door-closed 15"])
  }

  @Test("opened without an unlock: forced, the alarm steady for forced_alarm_ms, on past the door closing")
  func forced() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.state == .forced && m.forcedCount == 1)
    let forcedAt = clock.now()
    #expect(m.alarmLevel(at: forcedAt) == .active)
    #expect(m.nextDeadline(after: forcedAt) == forcedAt.adding(milliseconds: 3_000))
    // A forced door is not "held open": no held-open event however long it stays open.
    Self.run(&m, clock, ms: 1_000)
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.state == .closed)
    #expect(m.alarmLevel(at: forcedAt.adding(milliseconds: 2_999)) == .active)
    #expect(m.alarmLevel(at: forcedAt.adding(milliseconds: 3_000)) == .inactive)
    #expect(Self.drain(&m) == ["door-forced 0", "door-closed 1"])
  }

  @Test("a forced opening read late (a loaded loop, with a later edge in the same read) sounds the alarm for all of forced_alarm_ms from the read")
  func forcedReadLate() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    let opened = clock.now()
    // The edge is read 400 ms after it happened (debounce 20 ms): the machine learns of the
    // forced door at +400, and the event keeps the instant it happened (+20).
    clock.advance(milliseconds: 400)
    let read = clock.now()
    m.learn(at: read)
    m.edge(.contact, level: .active, at: opened)
    // A later edge of the same batch settles the opening while it is fed (it held 300 ms).
    m.edge(.contact, level: .inactive, at: opened.adding(milliseconds: 300))
    m.advance(to: read)
    #expect(m.state == .closed && m.forcedCount == 1)
    let forced = m.takeTransition(), closed = m.takeTransition()
    #expect(forced?.kind == .doorForced && forced?.at == opened.adding(milliseconds: 20))
    #expect(closed?.kind == .doorClosed && closed?.at == opened.adding(milliseconds: 320))
    #expect(m.alarmLevel(at: read.adding(milliseconds: 2_999)) == .active)
    #expect(m.alarmLevel(at: read.adding(milliseconds: 3_000)) == .inactive)
  }

  @Test("a grant while a door stands forced open leaves it forced")
  func grantWhileForced() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 30)
    m.strike(.active, reason: .grant, at: clock.now())
    #expect(m.state == .forced)
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 30)
    // Closed while the strike is released: unlocked, and the strike asked to lock.
    #expect(m.state == .unlocked && m.wantsRelock)
  }

  @Test("a debounced exit-button press asks for the strike; the strike's release is an exit-button unlock")
  func exitButton() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.edge(.exitButton, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 19)
    #expect(!m.wantsStrikePulse)
    Self.run(&m, clock, ms: 1)
    #expect(m.wantsStrikePulse && m.exitRequests == 1)
    m.wantsStrikePulse = false
    m.strike(.active, reason: .exitButton, at: clock.now())
    m.edge(.exitButton, level: .inactive, at: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 30)
    #expect(m.state == .open)
    #expect(Self.drain(&m) == ["exit-request 0", "door-unlocked 2", "door-opened 0"])
    // A press while the door is open records the request but asks for nothing.
    m.edge(.exitButton, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 30)
    #expect(!m.wantsStrikePulse && m.exitRequests == 2)
  }

  @Test("exit_unlocks off: a press is recorded, the strike is not asked for")
  func exitButtonRecordsOnly() {
    let clock = ManualClock()
    var s = Self.settings()
    s.exitButtonUnlocks = false
    var m = DoorMachine(settings: s, now: clock.now())
    m.edge(.exitButton, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 30)
    #expect(!m.wantsStrikePulse)
    #expect(Self.drain(&m) == ["exit-request 0"])
  }

  @Test("a button press shorter than the debounce time is ignored")
  func exitButtonGlitch() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.edge(.exitButton, level: .active, at: clock.now())
    clock.advance(milliseconds: 15)
    m.edge(.exitButton, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 100)
    #expect(!m.wantsStrikePulse && m.exitRequests == 0 && Self.drain(&m).isEmpty)
  }

  @Test("tamper: active and restored are events, the alarm sounds while it is active")
  func tamper() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.edge(.tamper, level: .active, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(m.tamperActive && m.alarmLevel(at: clock.now()) == .active)
    Self.run(&m, clock, ms: 60_000)
    #expect(m.alarmLevel(at: clock.now()) == .active)
    m.edge(.tamper, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 20)
    #expect(!m.tamperActive && m.alarmLevel(at: clock.now()) == .inactive)
    #expect(m.state == .closed)
    #expect(Self.drain(&m) == ["tamper 1", "tamper 0"])
  }

  @Test("contact chatter: 20 bounce edges within 10 ms after the door opens give one transition")
  func chatter() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    m.strike(.active, reason: .grant, at: clock.now())
    _ = Self.drain(&m)
    // The opening edge, then 20 bounce edges 0.5 ms apart (alternating), ending open.
    var level = LineLevel.active
    m.edge(.contact, level: level, at: clock.now())
    for _ in 0..<20 {
      clock.advance(microseconds: 500)
      level = level == .active ? .inactive : .active
      m.edge(.contact, level: level, at: clock.now())
    }
    #expect(level == .active && m.rawEdges == 21)
    let lastEdge = clock.now()
    Self.run(&m, clock, ms: 100)
    #expect(Self.drain(&m) == ["door-opened 0"])
    // It settled debounce_ms after the last edge, and that is when it counts as opened.
    m.edge(.contact, level: .inactive, at: clock.now())
    Self.run(&m, clock, ms: 30)
    #expect(m.state == .unlocked)
    #expect(lastEdge.adding(milliseconds: 20) <= clock.now())
  }

  @Test("chatter that ends where it began (20 edges) is no transition at all")
  func chatterBack() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    var level = LineLevel.inactive
    for _ in 0..<20 {
      level = level == .active ? .inactive : .active
      m.edge(.contact, level: level, at: clock.now())
      clock.advance(microseconds: 500)
    }
    Self.run(&m, clock, ms: 100)
    #expect(m.state == .closed && Self.drain(&m).isEmpty)
  }

  @Test("edges read late (kernel timestamps older than the loop's now) are timed where they happened")
  func lateEdges() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    let t0 = clock.now()
    m.strike(.active, reason: .grant, at: t0)
    clock.advance(milliseconds: 200)
    m.advance(to: clock.now())
    // The loop reads two edges at once, taken 150 and 100 ms ago: the door opened and closed
    // again 50 ms later (longer than the debounce time), though the loop saw both at once.
    m.edge(.contact, level: .active, at: t0.adding(milliseconds: 50))
    m.edge(.contact, level: .inactive, at: t0.adding(milliseconds: 100))
    m.advance(to: clock.now())
    #expect(m.state == .unlocked && m.wantsRelock)
    var times: [Int] = []
    while let t = m.takeTransition() { times.append(t.at.milliseconds(since: t0)) }
    #expect(times == [0, 70, 120])
  }

  @Test("a door opened during the pulse but read after the strike locked again is opened, not forced")
  func openedBeforeLockReadLate() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now())
    let t0 = clock.now()
    m.strike(.active, reason: .exitButton, at: t0)
    m.strike(.inactive, reason: .exitButton, at: t0.adding(milliseconds: 1_000))
    clock.advance(milliseconds: 1_300)
    // A loaded loop reads the contact's edge only now: it happened at 800 ms, strike released.
    m.edge(.contact, level: .active, at: t0.adding(milliseconds: 800))
    m.advance(to: clock.now())
    #expect(m.state == .open && m.forcedCount == 0)
    #expect(Self.drain(&m) == ["door-unlocked 2", "door-locked 0", "door-opened 0"])
    // And one opened after the lock is forced, however late it is read.
    var f = DoorMachine(settings: Self.settings(), now: t0)
    f.strike(.active, reason: .exitButton, at: t0)
    f.strike(.inactive, reason: .exitButton, at: t0.adding(milliseconds: 1_000))
    f.edge(.contact, level: .active, at: t0.adding(milliseconds: 1_100))
    f.advance(to: t0.adding(milliseconds: 1_300))
    #expect(f.state == .forced && f.forcedCount == 1)
  }

  @Test("zero debounce: an edge counts at once")
  func zeroDebounce() {
    let clock = ManualClock()
    var s = Self.settings()
    s.debounceMilliseconds = [0, 0, 0]
    var m = DoorMachine(settings: s, now: clock.now())
    m.edge(.contact, level: .active, at: clock.now())
    #expect(m.state == .forced)
  }

  @Test("a door found open at start is open, and held open after the limit")
  func openAtStart() {
    let clock = ManualClock()
    var m = DoorMachine(settings: Self.settings(), now: clock.now(), levels: [.active, .inactive, .inactive])
    #expect(m.state == .open)
    Self.run(&m, clock, ms: 5_000)
    #expect(m.state == .heldOpen)
  }

  @Test("door event names and details are stable text")
  func names() {
    #expect(EventKind.doorKinds.map(\.rawValue) == [20, 21, 22, 23, 24, 25, 26, 27, 28])
    #expect(EventKind.unlockWindow.name == "unlock-window")
    for kind in EventKind.doorKinds { #expect(EventKind(name: kind.name) == kind) }
    #expect(DoorText.detail(.doorUnlocked, code: 2) == "exit-button")
    #expect(DoorText.detail(.doorClosed, code: 7) == "7s")
    #expect(DoorText.detail(.tamper, code: 1) == "active")
    #expect(DoorText.detail(.doorForced, code: 0) == "")
    #expect(DoorText.detail(.unlockWindow, code: 1) == "holding" && DoorText.detail(.unlockWindow, code: 0) == "ended")
    #expect(DoorText.detail(.doorUnlocked, code: 4) == "schedule")
  }
}

@Suite struct DoorAuditTests {
  @Test("door events are audit facts: the record keeps the code and its detail text")
  func auditRecord() {
    var e = ScanEvent()
    e.kind = .doorUnlocked
    e.code = UnlockReason.exitButton.rawValue
    #expect(AuditRecord.isLogged(.doorUnlocked) && AuditRecord.isLogged(.doorForced) && AuditRecord.isLogged(.tamper))
    let r = AuditRecord(e, sequence: 1, run: 1, keepPayload: false)
    #expect(r.kind == .doorUnlocked && r.code == 2 && r.detail == "exit-button")
    #expect(r.line.hasSuffix("door-unlocked exit-button"))
  }
}
