import ScanBase

/// What the lamps say to the person at the reader.
public enum FeedbackSignal: UInt8, Sendable, CaseIterable {
  /// Nothing lit (no lamp wired, or `idle = "off"` while waiting).
  case off
  /// Waiting for a code: "show your code here" (the idle lamp, steady).
  case ready
  /// A grant, and while the strike or the turnstile is open: green, steady.
  case granted
  /// A denial: red, steady.
  case denied
  /// The pass is good, now the PIN: amber (green when no amber is wired), blinking at 2 Hz.
  case enterPin
  /// A lockdown stands: red, blinking at 1 Hz.
  case lockedDown
  /// The fire release stands (the door is free): green, blinking at 1 Hz.
  case fireRelease

  public var name: StaticString {
    switch self {
    case .off: "off"
    case .ready: "ready"
    case .granted: "granted"
    case .denied: "denied"
    case .enterPin: "enter-pin"
    case .lockedDown: "locked-down"
    case .fireRelease: "fire-release"
    }
  }
}

/// The lamps' levels at one moment.
public struct FeedbackLevels: Equatable, Sendable {
  public var green = LineLevel.inactive
  public var red = LineLevel.inactive
  public var amber = LineLevel.inactive
  public init(green: LineLevel = .inactive, red: LineLevel = .inactive, amber: LineLevel = .inactive) {
    self.green = green
    self.red = red
    self.amber = amber
  }
}

/// The lamps' state machine: it follows the reader's events (decisions, the strike's edges,
/// the turnstile, fire and lockdown) and says, for any moment, what is shown and each lamp's
/// level. Pure and allocation-free: the adapter feeds it the event ring and drives the lines.
///
/// What shows, first match wins: a decision's signal for its time (a grant also while the
/// strike is open), then the fire release, then a lockdown, then `ready`. A new decision
/// replaces the one shown. Blinking is by the monotonic clock, so two readers side by side
/// blink alike and a test knows each level at each instant.
public struct FeedbackLamps: Sendable {
  public let settings: FeedbackSettings
  private var shown = FeedbackSignal.ready
  private var shownUntil = Instant(nanoseconds: 0)
  private var openLines: UInt8 = 0  // bit 0: the strike's relay; bit 1: the turnstile
  public private(set) var fire = false
  public private(set) var lockdown = false
  /// Events read (for STATUS).
  public private(set) var eventsSeen: UInt64 = 0

  /// Lamps that start with the fire release or a lockdown standing (`fire`, `lockdown`): a
  /// lockdown latched before a restart is restored from its file without a new event, so the
  /// owner says what stands when the lamps are made.
  public init(settings: FeedbackSettings, fire: Bool = false, lockdown: Bool = false) {
    self.settings = settings
    self.fire = fire
    self.lockdown = lockdown
  }

  /// Takes in one of the reader's events.
  public mutating func observe(_ event: ScanEvent) {
    eventsSeen &+= 1
    let at = event.monotonic
    switch event.kind {
    case .decision:
      switch event.verdict {
      case .granted: show(.granted, at: at, for: settings.grantedMilliseconds)
      case .pinRequired: show(.enterPin, at: at, for: settings.pinMilliseconds)
      default: show(.denied, at: at, for: settings.deniedMilliseconds)
      }
    case .edge where event.code & 0xF0 == EdgeCode.relay:
      setOpen(bit: 1, event.code & 1 == 1)
    case .turnstileUnlocked: setOpen(bit: 2, true)
    case .turnstileLocked, .passage, .grantedNotPassed: setOpen(bit: 2, false)
    case .fireAlarm: fire = event.code & 1 == 1
    case .lockdown: lockdown = event.code & 1 == 1
    default: break
    }
  }

  /// What the lamps say at `now`.
  public func signal(at now: Instant) -> FeedbackSignal {
    if now < shownUntil { return shown }
    if openLines != 0 { return .granted }
    if fire { return .fireRelease }
    if lockdown { return .lockedDown }
    return settings.idle == .off ? .off : .ready
  }

  /// Each lamp's level at `now`.
  public func levels(at now: Instant) -> FeedbackLevels {
    let slow = Self.phase(now, halfPeriodMilliseconds: 500)
    let fast = Self.phase(now, halfPeriodMilliseconds: 250)
    switch signal(at: now) {
    case .off: return FeedbackLevels()
    case .ready:
      return settings.idle == .green ? FeedbackLevels(green: .active) : FeedbackLevels(amber: .active)
    case .granted: return FeedbackLevels(green: .active)
    case .denied: return FeedbackLevels(red: .active)
    case .enterPin:
      return settings.amberLine >= 0 || settings.greenLine < 0 ? FeedbackLevels(amber: fast) : FeedbackLevels(green: fast)
    case .lockedDown: return FeedbackLevels(red: slow)
    case .fireRelease: return FeedbackLevels(green: slow)
    }
  }

  /// When the levels next change on their own after `now` (a blink's edge, a signal's end);
  /// nil: only when an event comes.
  public func nextChange(after now: Instant) -> Instant? {
    let blink: Int64? =
      switch signal(at: now) {
      case .enterPin: 250
      case .lockedDown, .fireRelease: 500
      default: nil
      }
    var next: Instant? = now < shownUntil ? shownUntil : nil
    if let half = blink {
      let step = half * 1_000_000
      let edge = Instant(nanoseconds: (now.nanoseconds / UInt64(step) + 1) * UInt64(step))
      next = next.map { min($0, edge) } ?? edge
    }
    return next
  }

  private mutating func show(_ signal: FeedbackSignal, at: Instant, for milliseconds: Int) {
    shown = signal
    shownUntil = at.adding(milliseconds: milliseconds)
  }

  private mutating func setOpen(bit: UInt8, _ open: Bool) {
    if open { openLines |= bit } else { openLines &= ~bit }
  }

  /// On for the first half of each period, off for the second, counted from the clock's zero.
  private static func phase(_ now: Instant, halfPeriodMilliseconds: UInt64) -> LineLevel {
    (now.nanoseconds / (halfPeriodMilliseconds * 1_000_000)) % 2 == 0 ? .active : .inactive
  }
}
