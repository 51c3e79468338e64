import ScanCore
import ScanSim

/// The invariants, watch.checked after every tick, each with a name (docs/testing.md, "The simulator").
extension SimWorld {
  public static let invariants = [
    ("relay-cap", "the relay is never active longer than relay_pulse_ms_max"),
    ("grant-recorded-with-edge", "every time the relay goes active, a grant or a manual open is recorded in the same engine step"),
    ("no-grant-unlisted", "nobody is granted whose code is not on the allow-list (the person in view decides)"),
    ("no-grant-after-revocation", "a revoked entry is never granted after its revocation, across restarts"),
    ("no-grant-in-lockdown", "during a lockdown only a lockdown credential is granted, across restarts"),
    ("lockdown-lifted-by-its-authority", "a lockdown stands until the authority that latched it lifts it, across restarts"),
    ("no-grant-beyond-uses", "a guest pass never opens more often than its uses, across restarts"),
    ("no-grant-unrecorded-use", "a counted pass is never granted while its use cannot be written (the disk is full)"),
    ("events-in-order", "event sequence numbers follow one another and time never goes back on the monotonic clock"),
    ("lamps-say-lockdown", "during a lockdown the feedback lamps never show ready (inviting a code), across restarts"),
    ("lamps-green-means-open", "the green lamp shows only while the strike is open or within granted_ms of a grant"),
    ("fleet-exactly-as-logged", "every record the broker gets is the audit log's record of that sequence, byte for byte"),
    ("fleet-acked-was-accepted", "a record the fleet link counts as acknowledged (in memory or in its state file) the broker has"),
    ("fleet-catches-up", "once the link has had time to recover from the last fault, every record logged 20 s earlier is acknowledged"),
  ]

  func violation(_ name: String, _ detail: String) -> Violation {
    trace.add("VIOLATED \(name): \(detail)")
    return Violation(invariant: name, step: step, detail: detail)
  }

  func checkInvariants() -> Violation? {
    var lastTime = Instant(nanoseconds: 0)
    while case .event(let e) = ring.read(watch.checked + 1) {
      watch.checked += 1
      guard e.sequence == watch.checked, e.monotonic >= lastTime else {
        return violation("events-in-order", "event \(e.sequence) after \(watch.checked - 1)")
      }
      lastTime = e.monotonic
      if e.sequence >= watch.lampsFrom && !(mutation == .lampsMissLockdown && e.kind == .lockdown) { watch.lamps.observe(e) }
      fleet.logged(e.withLabel { "\(e.sequence) \(e.kind.name) \(e.verdict.name) " + String(decoding: $0, as: UTF8.self) }, at: e.monotonic)
      if let v = record(e) { return v }
    }
    if emergency.state.lockdownActive != lockdown {
      let held = emergency.latchedBy.map { "the \($0.name)'s lockdown lifted" } ?? "a lockdown nobody latched in force"
      return violation("lockdown-lifted-by-its-authority", held)
    }
    if let v = checkLamps() { return v }
    if let (name, detail) = fleet.tick(now: clock.now()) { return violation(name, detail) }
    // A decision's record follows its edge within the engine's step (it carries the edge's
    // latency); the log's thread commits it within log.commit_interval_ms.
    if watch.relayRose && !watch.authorizedSinceRelease {
      return violation("grant-recorded-with-edge", "the relay went active and no grant or open was recorded in that step")
    }
    watch.relayRose = false
    if relay.level == .inactive { watch.authorizedSinceRelease = false }
    if let since = relay.activeSince {
      let ms = Int((clock.now().nanoseconds - since.nanoseconds) / 1_000_000)
      if ms > Self.relayPulseMillisecondsMax + Self.tickMilliseconds {
        return violation("relay-cap", "the relay has been active \(ms) ms (cap \(Self.relayPulseMillisecondsMax) ms)")
      }
    }
    return nil
  }

  /// What the lamps show, against the world's lockdown and the strike.
  private func checkLamps() -> Violation? {
    let now = clock.now()
    let signal = watch.lamps.signal(at: now)
    if lockdown && (signal == .ready || signal == .off) {
      return violation("lamps-say-lockdown", "the lamps show \(signal.name) during a lockdown")
    }
    if signal == .granted && relay.level == .inactive {
      let recent = watch.lastGrantAt.map { now.nanoseconds - $0.nanoseconds <= UInt64(Self.lampSettings.grantedMilliseconds) * 1_000_000 } ?? false
      if !recent { return violation("lamps-green-means-open", "green with the strike locked and no grant in granted_ms") }
    }
    return nil
  }

  /// One event from the ring, into the trace and the model's checks.
  private func record(_ e: ScanEvent) -> Violation? {
    let label = e.withLabel { String(decoding: $0, as: UTF8.self) }
    switch e.kind {
    case .decision where e.verdict == .granted:
      counts.grants += 1
      watch.authorizedSinceRelease = true
      watch.lastGrantAt = e.monotonic
      trace.add("granted \(label)")
      guard let person = shown else { return violation("no-grant-unlisted", "granted \(label) with nobody in view") }
      if person == .carol && !carolListed { return violation("no-grant-after-revocation", "carol granted after her revocation") }
      if person == .mallory { return violation("no-grant-unlisted", "mallory (never listed) granted as \(label)") }
      if lockdown && person != .bob { return violation("no-grant-in-lockdown", "\(person.label) granted during a lockdown") }
      if person.usesAllowed != nil && uses.full {
        return violation("no-grant-unrecorded-use", "\(person.label) granted while the disk is full (the use not written)")
      }
      if let allowed = person.usesAllowed {
        let had = watch.guestGrants[person, default: 0]
        guard had < allowed else { return violation("no-grant-beyond-uses", "\(person.label) granted a \(had + 1)th time (\(allowed) allowed)") }
        watch.guestGrants[person] = had + 1
      }
    case .decision:
      counts.denials += 1
      trace.add("\(e.verdict.name) \(shown?.label ?? "-")")
    case .manualOpen:
      watch.authorizedSinceRelease = true
      trace.add("manual-open")
    default:
      trace.add(e.kind.name)
    }
    return nil
  }
}
