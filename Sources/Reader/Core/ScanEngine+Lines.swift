import ScanAccess
import ScanBase

/// The engine's output side: the relay and buzzer driven to the actuator's levels, the relay's
/// watchdog, manual opens and patterns, and the events each edge and fault leaves.
extension ScanEngine where Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// Drives the lines to the actuator's levels for now. Call whenever `nextDeadline` passes.
  public mutating func tick() {
    let now = clock.now()
    if let tripped = relayGuard?.takeTrip() { relayGuardTripped(at: now, trippedAt: tripped) }
    let levels = actuator.levels(at: now)
    var edged = false
    if levels.relay != relayLevel {
      // Armed before the active write: the guard can never find an active relay it was not told of.
      if levels.relay == .active { armRelayGuard() }
      do throws(GPIOError) {
        try relay.set(levels.relay)
        relayLevel = levels.relay
        edged = levels.relay == .active
        recordEdge(line: EdgeCode.relay, level: levels.relay, at: now)
        // Disarmed only after the inactive write succeeded: a failed (or hung) one is the guard's.
        if levels.relay == .inactive { disarmRelayGuard() }
      } catch { recordGPIOFault(error) }
    } else if levels.relay == .inactive && relayGuardArmed {
      disarmRelayGuard()  // the active write failed, and the period is over
    }
    if levels.buzzer != buzzerLevel {
      do throws(GPIOError) {
        try buzzer.set(levels.buzzer)
        buzzerLevel = levels.buzzer
        if levels.buzzer == .active { edged = true }
        recordEdge(line: EdgeCode.buzzer, level: levels.buzzer, at: now)
      } catch { recordGPIOFault(error) }
    }
    if edged, let from = pendingEdgeFrom {
      let edgeAt = clock.now()
      stats.frameToEdge.record(microseconds: edgeAt.microseconds(since: from))
      lastEdgeMicroseconds = UInt32(clamping: edgeAt.microseconds(since: from))
      pendingEdgeFrom = nil
    }
  }

  mutating func armRelayGuard() {
    guard let relayGuard, let capEnd = actuator.relayPeriodCapEnd else { return }
    relayGuard.arm(deadline: capEnd.adding(milliseconds: ActuationSettings.relayWatchdogMarginMilliseconds))
    relayGuardArmed = true
  }

  mutating func disarmRelayGuard() {
    guard relayGuardArmed else { return }
    relayGuard?.disarm()
    relayGuardArmed = false
  }

  /// The guard drove the relay inactive at `trippedAt` because this loop had not by the cap:
  /// record it, and count the relay inactive (level and period) so the loop does not fight it.
  mutating func relayGuardTripped(at now: Instant, trippedAt: Instant) {
    stats.relayWatchdogTrips &+= 1
    relayGuardArmed = false
    actuator.relayForcedInactive(at: now)
    let wallNow = wall.unixNanoseconds()
    if relayLevel == .active {
      // The edge the guard drove, at its own time (earlier than the events the loop recorded
      // since it resumed: the ring's order shows when the loop took the trip), appended directly,
      // never held behind a decision.
      let trip = min(trippedAt, now)
      events.append(ScanEvent(.edge, code: EdgeCode.code(line: EdgeCode.relay, level: .inactive), at: trip, seenAt: now, wallNow: wallNow))
      relayLevel = .inactive
    }
    events.append(ScanEvent(.fault, code: FaultCode.relayWatchdog.rawValue, at: now, wall: wallNow))
    actuator.play(settings.actuation.faultPattern, at: now)
  }

  mutating func recordEdge(line: UInt16, level: LineLevel, at now: Instant) {
    let e = ScanEvent(.edge, code: EdgeCode.code(line: line, level: level), at: now, wall: wall.unixNanoseconds())
    if holdingEdges && heldEdgeCount < 2 {
      heldEdges[heldEdgeCount] = e
      heldEdgeCount += 1
    } else {
      events.append(e)
    }
  }

  mutating func recordGPIOFault(_ error: GPIOError) {
    stats.gpioErrors &+= 1
    events.append(ScanEvent(.fault, code: FaultCode.gpio.rawValue, at: clock.now(), wall: wall.unixNanoseconds()))
  }

  /// When `tick` must next run (nil when nothing is scheduled).
  public func nextDeadline() -> Instant? { actuator.nextChange(after: clock.now()) }

  /// What the decision on `payload` would be now; nothing is actuated or recorded.
  public func check(_ payload: UnsafeRawBufferPointer) -> Verdict {
    checkDecision(payload).verdict
  }

  /// The whole decision `check` gives (which rule decided).
  public func checkDecision(_ payload: UnsafeRawBufferPointer) -> AccessDecision {
    policy.decide(payload, digest: digester.sha256(payload), nowUnixSeconds: wall.unixSeconds(), mode: .inspect)
  }

  /// A manual relay pulse (console OPEN, a fleet command), capped like every pulse; the event
  /// carries who asked (`by`'s name as its label). Returns false (and records nothing) when the
  /// relay is resting after its maximum on-time.
  @discardableResult
  public mutating func openManually(milliseconds: Int?, by: UnlockReason = .console) -> Bool {
    let now = clock.now()
    // A turnstile lets one person through instead (the pulse length is the turnstile's own).
    if case .turnstile(let gate) = outcome {
      guard gate.openOnce(at: now) else { return false }
    } else {
      guard actuator.pulseRelay(at: now, milliseconds: milliseconds) else { return false }
    }
    stats.manualOpens &+= 1
    actuator.play(settings.actuation.grantPattern, at: now)
    let pulse = UInt16(clamping: milliseconds ?? settings.actuation.relayPulseMilliseconds)
    var e = ScanEvent(.manualOpen, code: pulse, at: now, wall: wall.unixNanoseconds())
    by.name.utf8.withContiguousStorageIfAvailable { e.setLabel(UnsafeRawBufferPointer($0)) }
    events.append(e)
    tick()
    return true
  }

  /// Plays a pattern (faults, self-test).
  public mutating func play(_ pattern: BuzzerPattern) {
    actuator.play(pattern, at: clock.now())
    tick()
  }

  /// Holds the buzzer sounding whenever no pattern plays (a panel's beeper wire), or ends it.
  public mutating func holdBuzzer(_ on: Bool) {
    actuator.buzzerHeld = on
    tick()
  }

  /// Records a fault or state change.
  public mutating func record(_ kind: EventKind, code: UInt16) {
    events.append(ScanEvent(kind, code: code, at: clock.now(), wall: wall.unixNanoseconds()))
  }

  /// Drives both lines inactive (shutdown, fatal error). Safe to call more than once.
  public mutating func releaseOutputs() {
    actuator.releaseRelay()
    let now = clock.now()
    // Set both even when they already read inactive: a failed earlier write may have left the
    // line in another state than `relayLevel` says.
    do throws(GPIOError) {
      try relay.set(.inactive)
      disarmRelayGuard()
    } catch { recordGPIOFault(error) }
    do throws(GPIOError) { try buzzer.set(.inactive) } catch { recordGPIOFault(error) }
    if relayLevel == .active { recordEdge(line: EdgeCode.relay, level: .inactive, at: now) }
    if buzzerLevel == .active { recordEdge(line: EdgeCode.buzzer, level: .inactive, at: now) }
    relayLevel = .inactive
    buzzerLevel = .inactive
  }
}
