import ScanConsole
import ScanCore
import ScanSim
import Testing

/// Local users as peers: keys, AUTH lockouts per user, and who gets a connection slot.
@Suite struct LocalPeerTests {
  let root = PeerKey.localUser(0)
  let nobody = PeerKey.localUser(65_534)

  @Test("a local user's key is its own: not loopback, not a network, not another user")
  func keys() {
    #expect(root != nobody && root != .loopback && nobody != .loopback)
    #expect(nobody.localUID == 65_534 && root.localUID == 0 && PeerKey.loopback.localUID == nil)
    #expect(root.isLocal && PeerKey.loopback.isLocal && !root.isNetwork)
    #expect(PeerKey.ipv4(0xC0A8_0001).isNetwork && !PeerKey.serial.isNetwork && !PeerKey.serial.isLocal)
    // No network key reads as a local user, whatever its bits.
    #expect(PeerKey.ipv4(0x0001_0000).localUID == nil && PeerKey.ipv4(0xFFFF_FFFF).localUID == nil)
    #expect(PeerKey.ipv6(high: 0, low: 0x0001_0000_0000_0007).localUID == nil)
    #expect(PeerKey.ipv6(high: 0x0001_0000_0000_0000, low: 0).localUID == nil)
  }

  @Test("one local user's failures lock out that user only; the operator's user still gets in")
  func lockoutPerUser() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.failuresMax = 5
    var gate = AuthGate(settings: settings)
    for _ in 0..<5 {
      #expect(gate.admit(nobody, at: clock.now()) == .allowed)
      gate.recordFailure(nobody, at: clock.now())
      clock.advance(milliseconds: 20_000)
    }
    if case .lockedOut = gate.admit(nobody, at: clock.now()) {} else { Issue.record("nobody is not locked out") }
    #expect(gate.admit(root, at: clock.now()) == .allowed)
    #expect(gate.admit(.serial, at: clock.now()) == .allowed)
  }

  @Test("failures from the network (the global budget, a full table) never lock out a local user or the serial port")
  func networkCannotReachLocal() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.globalFailuresMax = 10
    settings.failuresMax = 1
    var gate = AuthGate(settings: settings, capacity: 4, localCapacity: 2)
    for i in 0..<40 { gate.recordFailure(PeerKey.ipv4(0x0A00_0000 + UInt32(i)), at: clock.now()) }
    if case .lockedOut = gate.admit(PeerKey.ipv4(0x0B00_0001), at: clock.now()) {} else { Issue.record("no global lockout") }
    #expect(gate.admit(root, at: clock.now()) == .allowed)
    #expect(gate.admit(.loopback, at: clock.now()) == .allowed)
    #expect(gate.admit(.serial, at: clock.now()) == .allowed)
  }

  @Test("local users' failures do not spend the network's global budget")
  func localOutsideGlobalBudget() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.globalFailuresMax = 3
    settings.failuresMax = 100
    settings.firstBackoffMilliseconds = 1
    var gate = AuthGate(settings: settings)
    for uid in UInt32(1_000)..<1_010 { gate.recordFailure(.localUser(uid), at: clock.now()) }
    #expect(gate.admit(PeerKey.ipv4(0xC0A8_0001), at: clock.now()) == .allowed)
  }

  @Test("a full local table refuses new local users (never forgets a lockout), and still not the serial port")
  func localTableFull() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.failuresMax = 1
    var gate = AuthGate(settings: settings, capacity: 4, localCapacity: 2)
    gate.recordFailure(.localUser(1), at: clock.now())
    gate.recordFailure(.localUser(2), at: clock.now())
    gate.recordFailure(.localUser(3), at: clock.now())  // no room: new local users refused
    if case .lockedOut = gate.admit(.localUser(1), at: clock.now()) {} else { Issue.record("user 1's lockout was evicted") }
    if case .lockedOut = gate.admit(.localUser(4), at: clock.now()) {} else { Issue.record("a full table let a new user guess unrecorded") }
    #expect(gate.admit(.serial, at: clock.now()) == .allowed)
    #expect(gate.admit(PeerKey.ipv4(0xC0A8_0001), at: clock.now()) == .allowed)
  }
}

/// `ConsoleAdmission` over a fake set of slots.
@Suite struct ConsoleAdmissionTests {
  typealias Occupant = ConsoleAdmission.Occupant
  let root = PeerKey.localUser(0)
  let nobody = PeerKey.localUser(65_534)
  let lan = PeerKey.ipv4(0xC0A8_0105)

  func decide(_ peer: PeerKey, _ slots: [Occupant?], perPeerMax: Int = 4) -> ConsoleAdmission.Decision {
    ConsoleAdmission.decide(peer, perPeerMax: perPeerMax, slotCount: slots.count) { slots[$0] }
  }

  func idle(_ peer: PeerKey, _ seconds: UInt64, authenticated: Bool = false) -> Occupant {
    Occupant(peer: peer, authenticated: authenticated, lastActivity: Instant(nanoseconds: seconds * 1_000_000_000))
  }

  @Test("a peer holds at most perPeerMax unauthenticated connections; an operator's do not count")
  func perPeerCap() {
    var slots: [Occupant?] = Array(repeating: nil, count: 16)
    for i in 0..<4 { slots[i] = idle(nobody, UInt64(i)) }
    #expect(decide(nobody, slots) == .refusedPeer)
    #expect(decide(root, slots) == .free(4))
    slots[0] = idle(nobody, 0, authenticated: true)
    #expect(decide(nobody, slots) == .free(4))
  }

  @Test("sixteen slots taken by one user: the next user gets the slot of that user's longest-idle connection")
  func reclaimFromHog() {
    let slots: [Occupant?] = (0..<16).map { idle(nobody, UInt64(100 - $0)) }
    #expect(decide(root, slots, perPeerMax: 16) == .reclaim(15))
    #expect(decide(nobody, slots, perPeerMax: 16) == .refusedPeer)
  }

  @Test("equal holders never swap: a fair share cannot be churned away")
  func noChurnBetweenEquals() {
    let slots: [Occupant?] = (0..<4).map { idle(.localUser(UInt32(1_000 + $0)), UInt64($0)) }
    #expect(decide(root, slots) == .refusedFull)
    let two: [Occupant?] = [idle(nobody, 1), idle(nobody, 2), idle(.localUser(7), 0), idle(.localUser(8), 0)]
    #expect(decide(root, two) == .reclaim(0))  // nobody holds 2, root 0
  }

  @Test("a user on this host comes before the network; operators are never closed")
  func localBeforeNetwork() {
    var slots: [Occupant?] = [idle(lan, 5), idle(.ipv4(0xC0A8_0106), 1), idle(root, 0, authenticated: true)]
    #expect(decide(nobody, slots) == .reclaim(1))
    #expect(decide(.ipv4(0xC0A8_0107), slots) == .refusedFull)
    slots = [idle(root, 0, authenticated: true), idle(nobody, 0, authenticated: true)]
    #expect(decide(.localUser(5), slots) == .refusedFull)
  }
}
