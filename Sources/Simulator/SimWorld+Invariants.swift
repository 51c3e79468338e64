import ScanCore
import ScanSim

/// The invariants, checked after every tick, each with a name (docs/testing.md, "The simulator").
extension SimWorld {
  public static let invariants = [
    ("relay-cap", "the relay is never active longer than relay_pulse_ms_max"),
    ("grant-recorded-with-edge", "every time the relay goes active, a grant or a manual open is recorded in the same engine step"),
    ("no-grant-unlisted", "nobody is granted whose code is not on the allow-list (the person in view decides)"),
    ("no-grant-after-revocation", "a revoked entry is never granted after its revocation, across restarts"),
    ("no-grant-in-lockdown", "during a lockdown only a lockdown credential is granted, across restarts"),
    ("no-grant-beyond-uses", "a guest pass never opens more often than its uses, across restarts"),
    ("events-in-order", "event sequence numbers follow one another and time never goes back on the monotonic clock"),
  ]

  func violation(_ name: String, _ detail: String) -> Violation {
    trace.add("VIOLATED \(name): \(detail)")
    return Violation(invariant: name, step: step, detail: detail)
  }

  func checkInvariants() -> Violation? {
    var lastTime = Instant(nanoseconds: 0)
    while case .event(let e) = ring.read(checked + 1) {
      checked += 1
      guard e.sequence == checked, e.monotonic >= lastTime else {
        return violation("events-in-order", "event \(e.sequence) after \(checked - 1)")
      }
      lastTime = e.monotonic
      if let v = record(e) { return v }
    }
    // A decision's record follows its edge within the engine's step (it carries the edge's
    // latency); the log's thread commits it within log.commit_interval_ms.
    if relayRose && !authorizedSinceRelease {
      return violation("grant-recorded-with-edge", "the relay went active and no grant or open was recorded in that step")
    }
    relayRose = false
    if relay.level == .inactive { authorizedSinceRelease = false }
    if let since = relay.activeSince {
      let ms = Int((clock.now().nanoseconds - since.nanoseconds) / 1_000_000)
      if ms > Self.relayPulseMillisecondsMax + Self.tickMilliseconds {
        return violation("relay-cap", "the relay has been active \(ms) ms (cap \(Self.relayPulseMillisecondsMax) ms)")
      }
    }
    return nil
  }

  /// One event from the ring, into the trace and the model's checks.
  private func record(_ e: ScanEvent) -> Violation? {
    let label = e.withLabel { String(decoding: $0, as: UTF8.self) }
    switch e.kind {
    case .decision where e.verdict == .granted:
      counts.grants += 1
      authorizedSinceRelease = true
      trace.add("granted \(label)")
      guard let person = shown else { return violation("no-grant-unlisted", "granted \(label) with nobody in view") }
      if person == .carol && !carolListed { return violation("no-grant-after-revocation", "carol granted after her revocation") }
      if person == .mallory { return violation("no-grant-unlisted", "mallory (never listed) granted as \(label)") }
      if lockdown && person != .bob { return violation("no-grant-in-lockdown", "\(person.label) granted during a lockdown") }
      if let allowed = person.usesAllowed {
        let had = guestGrants[person, default: 0]
        guard had < allowed else { return violation("no-grant-beyond-uses", "\(person.label) granted a \(had + 1)th time (\(allowed) allowed)") }
        guestGrants[person] = had + 1
      }
    case .decision:
      counts.denials += 1
      trace.add("\(e.verdict.name) \(shown?.label ?? "-")")
    case .manualOpen:
      authorizedSinceRelease = true
      trace.add("manual-open")
    default:
      trace.add(e.kind.name)
    }
    return nil
  }
}
