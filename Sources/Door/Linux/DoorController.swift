import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform

/// The door on the loop: a poll participant that reads the contact, exit-button and tamper
/// lines' edge events, follows the strike through the event ring (the engine's relay edges and
/// the decisions and console OPENs before them say why it was released), runs the
/// `DoorMachine`, records its transitions in the ring (console WATCH, journal, audit log), drives
/// the alarm line, and asks the loop for a strike release (exit button) or an early relock
/// (door closed again) through `LoopRequests`. It runs on the loop's thread: the ring keeps one
/// producer. Nothing allocates per edge or per iteration.
public final class DoorController: PollParticipant {
  public private(set) var machine: DoorMachine
  /// Contact, exit button, tamper (`DoorInput`'s order).
  private let lines: InputLines
  private var alarm: (any OutputLine)?
  public private(set) var alarmLevel = LineLevel.inactive
  private var auxRelay: (any OutputLine)?
  public private(set) var auxRelayLevel = LineLevel.inactive
  private let ring: EventRing
  private var cursor: EventCursor
  private let wall: any WallClock
  /// Why the next strike release happens (the last grant, OPEN or exit request before it).
  private var pendingReason: UnlockReason? = nil
  public var inputErrors: UInt64 { lines.errors }
  public private(set) var alarmErrors: UInt64 = 0
  /// Lost edges made up for from a line's level (`readEdgesAndLevel`).
  public var resyncs: UInt64 { lines.resyncs }
  public let backend: String
  /// Exit buttons release the strike during a lockdown (`emergency.exit_during_lockdown`).
  public var exitDuringLockdown = true
  /// What the ring said last: a lockdown in force, the fire release, a schedule's window.
  private var lockdown = false
  private var fire = false
  private var window = false

  /// A door on `lines` (contact, exit button, tamper; nil: not fitted) whose inputs read their
  /// current levels now.
  public init(
    settings: DoorSettings, ring: EventRing, wall: any WallClock, now: Instant,
    contact: (any InputLine)?, exitButton: (any InputLine)?, tamper: (any InputLine)?,
    alarm: (any OutputLine)?, auxRelay: (any OutputLine)? = nil
  ) {
    let lines = InputLines([contact, exitButton, tamper])
    self.lines = lines
    var levels = InlineArray<3, LineLevel>(repeating: .inactive)
    for i in 0..<3 { levels[i] = lines.levels[i] }
    machine = DoorMachine(settings: settings, now: now, levels: levels)
    self.alarm = alarm
    self.auxRelay = auxRelay
    self.ring = ring
    self.wall = wall
    cursor = EventCursor(next: ring.nextSequence)
    backend = lines.backend
  }

  public var pollCapacity: Int { 3 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    machine.learn(at: now)
    followStrike()
    publish(now: now)
    var next = machine.nextDeadline(after: now)
    lines.prepare(poll, now: now, next: &next)
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    machine.learn(at: now)  // the edges read below may be older: what they cause is learned of now
    followStrike()
    // A level that differs from the last edge read is a lost edge: debounced like any other.
    lines.service(poll, now: now) { i, level, at in machine.edge(DoorInput(rawValue: i)!, level: level, at: at) }
    machine.advance(to: now)
    if machine.wantsStrikePulse {
      machine.wantsStrikePulse = false
      // During a lockdown the button still records its press; it releases only if configured to.
      if !lockdown || exitDuringLockdown || fire {
        pendingReason = .exitButton
        requests.post(.releaseStrikeForExit)
      }
    }
    if machine.wantsRelock {
      machine.wantsRelock = false
      requests.post(.relockStrike)
    }
    publish(now: now)
  }

  /// Reads what the engine recorded since the last look: the strike's edges, and the grants and
  /// OPENs that say why it was released.
  private func followStrike() {
    cursor.read(ring) { item in
      guard case .event(let e) = item else { return }
      switch e.kind {
      case .decision where e.verdict.isGranted: pendingReason = .grant
      case .manualOpen: pendingReason = e.withLabel { UnlockReason(name: $0) } ?? .console
      case .unlockWindow:
        if e.code == 1 { pendingReason = .schedule }
        if e.code != 2 {
          window = e.code == 1
          machine.setUnlockWindow(window || fire, at: e.monotonic)
        }
      case .fireAlarm:
        // The fire release holds the strike as a window does: the door may stand open.
        fire = e.code == 1
        if fire { pendingReason = .fire }
        machine.setUnlockWindow(window || fire, at: e.monotonic)
      case .lockdown: lockdown = e.code & 0xFF == 1
      case .edge where e.code & 0xF0 == EdgeCode.relay:
        let level: LineLevel = e.code & 1 == 1 ? .active : .inactive
        // A window's hold taken up again (after a lapsed lease) has no event of its own.
        machine.strike(level, reason: pendingReason ?? (machine.unlockWindow ? .schedule : .console), at: e.monotonic)
        if level == .active { pendingReason = nil }
      default: break
      }
    }
  }

  /// Records the machine's transitions in the ring and drives the alarm line.
  /// The door as it is now, for the fleet's state topic (`StateFlags`: open, tamper, strike;
  /// each only when its input is fitted); nil: no one reads it.
  /// Set from the start: the inputs were read when the controller was made.
  public var stateGauge: SharedGauge? = nil {
    didSet { storeState() }
  }

  private func storeState() {
    guard let stateGauge else { return }
    var flags = StateFlags()
    if lines.isWired(DoorInput.contact.rawValue) { flags.set(StateFlags.doorOpen, machine.state.isOpen) }
    if lines.isWired(DoorInput.tamper.rawValue) { flags.set(StateFlags.tamper, machine.tamperActive) }
    flags.set(StateFlags.strikeReleased, machine.strikeActive)
    stateGauge.store(flags.raw)
  }

  private func publish(now: Instant) {
    let wallNow = wall.unixNanoseconds()
    while let t = machine.takeTransition() {
      ring.append(ScanEvent(t.kind, code: t.code, at: t.at, seenAt: now, wallNow: wallNow))
    }
    storeState()
    // Our own events are behind the cursor's reach: skip them.
    cursor = EventCursor(next: max(cursor.next, ring.nextSequence))
    if alarm != nil {
      let level = machine.alarmLevel(at: now)
      if level != alarmLevel, drive(&alarm, level, line: EdgeCode.alarm, now: now, wallNow: wallNow) { alarmLevel = level }
    }
    if auxRelay != nil {
      let level = machine.alertLevel(at: now)
      if level != auxRelayLevel, drive(&auxRelay, level, line: EdgeCode.auxRelay, now: now, wallNow: wallNow) {
        auxRelayLevel = level
      }
    }
  }

  /// Drives one of the door's outputs and records the edge; false when the write failed.
  private func drive(
    _ output: inout (any OutputLine)?, _ level: LineLevel, line: UInt16, now: Instant, wallNow: Int64
  ) -> Bool {
    do throws(GPIOError) {
      try output!.set(level)
    } catch {
      alarmErrors &+= 1
      return false
    }
    ring.append(ScanEvent(.edge, code: EdgeCode.code(line: line, level: level), at: now, wall: wallNow))
    cursor = EventCursor(next: ring.nextSequence)
    return true
  }

  /// Drives the alarm line and the second relay inactive (shutdown).
  public func release() {
    if alarm != nil {
      do throws(GPIOError) { try alarm!.set(.inactive) } catch { alarmErrors &+= 1 }
      alarmLevel = .inactive
    }
    if auxRelay != nil {
      do throws(GPIOError) { try auxRelay!.set(.inactive) } catch { alarmErrors &+= 1 }
      auxRelayLevel = .inactive
    }
  }

  public func doorStatus() -> DoorStatus {
    var s = DoorStatus(machine, alarm: alarmLevel, backend: backend)
    s.inputErrors = inputErrors
    s.resyncs = resyncs
    return s
  }

  /// STATUS and DOOR show the door.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) { status.door = doorStatus() }
}
