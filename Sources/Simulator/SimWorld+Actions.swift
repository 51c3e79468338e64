import ScanCore
import ScanSim

/// What happens in the world at each tick: the actions drawn from the seed, or the list replayed
/// (`SimSchedule.swift`), each applied to the reader and the world's model.
extension SimWorld {
  func act() {
    if shown != nil && step >= showUntil {
      shown = nil
      trace.add("camera clear")
    }
    if var scheduler = source.scheduler {
      let first = source.script.count
      scheduler.draw(step: step, into: &source.script)
      source.scheduler = scheduler
      for i in first..<source.script.count { apply(source.script[i].action) }
    } else {
      while source.next < source.script.count && source.script[source.next].step <= step {
        let next = source.script[source.next]
        source.next += 1
        if next.step == step { apply(next.action) }
      }
    }
  }

  func apply(_ action: SimAction) {
    switch action {
    case .show(let person, let ticks):
      shown = person
      showUntil = step + ticks
      trace.add("camera shows \(person.label)")
    case .carol(let listed): setCarol(listed: listed)
    case .lockdown(let on, let by): setLockdown(on, by: by)
    case .manualOpen: manualOpen()
    case .jumpClock(let seconds): jumpClock(seconds)
    case .restart: restart()
    case .glitch:
      trace.add("relay glitch")
      try? relay.set(.active)
    case .diskFull(let full):
      guard full != uses.full else { return }
      uses.full = full
      fleet.diskFull = full
      trace.add(full ? "disk full" : "disk has room")
    case .broker(let up): fleet.setBroker(up: up, now: clock.now())
    case .brokerRefuses(let on): fleet.setRefusing(on, now: clock.now())
    case .networkCut: fleet.cut(now: clock.now())
    }
  }

  /// Carol's entry is taken out of the allow-list file (or put back), then the list reloaded.
  func setCarol(listed: Bool) {
    guard listed != carolListed else { return }
    carolListed = listed
    if !carolListed { counts.revocations += 1 }
    trace.add(carolListed ? "carol restored" : "carol revoked")
    guard mutation != .revocationNotReloaded || carolListed else { return }
    loadAllowList(carolListed: carolListed)
  }

  /// A lockdown latched, or its lifting asked, by `by`: the reader's `EmergencyState` decides,
  /// its latch is written to the disk, then the policy is told, as the emergencies' owner does.
  func setLockdown(_ on: Bool, by: EmergencyAuthority) {
    let now = clock.now()
    if on {
      if emergency.latchedBy == nil { emergency.latchedBy = by }
      let latched = [UInt8]().withUnsafeBytes { emergency.state.latch(by: by, who: $0, unixSeconds: clock.epochSeconds, at: now) }
      guard latched == .latched else { return }
      counts.lockdowns += 1
    } else {
      if emergency.latchedBy == by { emergency.latchedBy = nil }
      // The mutation: the console's handler lifts with the authority that holds the latch.
      let asking = mutation == .consoleLiftsAnyLockdown && by == .console ? (emergency.state.latch.authority ?? by) : by
      let cleared = emergency.state.clear(by: asking, at: now)
      guard cleared == .cleared else {
        if case .heldBy(let held) = cleared { trace.add("lockdown off by \(by.name) refused: held by \(held.name)") }
        return
      }
    }
    emergency.onDisk = emergency.state.latch
    trace.add((on ? "lockdown on by " : "lockdown off by ") + by.name)
    if mutation != .lockdownNotApplied { engine.policy.lockdown = emergency.state.lockdownActive }
    // Recorded as the emergencies record it (the authority in the high byte).
    let code = (on ? 1 : 0) | UInt16(by.rawValue) << 8
    ring.append(ScanEvent(.lockdown, code: code, at: now, wall: clock.unixNanoseconds()))
  }

  func manualOpen() {
    counts.manualOpens += 1
    let pulsed = engine.openManually(milliseconds: nil, by: .console)
    trace.add(pulsed ? "open" : "open refused (relay resting)")
  }

  /// The wall clock set back or forward by up to a day (NTP after a long outage, an RTC reset).
  func jumpClock(_ seconds: Int) {
    counts.clockJumps += 1
    clock.epochSeconds += Int64(seconds)
    trace.add("wall clock \(seconds >= 0 ? "+" : "")\(seconds) s")
  }

  /// The reader torn down at this tick and started again on the same disk: the relay driven
  /// inactive as the GPIO opens it, the allow-list file and the lockdown latch read back.
  func restart() {
    counts.restarts += 1
    trace.add("restart")
    engine = Self.makeEngine(clock: clock, ring: ring, relay: relay, buzzer: buzzer, payloads: payloads)
    uses.restart()
    attachCredentials()
    try? relay.set(.inactive)
    try? buzzer.set(.inactive)
    loadAllowList(carolListed: mutation == .restartForgetsRevocation ? true : carolListed)
    // The emergencies come back with the latch the disk holds.
    emergency.state = EmergencyState(settings: EmergencySettings(), now: clock.now(), latch: emergency.onDisk, unixSeconds: clock.epochSeconds)
    engine.policy.lockdown = mutation == .restartForgetsLockdown ? false : emergency.state.lockdownActive
    if mutation == .lockdownNotApplied { engine.policy.lockdown = false }
    // The lamps are made again with what stands, as the composition root tells them.
    watch.lamps = FeedbackLamps(settings: Self.lampSettings, lockdown: mutation == .lampsNotToldAtStart ? false : emergency.state.lockdownActive)
    watch.lastGrantAt = nil
    watch.lampsFrom = ring.nextSequence
    fleet.restart(now: clock.now())
  }
}
