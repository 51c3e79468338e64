import ScanAccess
import ScanBase

/// The product's heart, free of I/O: frame → decode → presence → decision → actuation →
/// event. The Linux loop (and the simulator) own the devices' file descriptors and call
/// `process` for each frame and `tick` whenever the actuator's next deadline passes.
///
/// Generic over the seams so every call is statically dispatched; nothing in `process` or
/// `tick` allocates.
public struct ScanEngine<
  Decoder: CodeDecoder & ~Copyable, Relay: OutputLine & ~Copyable, Buzzer: OutputLine & ~Copyable,
  Clock: MonotonicClock, Wall: WallClock, Digester: PayloadDigester
>: ~Copyable {
  public var pipeline: DecodePipeline<Decoder>
  public var results: DecodeResults
  public var presence: PresenceTracker
  public var actuator: Actuator
  /// Every decision goes through here (the decision seam).
  public var policy: AccessPolicies
  /// The allow-list policy (loaded and reloaded by the owner).
  public var allowList: AllowList {
    _read { yield policy.allowList }
    _modify { yield &policy.allowList }
  }
  public internal(set) var relay: Relay
  public internal(set) var buzzer: Buzzer
  public internal(set) var relayLevel = LineLevel.inactive
  /// Holds the relay's cap when the loop does not (nil: nothing but `tick` does). Set by the
  /// owner before the first pulse.
  public var relayGuard: (any RelayGuard)? = nil
  /// What a grant does on this reader, chosen once at startup (the configuration allows one).
  public var outcome = GrantOutcome.strike
  /// A PIN after the pass (nil: no PIN can be asked for, so a credential that needs one is
  /// `denied-pin-unavailable`; the others grant at once).
  public var secondFactor: (any SecondFactor)? = nil {
    didSet { policy.pinAvailable = secondFactor != nil }
  }
  /// The grant waiting for its second factor, and the id the last one was asked under.
  private var pendingGrant: PendingGrant? = nil
  private var secondFactorSequence: UInt64 = 0
  var relayGuardArmed = false
  public internal(set) var buzzerLevel = LineLevel.inactive
  public var stats = ScanStats()
  public let events: EventRing
  public let clock: Clock
  public let wall: Wall
  public let digester: Digester
  /// Keys the tag each decision and "left" event carries (nil: events carry no tag). Set by
  /// the owner before the first frame; the payload's SHA-256 never leaves the engine.
  public var tagger: (any PayloadTagger)? = nil
  public let settings: EngineSettings
  /// Capture time of the frame whose decision is waiting for its first edge.
  var pendingEdgeFrom: Instant? = nil
  /// The last decision, for STATUS and snapshots.
  public private(set) var lastDecision: ScanEvent? = nil
  /// The SHA-256 of the last decision's payload (the event keeps at most 64 bytes of it), for
  /// the console's ENROL LAST. Never shown: only its keyed tag leaves the reader.
  package private(set) var lastDecisionDigest = Digest.zero
  /// The newest codes denied as unknown (ENROL CANDIDATES).
  public private(set) var enrolCandidates = EnrolCandidates()
  /// Exposure of a recent frame (sampled every 16 frames).
  public private(set) var exposure = ExposureMetrics()
  /// Size and sharpness of the last code decided on (aiming hints).
  public private(set) var lastCodeGeometry = CodeGeometry()
  /// The aiming aid's frame: filled from the next frame when `captureSnapshot` is set.
  public let snapshot: SnapshotBuffer
  public var captureSnapshot = false
  /// Set when `snapshot` holds a frame captured since the request; the owner clears it.
  public var snapshotCaptured = false

  public init(
    settings: EngineSettings, decoder: consuming Decoder, relay: consuming Relay, buzzer: consuming Buzzer,
    clock: Clock, wall: Wall, digester: Digester, events: EventRing, maxWidth: Int, maxHeight: Int
  ) {
    self.settings = settings
    pipeline = DecodePipeline(decoder: decoder, settings: settings.decode, maxWidth: maxWidth, maxHeight: maxHeight)
    results = DecodeResults(capacity: settings.resultsCapacity, payloadBytesMax: settings.payloadBytesMax)
    presence = PresenceTracker(settings: settings.presence, capacity: settings.presenceSlots)
    actuator = Actuator(settings: settings.actuation)
    policy = AccessPolicies(allowList: AllowList(limits: settings.allowList))
    self.relay = relay
    self.buzzer = buzzer
    self.clock = clock
    self.wall = wall
    self.digester = digester
    self.events = events
    snapshot = SnapshotBuffer(maxWidth: maxWidth, maxHeight: maxHeight)
    snapshot.region = settings.decode.region
    stats.decodeBudgetMicroseconds = UInt64(max(0, settings.decode.budgetMicroseconds))
  }

  /// Runs one frame through the pipeline and acts on what it finds.
  public mutating func process(_ frame: LumaFrame) {
    beginFrame(frame)
    let decodeStart = clock.now()
    pipeline.decode(frame, into: &results, clock: clock)
    completeFrame(frame, report: pipeline.lastFrame, decodeStarted: decodeStart, decoded: clock.now())
  }

  /// The first half of `process` when the decode runs elsewhere (a worker process): the frame
  /// is counted, its exposure sampled. `completeFrame` follows when (if) the results come back.
  public mutating func beginFrame(_ frame: LumaFrame) {
    stats.frames &+= 1
    if stats.frames & 15 == 1 { exposure = ExposureMetrics(frame) }
  }

  /// The decision half of `process`: `results` holds what the decode of `frame` found (started at
  /// `decodeStarted`, back at `decoded`), `report` what the strategy did. `elsewhere`: the decode
  /// ran in a worker, which never happens here again (a snapshot's every-view decode is asked of
  /// the worker: `allViews` says whether this one was).
  public mutating func completeFrame(
    _ frame: LumaFrame, report: StrategyFrame, decodeStarted: Instant, decoded: Instant, elsewhere: Bool = false,
    allViews: Bool = false
  ) {
    stats.decode.record(microseconds: decoded.microseconds(since: decodeStarted))
    if results.count > 0 { stats.framesWithCodes &+= 1 }
    stats.decodeAttempts &+= UInt64(report.attempts)
    stats.decodeStrategyMicroseconds &+= report.microseconds
    if report.budgetSpent { stats.framesOverBudget &+= 1 }
    if report.quiet { stats.framesQuiet &+= 1 }
    for i in 0..<results.count {
      stats.symbols &+= 1
      let symbol = results[i]
      if symbol.truncated { stats.truncatedPayloads &+= 1 }
      // Two codes with one payload: one sighting, one decision.
      if results.repeatsEarlierPayload(i) { continue }
      let payload = results.payload(i)
      let digest = digester.sha256(payload)
      guard presence.observe(digest, at: decoded) == .entered else { continue }
      decide(symbol: symbol, payload: payload, digest: digest, captured: frame.captured, decoded: decoded)
      lastCodeGeometry = CodeGeometry(frame, corners: symbol.corners)
    }
    if captureSnapshot && (!elsewhere || allViews || settings.decode.variantMode != .alternate) {
      captureSnapshotFrame(frame, redecode: !elsewhere)
    }
    sweepPresence()
    tick()
  }

  /// Whether the next frame sent to a worker should be decoded in every view (a snapshot waits).
  public var wantsAllViews: Bool { captureSnapshot && settings.decode.variantMode == .alternate }

  /// Copies this frame and what was found in it into the snapshot buffer (no allocation).
  private mutating func captureSnapshotFrame(_ frame: LumaFrame, redecode: Bool) {
    captureSnapshot = false
    if redecode && results.count == 0 && settings.decode.variantMode == .alternate {
      // This frame had one view; the picture should show every code any view can read.
      pipeline.decode(frame, into: &results, mode: .retry)
    }
    snapshot.copy(frame)
    snapshot.wallNanoseconds = wall.unixNanoseconds()
    snapshot.exposure = ExposureMetrics(frame)
    if let last = lastDecision {
      snapshot.lastDecision = last.verdict
      snapshot.lastLabelCount = Int(last.labelCount)
      snapshot.lastLabel = last.label
    }
    for i in 0..<results.count {
      var s = SnapshotSymbol()
      let symbol = results[i]
      s.format = symbol.format
      s.corners = symbol.corners
      s.variant = symbol.variant
      let payload = results.payload(i)
      s.verdict =
        policy.decide(payload, digest: digester.sha256(payload), nowUnixSeconds: wall.unixSeconds(), mode: .inspect)
        .verdict
      s.geometry = CodeGeometry(frame, corners: symbol.corners)
      s.payloadCount = min(payload.count, SnapshotSymbol.payloadBytesMax)
      for k in 0..<s.payloadCount { s.payload[k] = payload[k] }
      snapshot.append(s)
    }
    snapshotCaptured = true
  }

  /// Ends the presence of codes no longer seen (also while no frames arrive, e.g. camera lost).
  public mutating func sweepPresence() {
    let now = clock.now()
    presence.sweep(at: now) { digest in
      var e = ScanEvent(.left, at: now, wall: wall.unixNanoseconds())
      if let tagger { e.tag = tagger.tag(digest) }
      events.append(e)
    }
  }

  private mutating func decide(
    symbol: DecodedSymbol, payload: UnsafeRawBufferPointer, digest: Digest, captured: Instant, decoded: Instant
  ) {
    let decision = policy.decide(payload, digest: digest, nowUnixSeconds: wall.unixSeconds(), mode: .admit)
    var verdict = decision.verdict
    // A grant always names the rule that granted it (no policy grants by default).
    assert(!verdict.isGranted || decision.source != .none)
    var e = ScanEvent()
    if let tagger { e.tag = tagger.tag(digest) }
    if decision.source != .none {
      withUnsafeTemporaryAllocation(byteCount: ScanEvent.labelBytesMax, alignment: 1) { buffer in
        let n = policy.copyLabel(decision, into: buffer)
        e.setLabel(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
      }
    }
    e.kind = .decision
    e.format = symbol.format
    e.variant = symbol.variant
    e.decodeMicroseconds = UInt32(clamping: decoded.microseconds(since: captured))
    e.setPayload(payload)
    e.code = UInt16(decision.source.rawValue)
    if verdict.isGranted, let second = secondFactor {
      // A PIN after the pass: the grant waits for it (a pass still waiting before this one is refused).
      secondFactorSequence &+= 1
      let pin = policy.pinVerifier(decision)
      // Wrong PINs count per holder: a signed pass's keyed identity (a rotating pass shows a new
      // code every step), an allow-list entry's payload tag.
      var counted = e.tag
      if decision.source == .credential, let tagger, let who = policy.identity(decision, digest: digest, digester: digester) {
        counted = tagger.tag(who)
      }
      if let asked = second.begin(
        id: secondFactorSequence, pin: pin.verifier, hasPin: pin.hasPin, digest: digest, tag: counted, at: clock.now())
      {
        verdict = asked
      }
      if verdict == .pinRequired {
        completeSecondFactor(id: pendingGrant?.id ?? 0, verdict: .deniedPin)
        askSecondFactor(e, decision: decision, digest: digest)
        return
      }
    } else if verdict.isGranted && policy.needsPin(decision) {
      verdict = .deniedPinUnavailable  // a PIN nobody can type is never skipped (the policy refuses it first)
    }
    complete(&e, decision: decision, verdict: verdict, digest: digest, captured: captured)
    if e.verdict == .deniedUnknown && decision.source == .none { enrolCandidates.record(e, digest: digest, payload: payload) }
  }

  /// The grant `id` waiting for its second factor ends with `verdict` (`.granted`, or a
  /// `.deniedPin…`); nothing when that grant is no longer waiting.
  public mutating func completeSecondFactor(id: UInt64, verdict: Verdict) {
    guard let waiting = pendingGrant, waiting.id == id else { return }
    pendingGrant = nil
    var e = waiting.event
    complete(&e, decision: waiting.decision, verdict: verdict, digest: waiting.digest, captured: nil)
  }

  /// A good pass that needs a PIN: the decision says so, the buzzer asks, the grant waits.
  private mutating func askSecondFactor(_ event: ScanEvent, decision: AccessDecision, digest: Digest) {
    var e = event
    let now = clock.now()
    actuator.play(settings.actuation.pinPromptPattern, at: now)
    e.verdict = .pinRequired
    e.monotonic = now
    e.wallNanoseconds = wall.unixNanoseconds()
    events.append(e)
    lastDecision = e
    lastDecisionDigest = digest
    pendingGrant = PendingGrant(id: secondFactorSequence, event: e, decision: decision, digest: digest)
  }

  /// A decision takes effect: the turnstile's gate, the panel or the relay, the buzzer, the
  /// event. `captured`: the frame's capture time (nil when a second factor ended it: no
  /// frame-to-decision time to record).
  private mutating func complete(_ e: inout ScanEvent, decision: AccessDecision, verdict: Verdict, digest: Digest, captured: Instant?) {
    var verdict = verdict
    if verdict.isGranted, case .turnstile(let gate) = outcome {
      // One passage for one person: anti-passback first, durable before the turnstile unlocks.
      let who = policy.identity(decision, digest: digest, digester: digester)
      verdict = e.withLabel { gate.admit(identity: who, label: $0, tag: e.tag, at: clock.now()) }
    }
    let decided = clock.now()
    if verdict.isGranted { stats.grants &+= 1 } else { stats.denies &+= 1 }
    switch outcome {
    case .panel(let panel):
      // The panel decides and drives its strike; its LED/buzzer commands say "granted".
      if !(verdict.isGranted && panel.forward(decision)) { actuator.play(settings.actuation.denyPattern, at: decided) }
    case .strike where verdict.isGranted:
      actuator.pulseRelay(at: decided)
      actuator.play(settings.actuation.grantPattern, at: decided)
    case .turnstile where verdict.isGranted:
      actuator.play(settings.actuation.grantPattern, at: decided)  // the gate unlocks the passage
    case .strike, .turnstile:
      actuator.play(settings.actuation.denyPattern, at: decided)
    }
    let from = captured ?? decided
    if let captured { stats.frameToDecision.record(microseconds: decided.microseconds(since: captured)) }
    pendingEdgeFrom = from
    e.verdict = verdict
    e.monotonic = decided
    e.wallNanoseconds = wall.unixNanoseconds()
    e.decideMicroseconds = UInt32(clamping: decided.microseconds(since: from))
    // Drive the first edge now, so the event can carry frame-to-edge latency; the edge events
    // are held back so the log reads decision first, then its edges.
    holdingEdges = true
    tick()
    holdingEdges = false
    if let edge = lastEdgeMicroseconds { e.edgeMicroseconds = edge }
    lastEdgeMicroseconds = nil
    events.append(e)
    for i in 0..<heldEdgeCount { events.append(heldEdges[i]) }
    heldEdgeCount = 0
    lastDecision = e
    lastDecisionDigest = digest
  }

  /// Frame-to-edge time of the decision being completed, and the edges `tick` held back meanwhile
  /// so the log reads the decision first, then its edges (driven in ScanEngine+Lines.swift).
  var lastEdgeMicroseconds: UInt32? = nil
  var holdingEdges = false
  var heldEdges = InlineArray<2, ScanEvent>(repeating: ScanEvent())
  var heldEdgeCount = 0
}
