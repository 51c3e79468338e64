import CLinux
import Glibc
import ScanConsole
import ScanCore
@testable import ScanFleetLinux
import ScanLinux
import ScanSim
import ScanTestSupport
import Testing

/// The lockdown's owner on the loop (EmergencyController): its durable latch across restarts, a
/// damaged latch file failing secure, the authorities, a fleet command through FleetRequests, and
/// what it asks of the loop.
@Suite(.serialized) struct LockdownTests {
  static func controller(
    _ dir: String, clock: ManualClock, ring: EventRing = EventRing(capacity: 256), lockdown: SimulatedInputLine? = nil
  )
    -> EmergencyController
  {
    EmergencyController(
      settings: EmergencySettings(), ring: ring, wall: clock, now: clock.now(), fire: nil, lockdown: lockdown,
      latchPath: dir + "/lockdown")
  }

  static func act(_ c: EmergencyController, _ action: ConsoleAction, by authority: EmergencyAuthority = .console) -> ConsoleActionOutcome? {
    guard case .action(let outcome) = c.perform(.action(action, authority: authority, who: Array("uid 0".utf8))) else { return nil }
    return outcome
  }

  /// What the controller asks of the loop in one service turn.
  static func asked(_ c: EmergencyController, clock: ManualClock) -> [String] {
    let requests = LoopRequests()
    let poll = PollSet(capacity: 4)
    _ = c.prepare(poll, now: clock.now())
    c.service(poll, now: clock.now(), requests: requests)
    var out: [String] = []
    while let r = requests.next() {
      switch r {
      case .lockdown(let on): out.append("lockdown \(on)")
      case .fireRelease(let on): out.append("fire \(on)")
      default: out.append("other")
      }
    }
    return out
  }

  @Test("LOCKDOWN ON from the console survives a restart; only the console lifts it; the latch file is 0600")
  func consoleLatchSurvivesRestart() {
    let dir = temporaryDirectory("lockdown")
    defer { removeTree(dir) }
    let clock = ManualClock()
    let first = Self.controller(dir, clock: clock)
    #expect(Self.asked(first, clock: clock) == ["fire false", "lockdown false"])
    #expect(Self.act(first, .lockdownOn) == .latched)
    #expect(Self.asked(first, clock: clock) == ["lockdown true"])
    var st = stat()
    #expect(stat(dir + "/lockdown", &st) == 0 && st.st_mode & 0o777 == 0o600)
    let second = Self.controller(dir, clock: clock)  // a restart (or kill -9 after the OK)
    #expect(second.state.lockdownActive && second.state.latch.authority == .console)
    #expect(Self.asked(second, clock: clock) == ["fire false", "lockdown true"])
    #expect(Self.act(second, .lockdownOff, by: .fleet) == .heldBy(.console))
    #expect(Self.act(second, .lockdownOff) == .cleared)
    #expect(!Self.controller(dir, clock: clock).state.lockdownActive)
  }

  @Test("a damaged, empty-but-wrong or non-regular latch file starts the reader locked down, said on STATUS")
  func damagedLatchFailsSecure() {
    let dir = temporaryDirectory("lockdown")
    defer { removeTree(dir) }
    let clock = ManualClock()
    writeFile(dir + "/lockdown", bytes: [UInt8](repeating: 7, count: 48))
    let damaged = Self.controller(dir, clock: clock)
    #expect(damaged.state.grantsRestricted)
    var status = ReaderStatus()
    damaged.contribute(to: &status, now: clock.now(), unixSeconds: 0)
    #expect(status.section("emergency")?.contains("FAULT") == true && status.section("emergency")?.contains("damaged") == true)
    _ = unlink(dir + "/lockdown")
    _ = mkfifo(dir + "/lockdown", 0o600)
    let fifo = Self.controller(dir, clock: clock)  // opened without blocking, refused: not a regular file
    #expect(fifo.state.grantsRestricted)
    // A short file is not whole slots: damaged too.
    _ = unlink(dir + "/lockdown")
    writeFile(dir + "/lockdown", bytes: [1, 2, 3])
    #expect(Self.controller(dir, clock: clock).state.grantsRestricted)
  }

  @Test("a signed fleet command's lockdown reaches the controller on the loop's turn, named by its key")
  func fleetLockdown() {
    let dir = temporaryDirectory("lockdown")
    defer { removeTree(dir) }
    let clock = ManualClock()
    let ring = EventRing(capacity: 256)
    let c = Self.controller(dir, clock: clock, ring: ring)
    let fleet = FleetRequests()
    fleet.owners = [c]
    fleet.ask {
      $0.lockdown = true
      $0.by = "fleet key ops-1"
    }
    let requests = LoopRequests()
    fleet.service(PollSet(capacity: 1), now: clock.now(), requests: requests)
    #expect(fleet.lastOutcome == .latched && c.state.latch.authority == .fleet)
    #expect(Self.act(c, .lockdownOff) == .heldBy(.fleet))
    var lines: [String] = []
    var s: UInt64 = 1
    while case .event(let e) = ring.read(s) {
      lines.append(EventText.line(e, since: clock.now(), payloads: .hidden))
      s += 1
    }
    #expect(lines.contains { $0.contains("lockdown on fleet by=fleet%20key%20ops-1") }, "\(lines)")
  }

  @Test("the lockdown switch: active latches, turned back lifts; the console cannot lift it")
  func lockdownSwitch() {
    let dir = temporaryDirectory("lockdown")
    defer { removeTree(dir) }
    let clock = ManualClock()
    let line = SimulatedInputLine()
    let c = Self.controller(dir, clock: clock, lockdown: line)
    _ = Self.asked(c, clock: clock)
    line.schedule(.active, at: clock.now().adding(milliseconds: 10))
    clock.advance(milliseconds: 100)
    #expect(Self.asked(c, clock: clock) == ["lockdown true"])
    #expect(Self.act(c, .lockdownOff) == .heldBy(.input))
    line.schedule(.inactive, at: clock.now().adding(milliseconds: 10))
    clock.advance(milliseconds: 100)
    #expect(Self.asked(c, clock: clock) == ["lockdown false"])
  }
}
