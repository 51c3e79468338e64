import ScanBase
import ScanEmergency
import ScanSim
import Testing

/// Fire and lockdown on a manual clock. Expectations are written out from the rules (docs), never
/// computed by the state under test.
@Suite struct EmergencyStateTests {
  static func settings(debounce: UInt16 = 50) -> EmergencySettings {
    var s = EmergencySettings()
    s.debounceMilliseconds = debounce
    return s
  }

  static func drain(_ s: inout EmergencyState) -> [String] {
    var out: [String] = []
    while let t = s.takeTransition() { out.append("\(t.kind.name) \(t.code)") }
    return out
  }

  static var nobody: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

  @Test("fire follows its input once debounced: chatter under 50 ms is ignored; active and cleared are events")
  func fireDebounced() {
    let clock = ManualClock()
    var s = EmergencyState(settings: Self.settings(), now: clock.now())
    s.edge(.fire, level: .active, at: clock.now())
    clock.advance(milliseconds: 30)
    s.edge(.fire, level: .inactive, at: clock.now())
    clock.advance(milliseconds: 100)
    s.advance(to: clock.now())
    #expect(!s.fireActive && Self.drain(&s).isEmpty)
    s.edge(.fire, level: .active, at: clock.now())
    clock.advance(milliseconds: 49)
    s.advance(to: clock.now())
    #expect(!s.fireActive)
    clock.advance(milliseconds: 1)
    s.advance(to: clock.now())
    #expect(s.fireActive && Self.drain(&s) == ["fire-alarm 1"])
    s.edge(.fire, level: .inactive, at: clock.now())
    clock.advance(milliseconds: 60)
    s.advance(to: clock.now())
    #expect(!s.fireActive && Self.drain(&s) == ["fire-alarm 0"])
  }

  @Test("a lockdown is cleared only by the authority that latched it; fire overrides it while it stands")
  func lockdownAuthority() {
    let clock = ManualClock()
    var s = EmergencyState(settings: Self.settings(debounce: 0), now: clock.now())
    #expect(s.clear(by: .console, at: clock.now()) == .notLatched)
    let who = Array("uid 0".utf8)
    #expect(who.withUnsafeBytes { s.latch(by: .console, who: $0, unixSeconds: 1_000, at: clock.now()) } == .latched)
    // console = 2: code 0x0201 on, 0x0200 off
    #expect(Self.drain(&s) == ["lockdown 513"])
    #expect(s.lockdownActive && s.grantsRestricted)
    #expect(s.latch(by: .fleet, who: Self.nobody, unixSeconds: 1_001, at: clock.now()) == .alreadyLatched(.console))
    #expect(s.clear(by: .fleet, at: clock.now()) == .heldBy(.console))
    // The switch turned on and off does not lift the console's lockdown.
    s.edge(.lockdown, level: .active, at: clock.now())
    s.edge(.lockdown, level: .inactive, at: clock.now())
    #expect(s.lockdownActive && Self.drain(&s).isEmpty)
    s.edge(.fire, level: .active, at: clock.now())
    #expect(s.lockdownActive && !s.grantsRestricted && s.exitAllowed)
    s.edge(.fire, level: .inactive, at: clock.now())
    #expect(s.grantsRestricted)
    #expect(s.clear(by: .console, at: clock.now()) == .cleared)
    #expect(Self.drain(&s) == ["fire-alarm 1", "fire-alarm 0", "lockdown 512"])
    #expect(!s.lockdownActive)
  }

  @Test("the lockdown switch latches and lifts its own lockdown; a console cannot lift it")
  func lockdownSwitch() {
    let clock = ManualClock()
    var s = EmergencyState(settings: Self.settings(debounce: 0), now: clock.now())
    s.edge(.lockdown, level: .active, at: clock.now())
    #expect(s.latch.authority == .input && Self.drain(&s) == ["lockdown 257"])
    #expect(s.clear(by: .console, at: clock.now()) == .heldBy(.input))
    s.edge(.lockdown, level: .inactive, at: clock.now())
    #expect(!s.lockdownActive && Self.drain(&s) == ["lockdown 256"])
  }

  @Test("a restart keeps a console lockdown; a latch by the switch found off at start is lifted")
  func restart() {
    let clock = ManualClock()
    let who = Array("fleet-key-1".utf8)
    let console = who.withUnsafeBytes { LockdownLatch(authority: .fleet, who: $0, sinceUnixSeconds: 5) }
    var s = EmergencyState(settings: Self.settings(), now: clock.now(), latch: console)
    #expect(s.latch == console && s.grantsRestricted && Self.drain(&s).isEmpty)
    let bySwitch = LockdownLatch(authority: .input, who: Self.nobody, sinceUnixSeconds: 5)
    var t = EmergencyState(settings: Self.settings(), now: clock.now(), latch: bySwitch)
    #expect(!t.lockdownActive && Self.drain(&t) == ["lockdown 256"])
    var u = EmergencyState(settings: Self.settings(), now: clock.now(), levels: [.inactive, .active], latch: bySwitch)
    #expect(u.latch.authority == .input && Self.drain(&u).isEmpty)  // restored as it was: no new event
  }

  @Test("exit buttons during a lockdown: allowed by default, held when configured, always in a fire")
  func exitButtons() {
    let clock = ManualClock()
    var settings = Self.settings(debounce: 0)
    settings.exitDuringLockdown = false
    var s = EmergencyState(settings: settings, now: clock.now())
    #expect(s.exitAllowed)
    _ = s.latch(by: .console, who: Self.nobody, unixSeconds: 0, at: clock.now())
    #expect(!s.exitAllowed)
    s.edge(.fire, level: .active, at: clock.now())
    #expect(s.exitAllowed)
  }

  @Test("the latch file's record: round trip, and anything not a whole valid record refused")
  func latchRecord() {
    let who = Array("uid 1000".utf8)
    let latch = who.withUnsafeBytes { LockdownLatch(authority: .console, who: $0, sinceUnixSeconds: 1_764_000_000) }
    var bytes = [UInt8](repeating: 0xEE, count: LockdownLatch.encodedBytes)
    bytes.withUnsafeMutableBytes { latch.encode(into: $0) }
    #expect(bytes[0] == 1 && bytes[1] == 2 && bytes[2] == 8 && Array(bytes[16..<24]) == who)
    #expect(bytes.withUnsafeBytes { LockdownLatch(decoding: $0) } == latch)
    var empty = [UInt8](repeating: 0, count: LockdownLatch.encodedBytes)
    empty.withUnsafeMutableBytes { LockdownLatch().encode(into: $0) }
    #expect(empty.withUnsafeBytes { LockdownLatch(decoding: $0) }?.isActive == false)
    for (offset, value) in [(0, UInt8(2)), (1, 9), (2, 33), (5, 1), (40, 1)] {
      var bad = bytes
      bad[offset] = value
      #expect(bad.withUnsafeBytes { LockdownLatch(decoding: $0) } == nil, "byte \(offset) = \(value)")
    }
    #expect(Array(bytes[0..<47]).withUnsafeBytes { LockdownLatch(decoding: $0) } == nil)
    #expect([UInt8](repeating: 0, count: 48).withUnsafeBytes { LockdownLatch(decoding: $0) } == nil)
  }
}
