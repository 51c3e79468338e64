import ScanBase

/// A buzzer pattern: alternating on/off durations in milliseconds, starting with on.
public struct BuzzerPattern: Equatable, Sendable {
  public static let stepsMax = 16
  public var steps: InlineArray<16, UInt16>
  public var count: Int

  public init(_ durations: [Int]) {
    precondition(!durations.isEmpty && durations.count <= Self.stepsMax, "1 to 16 steps")
    steps = .init(repeating: 0)
    for (i, d) in durations.enumerated() { steps[i] = UInt16(clamping: d) }
    count = durations.count
  }
  public static func == (a: BuzzerPattern, b: BuzzerPattern) -> Bool {
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a.steps[i] != b.steps[i] { return false }
    return true
  }
  public static let grant = BuzzerPattern([120])
  public static let deny = BuzzerPattern([80, 80, 80, 80, 80])
  /// The pass is good: now the PIN (two short chirps).
  public static let pinPrompt = BuzzerPattern([40, 60, 40])
  public static let fault = BuzzerPattern([600, 200, 600])
  /// No sound (the buzzer-free mode's grant, deny and PIN prompt: `feedback.quiet`).
  public static let silent: BuzzerPattern = {
    var p = BuzzerPattern([0])
    p.count = 0
    return p
  }()

  /// `a`, a pause, then `b` (clipped to 16 steps): for the console's SELFTEST.
  public static func sequence(_ a: BuzzerPattern, pause: Int, _ b: BuzzerPattern) -> BuzzerPattern {
    var steps: [Int] = []
    for i in 0..<a.count { steps.append(Int(a.steps[i])) }
    if steps.isEmpty {
      steps = [0, pause]
    } else if steps.count % 2 == 1 {
      steps.append(pause)
    } else {
      steps[steps.count - 1] += pause
    }
    for i in 0..<b.count { steps.append(Int(b.steps[i])) }
    return BuzzerPattern(Array(steps.prefix(stepsMax)))
  }
  /// Total length in milliseconds.
  public var totalMilliseconds: Int {
    var t = 0
    for i in 0..<count { t += Int(steps[i]) }
    return t
  }
}

/// Actuation settings.
public struct ActuationSettings: Equatable, Sendable {
  /// The relay's hard cap: no pulse, however requested, holds it active longer than this.
  public static let relayPulseMillisecondsCap = 30_000
  /// After a relay period that ran into its cap, pulses are refused for this long.
  public static let relayRestMilliseconds = 1_000
  /// How long after its period's cap end the relay watchdog (`RelayGuard`) waits for the loop
  /// to have driven the relay inactive before it does so itself.
  public static let relayWatchdogMarginMilliseconds = 250
  /// An unlock window's hold (`Actuator.holdRelay`): each renewal keeps the relay active this
  /// long, and the owner renews it every `relayHoldRenewMilliseconds`. A loop that stops
  /// renewing (hung, or gone) loses the hold within one lease: the watchdog is armed to it.
  public static let relayHoldLeaseMilliseconds = 3_000
  public static let relayHoldRenewMilliseconds = 1_000
  public var relayPulseMilliseconds = 3_000
  public var relayPulseMillisecondsMax = 10_000
  public var grantPattern = BuzzerPattern.grant
  public var denyPattern = BuzzerPattern.deny
  public var faultPattern = BuzzerPattern.fault
  /// The two chirps that ask for the PIN after a good pass.
  public var pinPromptPattern = BuzzerPattern.pinPrompt
  public init() {}
}

/// The relay and buzzer timeline, computed against the monotonic clock (never slept).
///
/// The loop asks `levels(at:)` on every tick and drives the lines to what it returns. A relay
/// period (from the first pulse until the relay is next seen inactive) never lasts longer than
/// `relayPulseMillisecondsMax` (itself capped), however many pulses arrive; a period that ran
/// into the cap is followed by `relayRestMilliseconds` in which pulses are refused, so the
/// strike really releases.
public struct Actuator: Sendable {
  public let settings: ActuationSettings
  private var relayUntil = Instant(nanoseconds: 0)
  private var periodCapEnd: Instant? = nil
  private var restUntil = Instant(nanoseconds: 0)
  /// Whether an unlock window holds the relay (renewed leases, not a pulse).
  public private(set) var isHolding = false
  /// Pulses refused because the relay was resting after a capped period.
  public private(set) var refusedPulses: UInt64 = 0
  private var pattern = BuzzerPattern.grant
  private var patternStart: Instant? = nil

  public init(settings: ActuationSettings) {
    self.settings = settings
  }

  var relayCapMilliseconds: Int {
    min(settings.relayPulseMillisecondsMax, ActuationSettings.relayPulseMillisecondsCap)
  }

  /// Starts (or extends) a relay pulse of `milliseconds` (default: the configured pulse),
  /// clamped so the current relay period stays within the cap. Returns false when refused.
  @discardableResult
  public mutating func pulseRelay(at now: Instant, milliseconds: Int? = nil) -> Bool {
    if now < restUntil {
      refusedPulses &+= 1
      return false
    }
    let requested = max(1, min(milliseconds ?? settings.relayPulseMilliseconds, relayCapMilliseconds))
    if periodCapEnd == nil {
      periodCapEnd = now.adding(milliseconds: relayCapMilliseconds)
      relayUntil = now
    }
    guard let capEnd = periodCapEnd, now < capEnd else {
      refusedPulses &+= 1
      return false
    }
    relayUntil = min(max(relayUntil, now.adding(milliseconds: requested)), capEnd)
    // The relay's whole period never outlasts the hard cap, however many pulses extend it.
    assert(relayUntil <= capEnd && capEnd.nanoseconds - relayUntil.nanoseconds <= UInt64(relayCapMilliseconds) * 1_000_000)
    return true
  }

  /// Ends any relay pulse (and any hold) now.
  public mutating func releaseRelay() {
    periodCapEnd = nil
    relayUntil = Instant(nanoseconds: 0)
    isHolding = false
  }

  /// Holds the relay active for one more lease (`relayHoldLeaseMilliseconds` from `now`): an
  /// unlock window, renewed by its owner. The period's end moves with the lease, so the pulse
  /// cap does not cut the hold, and a hold that is not renewed ends at the lease's end (then
  /// rests like a capped period). Refused while the relay rests.
  @discardableResult
  public mutating func holdRelay(at now: Instant) -> Bool {
    if now < restUntil {
      refusedPulses &+= 1
      return false
    }
    let until = now.adding(milliseconds: ActuationSettings.relayHoldLeaseMilliseconds)
    if periodCapEnd == nil { relayUntil = now }
    periodCapEnd = max(periodCapEnd ?? until, until)
    relayUntil = max(relayUntil, until)
    isHolding = true
    return true
  }

  /// Ends a hold now (the window closed): the strike locks, a pulse in progress included.
  public mutating func endHold() {
    guard isHolding else { return }
    releaseRelay()
  }

  /// When the current relay period must end at the latest (nil: no period, or a fire release,
  /// which no cap ends: the relay watchdog is not armed for it).
  public var relayPeriodCapEnd: Instant? { fireRelease ? nil : periodCapEnd }

  /// The fire panel's release: the relay is held active, past the pulse cap, until it ends
  /// (`ScanEngine.setFireRelease`); pulses and holds meanwhile change nothing you can see.
  public var fireRelease = false

  /// The relay was driven inactive behind the actuator's back (the relay watchdog, after the
  /// period's cap): the period ends, and pulses rest as after any capped period.
  public mutating func relayForcedInactive(at now: Instant) {
    releaseRelay()
    restUntil = max(restUntil, now.adding(milliseconds: ActuationSettings.relayRestMilliseconds))
  }

  /// Milliseconds of rest left at `now` (pulses are refused until then), or nil.
  public func restRemainingMilliseconds(at now: Instant) -> Int? {
    now < restUntil ? Int((restUntil.nanoseconds - now.nanoseconds + 999_999) / 1_000_000) : nil
  }

  /// Whether the relay should be active at `now`.
  public func relayActive(at now: Instant) -> Bool { fireRelease || (periodCapEnd != nil && now < relayUntil) }

  /// The buzzer sounds steadily whenever no pattern plays (a panel holding its beeper wire on);
  /// a pattern played meanwhile is heard as itself, and the steady sound resumes after it.
  public var buzzerHeld = false

  /// Starts a buzzer pattern, replacing any running one.
  public mutating func play(_ pattern: BuzzerPattern, at now: Instant) {
    self.pattern = pattern
    patternStart = now
  }

  /// The level each line should have at `now`.
  public mutating func levels(at now: Instant) -> (relay: LineLevel, buzzer: LineLevel) {
    var relay = LineLevel.inactive
    if let capEnd = periodCapEnd {
      if now < relayUntil {
        relay = .active
      } else {
        if relayUntil >= capEnd { restUntil = now.adding(milliseconds: ActuationSettings.relayRestMilliseconds) }
        periodCapEnd = nil
        isHolding = false  // a lease that was not renewed
      }
    }
    var buzzer = LineLevel.inactive
    if let start = patternStart {
      var elapsed = now.milliseconds(since: start)
      var step = 0
      while step < pattern.count && elapsed >= Int(pattern.steps[step]) {
        elapsed -= Int(pattern.steps[step])
        step += 1
      }
      if step >= pattern.count { patternStart = nil } else if step % 2 == 0 { buzzer = .active }
    }
    if patternStart == nil && buzzerHeld { buzzer = .active }
    if fireRelease { relay = .active }
    return (relay, buzzer)
  }

  /// The next instant at which a level may change (nil when idle): the loop's timer deadline.
  public func nextChange(after now: Instant) -> Instant? {
    var next: Instant? = nil
    if relayActive(at: now) { next = relayUntil }
    if let start = patternStart {
      var t = start
      for i in 0..<pattern.count {
        t = t.adding(milliseconds: Int(pattern.steps[i]))
        if now < t {
          next = next.map { min($0, t) } ?? t
          break
        }
      }
    }
    return next
  }
}
