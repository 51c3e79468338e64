import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform

/// The emergencies on the loop: a poll participant that reads the fire and lockdown inputs'
/// edge events (libgpiod, or simulated lines), runs `EmergencyState`, records its transitions in
/// the ring (console WATCH, journal, audit log, fleet), keeps a console or fleet lockdown in a
/// durable latch file (written and synced before the lockdown takes effect or is lifted, so a
/// restart neither lifts nor loses it), and asks the loop for the fire release and the lockdown
/// through `LoopRequests`. Runs on the loop's thread; nothing allocates per edge.
public final class EmergencyController: PollParticipant {
  public private(set) var state: EmergencyState
  /// Fire, lockdown (`EmergencyInput`'s order).
  private let lines: InputLines
  private let ring: EventRing
  private let wall: any WallClock
  private let latchFile: SlotFile?
  /// Why a lockdown could not be kept durably (STATUS), or nil.
  public private(set) var problem: String? = nil
  public var inputErrors: UInt64 { lines.errors }
  public var resyncs: UInt64 { lines.resyncs }
  /// What the loop was last asked to apply (nil: not yet asked).
  private var appliedFire: Bool? = nil
  private var appliedLockdown: Bool? = nil

  /// The emergencies on `fire` and `lockdown` (nil: not wired), the latch kept at `latchPath`
  /// (nil: no state directory; a console lockdown then lasts until a restart, said on STATUS).
  /// A latch file that cannot be read is a problem on STATUS, and the reader starts locked down
  /// (fail-secure: a lockdown it cannot rule out is in force until an operator lifts it).
  public init(
    settings: EmergencySettings, ring: EventRing, wall: any WallClock, now: Instant,
    fire: (any InputLine)?, lockdown: (any InputLine)?, latchPath: String?
  ) {
    let lines = InputLines([fire, lockdown])
    self.lines = lines
    var levels = InlineArray<2, LineLevel>(repeating: .inactive)
    for i in 0..<2 { levels[i] = lines.levels[i] }
    var latch = LockdownLatch()
    var file: SlotFile? = nil
    var problem: String? = nil
    if let latchPath {
      do {
        var damaged = false
        file = try SlotFile(path: latchPath, slotBytes: LockdownLatch.encodedBytes, slotsMax: 1, reservingSlots: 1) { _, bytes in
          if let l = LockdownLatch(decoding: bytes) { latch = l } else { damaged = true }
        }
        if damaged {
          problem = "\(latchPath): damaged; locked down until an operator lifts it"
          latch = LockdownLatch(authority: .console, who: UnsafeRawBufferPointer(start: nil, count: 0), sinceUnixSeconds: wall.unixSeconds())
        }
      } catch {
        problem = "\(error); locked down until an operator lifts it"
        latch = LockdownLatch(authority: .console, who: UnsafeRawBufferPointer(start: nil, count: 0), sinceUnixSeconds: wall.unixSeconds())
      }
    }
    latchFile = file
    self.problem = problem
    if let problem { writeStandardError("scangate: lockdown latch: \(problem)\n") }  // the journal too, not only STATUS
    state = EmergencyState(settings: settings, now: now, levels: levels, latch: latch, unixSeconds: wall.unixSeconds())
    self.ring = ring
    self.wall = wall
  }

  public var pollCapacity: Int { 2 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    state.advance(to: now)
    publish(now: now)
    var next = state.nextDeadline(after: now)
    lines.prepare(poll, now: now, next: &next)
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    state.unixSeconds = wall.unixSeconds()
    lines.service(poll, now: now) { i, level, at in state.edge(EmergencyInput(rawValue: i)!, level: level, at: at) }
    state.advance(to: now)
    publish(now: now)
    if appliedFire != state.fireActive {
      appliedFire = state.fireActive
      requests.post(.fireRelease(state.fireActive))
    }
    if appliedLockdown != state.grantsRestricted {
      appliedLockdown = state.grantsRestricted
      requests.post(.lockdown(state.grantsRestricted))
    }
  }

  /// Records the state's transitions in the ring (a lockdown's with who latched it), and keeps
  /// the latch file in step with a lockdown the input latched or lifted.
  private func publish(now: Instant) {
    let wallNow = wall.unixNanoseconds()
    while let t = state.takeTransition() {
      var e = ScanEvent(t.kind, code: t.code, at: t.at, seenAt: now, wallNow: wallNow)
      if t.kind == .lockdown { state.latch.withWho { e.setPayload($0) } }
      ring.append(e)
    }
    storeState()
  }

  /// Fire and lockdown as they are now, for the fleet's state topic (`StateFlags`), from the
  /// start (the latch was read when the controller was made); nil: no one reads it.
  public var stateGauge: SharedGauge? = nil {
    didSet { storeState() }
  }

  private func storeState() {
    guard let stateGauge else { return }
    var flags = StateFlags()
    flags.set(StateFlags.fire, state.fireActive)
    flags.set(StateFlags.lockdown, state.latch.isActive)
    stateGauge.store(flags.raw)
  }

  /// Writes the latch durably; false when it could not be (the caller keeps the old state).
  private func persist(_ latch: LockdownLatch) -> Bool {
    guard let latchFile else { return true }
    return latchFile.write(0) { latch.encode(into: $0) }
  }

  /// LOCKDOWN ON/OFF from the console or the fleet: the latch is durable before it changes.
  public func perform(_ command: OperatorCommand) -> OperatorReply? {
    guard case .action(let action, let authority, let who) = command else { return nil }
    let now = state.now
    switch action {
    case .lockdownOn:
      if let held = state.latch.authority { return .action(.alreadyLatched(held)) }
      let unix = wall.unixSeconds()
      let latch = who.withUnsafeBytes { LockdownLatch(authority: authority, who: $0, sinceUnixSeconds: unix) }
      guard persist(latch) else { return .action(.notDurable) }
      _ = who.withUnsafeBytes { state.latch(by: authority, who: $0, unixSeconds: unix, at: now) }
      publish(now: now)
      return .action(.latched)
    case .lockdownOff:
      guard let held = state.latch.authority else { return .action(.notLatched) }
      guard held == authority else { return .action(.heldBy(held)) }
      guard persist(LockdownLatch()) else { return .action(.notDurable) }
      _ = state.clear(by: authority, at: now)
      problem = nil
      publish(now: now)
      return .action(.cleared)
    default:
      return nil
    }
  }

  /// STATUS and LOCKDOWN: `fire inactive, lockdown on by console (uid 0) since …`.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    var line = "fire " + (state.fireActive ? "ACTIVE (every strike and turnstile released)" : "inactive")
    if let by = state.latch.authority {
      line += ", lockdown ON by " + by.name
      let who = state.latch.withWho { String(decoding: $0, as: UTF8.self) }
      if !who.isEmpty { line += " (" + who + ")" }
      line += " since " + RFC3339.format(state.latch.sinceUnixSeconds)
      line += state.fireActive ? " (overridden by the fire release)" : ": only credentials marked for it grant"
    } else {
      line += ", lockdown off"
    }
    if !state.settings.exitDuringLockdown { line += "; exit buttons held during lockdown" }
    if latchFile == nil { line += "; no state directory: a lockdown lasts until a restart" }
    if let problem { line += "; FAULT " + problem }
    if inputErrors > 0 { line += "; \(inputErrors) input errors" }
    status.sections.append(StatusSection("emergency", line))
  }
}
