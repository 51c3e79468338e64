import ScanBase

/// The turnstile's inputs, once their lines' active-low settings are applied: a direction's
/// passage sensor (`.active` when one rotation that way completes) and the turnstile's own alarm.
public enum TurnstileInput: Int, Sendable, CaseIterable {
  case entryPassage = 0
  case exitPassage = 1
  case alarm = 2

  public var name: String {
    switch self {
    case .entryPassage: "entry-passage"
    case .exitPassage: "exit-passage"
    case .alarm: "alarm"
    }
  }
}

/// A turnstile transition, with the grant's ticket where one is meant.
public typealias TurnstileTransition = Transition

/// The turnstile, free of I/O, on the monotonic clock: grants and debounced sensor edges in,
/// transitions and output levels out. One passage per grant, per direction.
///
/// Each direction keeps a queue of waiting grants. The head grant's passage timer starts when it
/// becomes the head; the direction's passage (the debounced rising edge of its sensor) ends the
/// head grant, and the timeout ends it as `granted-not-passed`. `turnstile-unlocked` and
/// `turnstile-locked` follow whether a direction has grants waiting (or is free), in both
/// wirings: with `pulse` wiring they are the logical state, not the pulses on the line.
/// Nothing allocates after init.
public struct TurnstileMachine: Sendable {
  public let settings: TurnstileSettings
  /// The most grants a direction can queue (`grantsQueuedMax` is clamped to 1...queueMax).
  public static let queueMax = 8
  public static var queueCapacity: Int { TransitionQueue.capacity }
  /// Fire release: both directions free.
  public private(set) var free = false
  /// The newest instant the machine has been advanced to.
  public private(set) var now: Instant
  private var learnedAt = Instant(nanoseconds: 0)

  /// Entry passage, exit passage, alarm, debounced (`TurnstileInput`'s order).
  private var inputs: DebouncedInputs

  /// Per direction: the waiting grants' tickets (a ring), its head and count, and when the head
  /// grant's passage timer started.
  private var tickets = InlineArray<16, UInt32>(repeating: 0)  // direction d: 8 * d ..< 8 * d + 8
  private var grantHead = InlineArray<2, Int>(repeating: 0)
  private var grantCount = InlineArray<2, Int>(repeating: 0)
  private var headSince = InlineArray<2, Instant>(repeating: Instant(nanoseconds: 0))
  /// Per direction (`pulse` wiring): a series of `pulseCount` pulses from `pulseStart`, one every
  /// `pulseMilliseconds + pulseGapMilliseconds`.
  private var pulseStart = InlineArray<2, Instant>(repeating: Instant(nanoseconds: 0))
  private var pulseCount = InlineArray<2, UInt64>(repeating: 0)
  private var alarmUntil = Instant(nanoseconds: 0)

  /// Counts.
  public private(set) var rawEdges: UInt64 = 0
  private var passages = InlineArray<2, UInt64>(repeating: 0)
  public private(set) var grantedNotPassedCount: UInt64 = 0
  public private(set) var forcedCount: UInt64 = 0
  /// Transitions that did not fit the queue (the owner takes them every loop iteration).
  public var droppedTransitions: UInt64 { queue.dropped }

  private var queue = TransitionQueue()

  /// A machine whose inputs read `levels` (entry passage, exit passage, alarm) at `now`, both
  /// directions locked. A sensor found active is not a passage: only its rising edge is.
  public init(
    settings: TurnstileSettings, now: Instant, levels: InlineArray<3, LineLevel> = .init(repeating: .inactive)
  ) {
    self.settings = settings
    self.now = now
    inputs = DebouncedInputs(count: 3, levels: { levels[$0] }, at: now)
  }

  private var queuedMax: Int { min(max(settings.grantsQueuedMax, 1), Self.queueMax) }

  /// The debounced level of `input`.
  public func level(_ input: TurnstileInput) -> LineLevel { inputs.level(input.rawValue) }
  /// Grants waiting in `direction`.
  public func waiting(_ direction: PassageDirection) -> Int { grantCount[Int(direction.rawValue)] }
  /// Passages counted in `direction` (granted and free ones; forced rotations are `forcedCount`).
  public func passageCount(_ direction: PassageDirection) -> UInt64 { passages[Int(direction.rawValue)] }

  // MARK: - Inputs

  /// A grant for `direction`; `ticket` (non-zero, chosen by the owner) comes back on the
  /// `passage` or `granted-not-passed` transition it ends in. false: that direction already has
  /// `grantsQueuedMax` grants waiting (nothing changes; the owner denies). While free the grant is
  /// accepted and dropped (true): the passage goes through free, reported with ticket 0.
  public mutating func grant(_ direction: PassageDirection, ticket: UInt32, at time: Instant) -> Bool {
    advance(to: time)
    if free { return true }
    let d = Int(direction.rawValue)
    guard grantCount[d] < queuedMax else { return false }
    tickets[d * Self.queueMax + (grantHead[d] + grantCount[d]) % Self.queueMax] = ticket
    grantCount[d] += 1
    if grantCount[d] == 1 {
      headSince[d] = time
      record(.turnstileUnlocked, code: PassageCode.code(direction, .grant), at: time)
    }
    if settings.wiring == .pulse {
      let period = pulsePeriodNanoseconds
      let seriesEnd = pulseStart[d].nanoseconds &+ pulseCount[d] &* period
      if pulseCount[d] == 0 || time.nanoseconds >= seriesEnd {
        pulseStart[d] = time
        pulseCount[d] = 1
      } else {
        pulseCount[d] += 1  // after the last one's pulse and gap
      }
    }
    return true
  }

  /// A raw edge of `input` to `level` at `time` (a kernel timestamp). Chatter within the debounce
  /// time never reaches the state: only a level that holds counts (0: edges count as they come).
  public mutating func edge(_ input: TurnstileInput, level: LineLevel, at time: Instant) {
    settle(upTo: time)  // an edge read late is in the past: `learn(at:)` says when it was read
    rawEdges &+= 1
    inputs.edge(input.rawValue, level: level, at: time)
    if settings.debounceMilliseconds == 0 { settle(input, at: time) }
  }

  /// The owner is reading at `time` (before it feeds the edges it read, which may be older): an
  /// alarm they cause is timed from then, not cut short by the lateness.
  public mutating func learn(at time: Instant) {
    if time > learnedAt { learnedAt = time }
  }

  /// Moves time on to `time`: settles inputs whose level has held for the debounce time (at the
  /// instant it had) and runs the passage timers.
  public mutating func advance(to time: Instant) {
    learn(at: time)
    settle(upTo: time)
  }

  /// Fire release. While free both directions' outputs are active, in either wiring: with `pulse`
  /// wiring the line is held, not pulsed (a controller's "free" input is a held line: wire the
  /// output there). No timers run; a rotation is a `passage` (reason fire, ticket 0), never
  /// forced. Waiting grants are cleared without a transition (their passages go through free).
  /// Leaving free relocks both directions.
  public mutating func setFree(_ free: Bool, at time: Instant) {
    advance(to: time)
    guard free != self.free else { return }
    self.free = free
    for d in 0..<2 {
      let direction = PassageDirection(rawValue: UInt8(d)) ?? .entry
      if free {
        if grantCount[d] == 0 { record(.turnstileUnlocked, code: PassageCode.code(direction, .fire), at: time) }
        grantCount[d] = 0
        grantHead[d] = 0
        pulseCount[d] = 0
      } else {
        record(.turnstileLocked, code: PassageCode.code(direction, .fire), at: time)
      }
    }
  }

  private mutating func settle(upTo time: Instant) {
    while let next = nextSettle(), next.1 <= time {
      runTimers(to: next.1)
      settle(next.0, at: next.1)
    }
    runTimers(to: time)
  }

  private func nextSettle() -> (TurnstileInput, Instant)? {
    let debounce = Int(settings.debounceMilliseconds)
    guard let next = inputs.nextSettle(debounceMilliseconds: { _ in debounce }), let input = TurnstileInput(rawValue: next.index)
    else { return nil }
    return (input, next.at)
  }

  private var timeout: Int { settings.passageTimeoutMilliseconds }

  private mutating func runTimers(to time: Instant) {
    if time > now { now = time }
    guard !free else { return }
    for d in 0..<2 {
      // Each head grant times out in turn; the next one's timer starts when the previous ended.
      while grantCount[d] > 0 {
        let due = headSince[d].adding(milliseconds: timeout)
        guard now >= due else { break }
        let ticket = popGrant(d, at: due)
        grantedNotPassedCount &+= 1
        let direction = PassageDirection(rawValue: UInt8(d)) ?? .entry
        record(.grantedNotPassed, code: PassageCode.code(direction, .grant), at: due, ticket: ticket)
        if grantCount[d] == 0 { record(.turnstileLocked, code: PassageCode.code(direction), at: due) }
      }
    }
  }

  /// Removes the head grant of direction `d` at `time`, starting the next one's timer.
  private mutating func popGrant(_ d: Int, at time: Instant) -> UInt32 {
    let ticket = tickets[d * Self.queueMax + grantHead[d]]
    grantHead[d] = (grantHead[d] + 1) % Self.queueMax
    grantCount[d] -= 1
    headSince[d] = time
    return ticket
  }

  private mutating func settle(_ input: TurnstileInput, at time: Instant) {
    guard inputs.settle(input.rawValue), inputs.level(input.rawValue) == .active else { return }
    switch input {
    case .entryPassage: passage(.entry, at: time)
    case .exitPassage: passage(.exit, at: time)
    case .alarm:
      // The turnstile's own alarm names no direction: reported as entry.
      forced(PassageCode.code(.entry, .alarmInput), at: time)
    }
  }

  private mutating func passage(_ direction: PassageDirection, at time: Instant) {
    let d = Int(direction.rawValue)
    if free {
      passages[d] &+= 1
      record(.passage, code: PassageCode.code(direction, .fire), at: time)
    } else if grantCount[d] > 0 {
      passages[d] &+= 1
      let ticket = popGrant(d, at: time)
      record(.passage, code: PassageCode.code(direction, .grant), at: time, ticket: ticket)
      if grantCount[d] == 0 { record(.turnstileLocked, code: PassageCode.code(direction), at: time) }
    } else {
      forced(PassageCode.code(direction, .noGrant), at: time)
    }
  }

  private mutating func forced(_ code: UInt16, at time: Instant) {
    forcedCount &+= 1
    // Timed from when the machine learned of it; the event keeps the debounced instant.
    let until = max(time, learnedAt).adding(milliseconds: settings.forcedAlarmMilliseconds)
    if until > alarmUntil { alarmUntil = until }
    record(.turnstileForced, code: code, at: time)
  }

  // MARK: - Outputs

  /// Takes the oldest transition not yet taken.
  public mutating func takeTransition() -> TurnstileTransition? {
    queue.take()
  }

  private mutating func record(_ kind: EventKind, code: UInt16, at time: Instant, ticket: UInt32 = 0) {
    queue.append(TurnstileTransition(kind: kind, code: code, at: time, ticket: ticket))
  }

  private var pulsePeriodNanoseconds: UInt64 {
    UInt64(max(0, settings.pulseMilliseconds) + max(0, settings.pulseGapMilliseconds)) * 1_000_000
  }

  /// The level `direction`'s output should have at `time`: `held`, active while a grant waits;
  /// `pulse`, one pulse per grant, queued ones after a gap; either, active while free.
  public func outputLevel(_ direction: PassageDirection, at time: Instant) -> LineLevel {
    if free { return .active }
    let d = Int(direction.rawValue)
    if settings.wiring == .held { return grantCount[d] > 0 ? .active : .inactive }
    guard pulseCount[d] > 0, time >= pulseStart[d] else { return .inactive }
    let since = time.nanoseconds - pulseStart[d].nanoseconds, period = pulsePeriodNanoseconds
    guard period > 0, since / period < pulseCount[d] else { return .inactive }
    return since % period < UInt64(max(0, settings.pulseMilliseconds)) * 1_000_000 ? .active : .inactive
  }

  /// The alarm line's level at `time`: steady for `forcedAlarmMilliseconds` after a forced
  /// rotation or the alarm input.
  public func alarmLevel(at time: Instant) -> LineLevel { time < alarmUntil ? .active : .inactive }

  /// When the machine next needs `advance` without an input (a settle, a passage timeout, the
  /// alarm's end, a pulse edge).
  public func nextDeadline(after time: Instant) -> Instant? {
    var next: Instant? = nextSettle()?.1
    var candidates = InlineArray<5, Instant?>(repeating: nil)
    if time < alarmUntil { candidates[0] = alarmUntil }
    if !free {
      for d in 0..<2 {
        if grantCount[d] > 0 { candidates[1 + d] = headSince[d].adding(milliseconds: timeout) }
        if settings.wiring == .pulse && pulseCount[d] > 0 { candidates[3 + d] = nextPulseEdge(d, after: time) }
      }
    }
    for i in 0..<5 {
      guard let t = candidates[i], t > time else { continue }
      next = next.map { min($0, t) } ?? t
    }
    return next
  }

  private func nextPulseEdge(_ d: Int, after time: Instant) -> Instant? {
    let start = pulseStart[d].nanoseconds, period = pulsePeriodNanoseconds
    if time.nanoseconds < start { return pulseStart[d] }
    guard period > 0 else { return nil }
    let index = (time.nanoseconds - start) / period
    guard index < pulseCount[d] else { return nil }
    let pulse = UInt64(max(0, settings.pulseMilliseconds)) * 1_000_000
    let phase = (time.nanoseconds - start) % period
    if phase < pulse { return Instant(nanoseconds: start + index * period + pulse) }
    return index + 1 < pulseCount[d] ? Instant(nanoseconds: start + (index + 1) * period) : nil
  }
}
