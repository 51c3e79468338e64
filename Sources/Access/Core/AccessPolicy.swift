import ScanBase

/// A decision on one payload: the verdict, which rule decided, and (for the allow-list) the
/// entry that matched, for its label.
public struct AccessDecision: Equatable, Sendable {
  public var verdict: Verdict
  public var source: DecisionSource
  public var entry: Int?
  /// The card number a panel is sent for this pass (allow-list `card=`, or a signed
  /// credential's card claim), if it has one.
  public var card: CardNumber?
  public init(verdict: Verdict, source: DecisionSource, entry: Int? = nil, card: CardNumber? = nil) {
    self.verdict = verdict
    self.source = source
    self.entry = entry
    self.card = card
  }
  public static let unknown = AccessDecision(verdict: .deniedUnknown, source: .none)
}

/// The decision seam: payload (and its digest), wall time → decision. Every place that decides
/// (a scanned code, the console's CHECK, a snapshot's outlines) asks a policy, never a list
/// directly, so signed credentials, schedules and panel forwarding slot in here.
public protocol AccessPolicy: ~Copyable {
  /// `mode`: a scanned code admits (replay and single-use state change); CHECK and snapshots inspect.
  func decide(_ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds: Int64, mode: DecideMode) -> AccessDecision
}

extension AllowList: AccessPolicy {
  public func decide(
    _ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds now: Int64, mode: DecideMode
  )
    -> AccessDecision
  {
    let (verdict, entry) = decide(digest, nowUnixSeconds: now)
    return AccessDecision(verdict: verdict, source: entry == nil ? .none : .allowList, entry: entry, card: entry.flatMap { card($0) })
  }
}

/// The reader's policies in the order they are asked: the allow-list, then signed
/// credentials. A payload one policy does not know falls through to the next; the first that
/// knows it decides, and the decision names it.
public struct AccessPolicies: AccessPolicy, ~Copyable {
  public var allowList: AllowList
  /// Access windows: an allow-list grant whose entry names a schedule is denied outside it
  /// (nil: no schedule file; an entry naming a schedule is then denied, fail-secure), and a
  /// signed pass whose zones name schedules is admitted only inside one of them.
  public var schedules: ScheduleStore? = nil {
    didSet { credentials?.schedules = schedules }
  }
  /// Signed passes (nil when no trust file is configured).
  public var credentials: CredentialVerifier? {
    didSet {
      credentials?.schedules = schedules
      credentials?.time = time
      credentials?.lockdown = lockdown
      credentials?.pinAvailable = pinAvailable
    }
  }
  /// The one time policy every check here judges at (shared with the credentials' verifier).
  public var time = TrustedTime() {
    didSet { credentials?.time = time }
  }

  /// The fleet's `deny-all-but-static` offline policy in force: only allow-list entries marked
  /// `static=yes` grant; signed passes are refused untouched (no step or single use spent), since
  /// their revocations may not have reached an offline reader.
  public var staticOnly = false
  /// A lockdown is in force (docs/turnstiles.md): only allow-list entries marked `lockdown=yes`
  /// and signed passes with the lockdown claim grant; the others are `denied-lockdown`, a signed
  /// pass refused before any rotating step or single use is spent.
  public var lockdown = false {
    didSet { credentials?.lockdown = lockdown }
  }
  /// Whether this reader asks for a PIN after the pass and checks it (a keypad is the engine's
  /// second factor). False (no keypad, or panel mode where the panel takes the keys): a
  /// credential that needs a PIN (`pin=`, a pass's PIN claim) is `denied-pin-unavailable`, never
  /// granted without it (docs/credentials.md, "Every flag on every reader").
  public var pinAvailable = false {
    didSet { credentials?.pinAvailable = pinAvailable }
  }

  public init(allowList: consuming AllowList, credentials: CredentialVerifier? = nil) {
    self.allowList = allowList
    self.credentials = credentials
  }

  public func decide(
    _ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds now: Int64, mode: DecideMode
  )
    -> AccessDecision
  {
    // Entry windows judge at the later of the clock and its floor; a schedule (a time of day)
    // is closed while the clock reads behind its floor, since the time of day is then unknown.
    let judged = time.judged(now)
    var d = allowList.decide(payload, digest: digest, nowUnixSeconds: judged, mode: mode)
    if d.verdict.isGranted, let entry = d.entry {
      let key = allowList.scheduleKey(entry)
      if key != 0 {
        d.verdict = time.isBehind(now) ? .deniedOutsideSchedule : schedules?.check(key: key, nowUnixSeconds: judged) ?? .deniedOutsideSchedule
      }
    }
    if staticOnly && d.verdict.isGranted, let entry = d.entry, !allowList.isStatic(entry) { d.verdict = .deniedOffline }
    if lockdown && d.verdict.isGranted, let entry = d.entry, !allowList.isLockdown(entry) { d.verdict = .deniedLockdown }
    if !pinAvailable && d.verdict.isGranted, let entry = d.entry, allowList.hasPin(entry) { d.verdict = .deniedPinUnavailable }
    if d.source != .none { return d }
    if staticOnly && credentials != nil && CredentialText.isCredential(payload) {
      return AccessDecision(verdict: .deniedOffline, source: .credential)
    }
    if let credentials, let c = credentials.decide(payload, nowUnixSeconds: now, mode: mode) { return c }
    return .unknown
  }

  /// Copies the label of the rule that made `decision` (the allow-list entry's, or the last
  /// verified credential's).
  public func copyLabel(_ decision: AccessDecision, into buffer: UnsafeMutableRawBufferPointer) -> Int {
    switch decision.source {
    case .allowList: decision.entry.map { allowList.copyLabel($0, into: buffer) } ?? 0
    case .credential: credentials?.copyLabel(into: buffer) ?? 0
    case .none: 0
    }
  }

  /// Whether the rule that made `decision` needs a PIN after the pass (nothing is opened).
  public func needsPin(_ decision: AccessDecision) -> Bool {
    switch decision.source {
    case .allowList: decision.entry.map { allowList.hasPin($0) } ?? false
    case .credential: credentials.map { $0.lastVerified && $0.last.hasPin } ?? false
    case .none: false
    }
  }

  /// The PIN verifier of the rule that made `decision`: an allow-list entry's `pin=`, or a signed
  /// pass's sealed PIN claim (opened with the site key); nil when it has none. `hasPin` says a
  /// signed pass carries one even when it cannot be opened (the caller then refuses).
  public func pinVerifier(_ decision: AccessDecision) -> (verifier: PinVerifier?, hasPin: Bool) {
    switch decision.source {
    case .allowList:
      let pin = decision.entry.flatMap { allowList.pin($0) }
      return (pin.map { PinVerifier(mac: $0) }, pin != nil)
    case .credential:
      guard let credentials, credentials.lastVerified, credentials.last.hasPin else { return (nil, false) }
      return (credentials.pinVerifier(), true)
    case .none: return (nil, false)
    }
  }
}
