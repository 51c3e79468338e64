import ScanBase

/// The door's inputs: what a contact, an exit button and a tamper switch report once their
/// line's active-low setting is applied (`.active`: door open, button pressed, housing opened).
public enum DoorInput: Int, Sendable, CaseIterable {
  case contact = 0
  case exitButton = 1
  case tamper = 2

  public var name: String {
    switch self {
    case .contact: "contact"
    case .exitButton: "exit-button"
    case .tamper: "tamper"
    }
  }
}

/// Where the door is.
public enum DoorState: UInt8, Sendable, CaseIterable {
  /// Shut and locked.
  case closed = 0
  /// Shut, strike released.
  case unlocked = 1
  /// Opened after an unlock.
  case open = 2
  /// Opened after an unlock and left open longer than `heldOpenMilliseconds`.
  case heldOpen = 3
  /// Opened while locked.
  case forced = 4

  /// Whether the contact says open.
  public var isOpen: Bool { self == .open || self == .heldOpen || self == .forced }

  public var name: String {
    switch self {
    case .closed: "closed"
    case .unlocked: "unlocked"
    case .open: "open"
    case .heldOpen: "held-open"
    case .forced: "forced"
    }
  }
}

/// How the door is watched: timers, debounce, and what the inputs may do.
public struct DoorSettings: Equatable, Sendable {
  /// Whether a door is configured at all (no inputs: the reader only pulses the strike).
  public var enabled = false
  /// Open longer than this after an unlock: `door-held-open`, and the alarm line beeps until closed.
  public var heldOpenMilliseconds = 30_000
  /// A line's level counts once it has held this long after its last edge (the kernel's
  /// debounce replaces it where the chip offers one: set the line's own debounce to 0 then).
  public var debounceMilliseconds: DebounceTimes = [25, 25, 25]
  /// Drive the strike inactive as soon as the door has closed again (no tailgating on the rest
  /// of the pulse).
  public var relockOnClose = true
  /// A debounced press of the exit button releases the strike (off: the button only records).
  public var exitButtonUnlocks = true
  /// How long the alarm line sounds after a forced door (steady).
  public var forcedAlarmMilliseconds = 10_000
  /// The held-open beep on the alarm line: on, then off, repeated until the door closes.
  public var heldOpenBeepOnMilliseconds = 200
  public var heldOpenBeepOffMilliseconds = 800
  /// The alarm line sounds while the tamper input is active.
  public var tamperAlarm = true
  public init() {}
}

/// Debounce times per input (contact, exit button, tamper), in milliseconds.
public struct DebounceTimes: Equatable, Sendable, ExpressibleByArrayLiteral {
  public var contact: UInt16
  public var exitButton: UInt16
  public var tamper: UInt16
  public init(arrayLiteral values: UInt16...) {
    precondition(values.count == 3, "contact, exit button, tamper")
    contact = values[0]
    exitButton = values[1]
    tamper = values[2]
  }
  public subscript(_ index: Int) -> UInt16 {
    get { index == 0 ? contact : index == 1 ? exitButton : tamper }
    set {
      switch index {
      case 0: contact = newValue
      case 1: exitButton = newValue
      default: tamper = newValue
      }
    }
  }
}

/// A door transition (an event kind in the door range, 20–29, and its code).
public typealias DoorTransition = Transition

/// The door, free of I/O, on the monotonic clock: debounced inputs in, transitions and output
/// levels out.
///
/// The owner feeds it raw edges (with the kernel's timestamps), the strike's level as the engine
/// drove it (with why it was released), and the passing time; it takes the transitions out of a
/// fixed queue and drives the alarm line to `alarmLevel(at:)`. It asks for a strike pulse (exit
/// button) and for an early relock (door closed again) through two flags the owner takes.
/// Nothing allocates.
public struct DoorMachine: Sendable {
  public let settings: DoorSettings
  public private(set) var state = DoorState.closed
  public private(set) var strikeActive = false
  public private(set) var tamperActive = false
  /// A schedule's unlock window holds the strike: the door may stand open (held-open is not
  /// timed) and is not relocked when it closes.
  public private(set) var unlockWindow = false
  /// Contact, exit button, tamper, debounced (`DoorInput`'s order).
  private var inputs: DebouncedInputs
  private var openedAt = Instant(nanoseconds: 0)
  private var heldOpenSince: Instant? = nil
  private var forcedAlarmUntil = Instant(nanoseconds: 0)
  /// When the strike last changed level: an input edge read late (a loaded loop) may have
  /// happened before it, while the strike still had the other level.
  private var strikeChangedAt = Instant(nanoseconds: 0)
  /// The newest instant the machine has been advanced to.
  public private(set) var now: Instant
  /// The newest instant it has been asked to advance to: while settling, `now` steps through
  /// the past instants inputs settled at, this is when the machine learned of them.
  private var learnedAt = Instant(nanoseconds: 0)
  /// Raw edges seen, and transitions recorded, per kind of count.
  public private(set) var rawEdges: UInt64 = 0
  public private(set) var forcedCount: UInt64 = 0
  public private(set) var heldOpenCount: UInt64 = 0
  public private(set) var exitRequests: UInt64 = 0
  /// Transitions that did not fit the queue (the owner takes them every loop iteration).
  public var droppedTransitions: UInt64 { queue.dropped }
  /// Set when the exit button asks for the strike; the owner pulses it and clears this.
  public var wantsStrikePulse = false
  /// Set when the door closed while the strike was still released and `relockOnClose` holds.
  public var wantsRelock = false

  public static var queueCapacity: Int { TransitionQueue.capacity }
  private var queue = TransitionQueue()

  /// A machine whose inputs read `levels` (contact, exit button, tamper) at `now`, the strike locked.
  public init(
    settings: DoorSettings, now: Instant,
    levels: InlineArray<3, LineLevel> = .init(repeating: .inactive)
  ) {
    self.settings = settings
    self.now = now
    inputs = DebouncedInputs(count: 3, levels: { levels[$0] }, at: now)
    tamperActive = levels[DoorInput.tamper.rawValue] == .active
    if levels[DoorInput.contact.rawValue] == .active {
      // Open at start without an unlock: treated as forced only once it is seen opening; a door
      // found open is reported as open, its held-open timer running from now.
      state = .open
      openedAt = now
    }
  }

  /// The debounced level of `input`.
  public func level(_ input: DoorInput) -> LineLevel { inputs.level(input.rawValue) }

  // MARK: - Inputs

  /// A raw edge of `input` to `level` at `time` (a kernel timestamp). Chatter within the
  /// debounce time never reaches the state: only a level that holds counts.
  public mutating func edge(_ input: DoorInput, level: LineLevel, at time: Instant) {
    settle(upTo: time)  // an edge read late is in the past: `learn(at:)` says when it was read
    rawEdges &+= 1
    // The kernel's timestamp, even when the loop reads the edge late: a level's duration is
    // measured where it happened.
    inputs.edge(input.rawValue, level: level, at: time)
    if settings.debounceMilliseconds[input.rawValue] == 0 { settle(input, at: time) }
  }

  /// The strike went to `level` (the engine drove it); `reason` says why, for an unlock.
  public mutating func strike(_ level: LineLevel, reason: UnlockReason, at time: Instant) {
    advance(to: time)
    let active = level == .active
    guard active != strikeActive else { return }
    strikeActive = active
    strikeChangedAt = time
    if active {
      record(.doorUnlocked, code: reason.rawValue)
      if state == .closed { state = .unlocked }
    } else {
      record(.doorLocked, code: 0)
      if state == .unlocked { state = .closed }
    }
  }

  /// An unlock window began (`open`) or ended at `time`. A door standing open when it ends is
  /// timed for held-open from then; one held open when it begins stops beeping.
  public mutating func setUnlockWindow(_ open: Bool, at time: Instant) {
    advance(to: time)
    guard open != unlockWindow else { return }
    unlockWindow = open
    if open && state == .heldOpen {
      state = .open
      heldOpenSince = nil
    }
    if !open && state == .open { openedAt = time }
  }

  /// Moves time on to `time`: settles inputs whose level has held for their debounce time (at
  /// the instant it had), and runs the held-open and alarm timers.
  public mutating func advance(to time: Instant) {
    learn(at: time)
    settle(upTo: time)
  }

  /// The owner is reading at `time` (before it feeds the edges it read, which may be older): a
  /// transition they cause is learned of then. A forced door's alarm is timed from it.
  public mutating func learn(at time: Instant) {
    if time > learnedAt { learnedAt = time }
  }

  private mutating func settle(upTo time: Instant) {
    // Settle in time order, so two inputs settling in one step keep their order.
    while let next = nextSettle(), next.1 <= time {
      runTimers(to: next.1)
      settle(next.0, at: next.1)
    }
    runTimers(to: time)
  }

  /// The earliest pending settle: the input and its instant.
  private func nextSettle() -> (DoorInput, Instant)? {
    let debounce = settings.debounceMilliseconds
    guard let next = inputs.nextSettle(debounceMilliseconds: { Int(debounce[$0]) }), let input = DoorInput(rawValue: next.index)
    else { return nil }
    return (input, next.at)
  }

  private mutating func runTimers(to time: Instant) {
    if time > now { now = time }
    if state == .open && heldOpenSince == nil && !unlockWindow {
      let due = openedAt.adding(milliseconds: settings.heldOpenMilliseconds)
      if now >= due {
        state = .heldOpen
        heldOpenSince = due
        heldOpenCount &+= 1
        record(.doorHeldOpen, code: UInt16(clamping: settings.heldOpenMilliseconds / 1_000), at: due)
      }
    }
  }

  private mutating func settle(_ input: DoorInput, at time: Instant) {
    guard inputs.settle(input.rawValue) else { return }
    let active = inputs.level(input.rawValue) == .active
    switch input {
    case .contact: active ? doorOpened(at: time) : doorClosed(at: time)
    case .exitButton:
      guard active else { return }
      exitRequests &+= 1
      record(.exitRequest, code: 0, at: time)
      if settings.exitButtonUnlocks && !strikeActive && (state == .closed || state == .unlocked) {
        wantsStrikePulse = true
      }
    case .tamper:
      tamperActive = active
      record(.tamper, code: active ? 1 : 0, at: time)
    }
  }

  private mutating func doorOpened(at time: Instant) {
    openedAt = time
    heldOpenSince = nil
    // Opened before the strike locked again (its edge read after the lock): opened, not forced.
    let releasedThen = !strikeActive && time < strikeChangedAt
    if strikeActive || state == .unlocked || releasedThen {
      state = .open
      record(.doorOpened, code: 0, at: time)
    } else {
      state = .forced
      forcedCount &+= 1
      // Timed from when the machine learned of it (an edge read late, a loaded loop, would
      // otherwise cut the alarm short by the lateness); the event keeps the debounced instant.
      forcedAlarmUntil = max(time, learnedAt).adding(milliseconds: settings.forcedAlarmMilliseconds)
      record(.doorForced, code: 0, at: time)
    }
  }

  private mutating func doorClosed(at time: Instant) {
    guard state == .open || state == .heldOpen || state == .forced else { return }
    let seconds = time.milliseconds(since: openedAt) / 1_000
    record(.doorClosed, code: UInt16(clamping: seconds), at: time)
    heldOpenSince = nil
    state = strikeActive ? .unlocked : .closed
    if strikeActive && settings.relockOnClose && !unlockWindow { wantsRelock = true }
  }

  // MARK: - Outputs

  /// Takes the oldest transition not yet taken.
  public mutating func takeTransition() -> DoorTransition? {
    queue.take()
  }

  private mutating func record(_ kind: EventKind, code: UInt16, at time: Instant? = nil) {
    queue.append(DoorTransition(kind: kind, code: code, at: time ?? now))
  }

  /// The alarm line's level at `time`: steady after a forced door (for `forcedAlarmMilliseconds`)
  /// and while the tamper input is active, beeping while the door is held open.
  public func alarmLevel(at time: Instant) -> LineLevel {
    if time < forcedAlarmUntil { return .active }
    if tamperActive && settings.tamperAlarm { return .active }
    if state == .heldOpen, let since = heldOpenSince {
      let period = settings.heldOpenBeepOnMilliseconds + settings.heldOpenBeepOffMilliseconds
      guard period > 0 else { return .active }
      return time.milliseconds(since: since) % period < settings.heldOpenBeepOnMilliseconds ? .active : .inactive
    }
    return .inactive
  }

  /// The second relay's level at `time`: steady while any door alarm stands (forced, for
  /// `forcedAlarmMilliseconds`; held open, until closed; tamper, while active), for an intruder
  /// panel's zone input or a warning light.
  public func alertLevel(at time: Instant) -> LineLevel {
    time < forcedAlarmUntil || tamperActive || state == .heldOpen ? .active : .inactive
  }

  /// When the machine next needs `advance` without an input (a settle, a timer, an alarm edge).
  public func nextDeadline(after time: Instant) -> Instant? {
    // No local function capturing `next`: a debug build would box the captured variable.
    var next: Instant? = nextSettle()?.1
    var candidates = InlineArray<3, Instant?>(repeating: nil)
    if state == .open && !unlockWindow { candidates[0] = openedAt.adding(milliseconds: settings.heldOpenMilliseconds) }
    if time < forcedAlarmUntil { candidates[1] = forcedAlarmUntil }
    if state == .heldOpen, let since = heldOpenSince {
      let on = settings.heldOpenBeepOnMilliseconds, period = on + settings.heldOpenBeepOffMilliseconds
      if period > 0 {
        let phase = time.milliseconds(since: since) % period
        candidates[2] = time.adding(milliseconds: (phase < on ? on : period) - phase)
      }
    }
    for i in 0..<3 {
      guard let t = candidates[i], t > time else { continue }
      next = next.map { min($0, t) } ?? t
    }
    return next
  }
}
