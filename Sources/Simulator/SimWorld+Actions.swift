import ScanCore
import ScanSim

/// What happens in the world, each with its chance per 5 ms tick (per million).
extension SimWorld {
  func act() {
    // The camera: someone steps up for 0.3 to 3 s, then nobody for 0.1 to 1 s at the least.
    if shown != nil {
      if step >= showUntil {
        shown = nil
        showUntil = step + pick(20...200)
        trace.add("camera clear")
      }
    } else if step >= showUntil && chance(20_000) {
      let person = SimPerson(rawValue: pick(1...SimPerson.allCases.count))!
      shown = person
      showUntil = step + pick(60...600)
      trace.add("camera shows \(person.label)")
    }
    if chance(600) { toggleCarol() }
    if chance(600) { toggleLockdown() }
    if chance(400) { manualOpen() }
    if chance(300) { jumpClock() }
    if chance(200) { restart() }
    if mutation == .spuriousPulse && chance(2_000) {
      trace.add("relay glitch")
      try? relay.set(.active)
    }
  }

  /// Carol's entry is taken out of the allow-list file (or put back), then the list reloaded.
  func toggleCarol() {
    carolListed.toggle()
    if !carolListed { counts.revocations += 1 }
    trace.add(carolListed ? "carol restored" : "carol revoked")
    guard mutation != .revocationNotReloaded || carolListed else { return }
    loadAllowList(carolListed: carolListed)
  }

  /// A lockdown latched (durably, on the disk) or lifted by its authority.
  func toggleLockdown() {
    lockdown.toggle()
    if lockdown { counts.lockdowns += 1 }
    trace.add(lockdown ? "lockdown on" : "lockdown off")
    if mutation != .lockdownNotApplied { engine.policy.lockdown = lockdown }
    // Recorded as the emergencies record it (the console's authority in the high byte).
    let code = (lockdown ? 1 : 0) | UInt16(EmergencyAuthority.console.rawValue) << 8
    ring.append(ScanEvent(.lockdown, code: code, at: clock.now(), wall: clock.unixNanoseconds()))
  }

  func manualOpen() {
    counts.manualOpens += 1
    let pulsed = engine.openManually(milliseconds: nil, by: .console)
    trace.add(pulsed ? "open" : "open refused (relay resting)")
  }

  /// The wall clock set back or forward by up to a day (NTP after a long outage, an RTC reset).
  func jumpClock() {
    counts.clockJumps += 1
    let seconds = pick(-86_400...86_400)
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
    engine.policy.lockdown = mutation == .restartForgetsLockdown ? false : lockdown
    if mutation == .lockdownNotApplied { engine.policy.lockdown = false }
    // The lamps are made again with what stands, as the composition root tells them.
    watch.lamps = FeedbackLamps(settings: Self.lampSettings, lockdown: mutation == .lampsNotToldAtStart ? false : lockdown)
    watch.lastGrantAt = nil
    watch.lampsFrom = ring.nextSequence
  }
}
