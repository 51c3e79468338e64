import ScanBase

// MARK: The policy on verified claims

extension CredentialVerifier {
  /// Time, revocation, zone, TOTP, replay and counted uses, for verified claims in `last`.
  /// Arithmetic on the pass's own values saturates: a claim of 2^63−1 is a verdict, never a trap.
  func judge(_ text: CredentialText.Parsed, now: Int64, judged: Int64, mode: DecideMode) -> CredentialProblem? {
    // Time: against the later of the clock and its floor, or refused while untrusted.
    if !time.trust().isTrusted(now: now) && settings.timePolicy == .deny { return .clockUntrusted }
    let leeway = Int64(settings.leewaySeconds)
    if let nbf = last.notBefore, judged.saturatingAdd(leeway) < nbf { return .notYetValid }
    if judged.saturatingAdd(-leeway) > last.expires { return .expired }

    let id = withUnsafeBytes(of: last.id) { CredentialID(UnsafeRawBufferPointer(rebasing: $0[0..<last.idCount])) }
    guard let id else { return .cbor(.unexpected) }
    if revocation.contains(id) { return .revoked }
    if !zoneNames.isEmpty && !zoneMatches() { return .zone }
    if let schedules, let problem = zoneWindows(schedules, now: now, judged: judged) { return problem }
    // A lockdown refuses a pass without the claim before any step or single use is spent.
    if lockdown && !last.lockdown { return .lockdown }
    // A PIN this reader cannot ask for refuses the pass, also before anything is spent.
    if last.hasPin && !pinAvailable { return .pinUnavailable }

    var step: Int64? = nil
    if last.rotates {
      guard let presented = text.totp else { return .totpMissing }
      guard text.digits == last.digits else { return .totpWrong }
      // Without a durable record of accepted steps a restart would accept a used code again.
      guard replayStore != nil || mode == .inspect else { return .unavailable }
      switch matchTOTP(presented, digits: last.digits, now: judged) {
      case .failure(let problem): return problem
      case .success(let matched): step = matched
      }
      if let seen = replay.lastStep(id), step! <= seen { return .replayed }
    } else if text.totp != nil {
      return .totpUnexpected
    }
    if last.counted {
      // Uses are counted, and a first use starts the window, only where they are kept durably
      // (a tool inspecting a pass without the reader's store judges the rest).
      guard useStore != nil || mode == .inspect else { return .unavailable }
      if useStore?.countsNow == false { return .usesOffline }
      if let seen = useStore?.usage(id) {
        if last.usesAllowed > 0 && seen.uses >= last.usesAllowed { return .used }
        if last.firstUseWindow > 0 && seen.firstUse > 0
          && judged.saturatingAdd(-leeway) > seen.firstUse.saturatingAdd(last.firstUseWindow)
        {
          return .expired
        }
      }
    }
    guard mode == .admit else { return nil }
    if let step {
      // Durable before the door opens: the slot is written and synced, or the pass is refused.
      let window = Int64(settings.totpSkewSteps)
      guard let slot = replay.record(id, step: step, expiredBefore: judged / CredentialSettings.periodSeconds - window),
        replayStore!.persist(slot: slot, id: id, step: replay.entry(slot).step)
      else { return .unavailable }
    }
    if last.counted {
      guard useStore!.recordUse(id, expires: last.expires.saturatingAdd(leeway), now: judged) else { return .unavailable }
    }
    return nil
  }

  private func zoneMatches() -> Bool {
    for i in 0..<last.zoneCount where last.withZone(i, { isReaderZone($0) }) { return true }
    return false
  }

  private func isReaderZone(_ zone: UnsafeRawBufferPointer) -> Bool {
    zoneNames.contains { name in name.count == zone.count && name.withUnsafeBytes { $0.elementsEqual(zone) } }
  }

  /// Among the pass's zones this reader accepts (all of them when the reader names none), those
  /// that name a schedule: the pass is admitted when none does, or when one of them is open now.
  /// While a configured schedule file has not loaded yet, a pass that carries zones is refused
  /// (fail-secure: any of them may be a window).
  /// The time of day is unknown while the clock reads behind its floor: every window is closed then.
  private func zoneWindows(_ schedules: ScheduleStore, now: Int64, judged: Int64) -> CredentialProblem? {
    let behind = time.isBehind(now)
    var windowed = false
    var accepted = false
    for i in 0..<last.zoneCount {
      // nil: not this reader's zone; .some(nil): no schedule of that name; .some(open).
      let window: Bool?? = last.withZone(i) { zone in
        guard zoneNames.isEmpty || isReaderZone(zone) else { return nil }
        let open = schedules.allows(zoneKey: ScheduleKey.of(zone), nowUnixSeconds: judged)
        return .some(open.map { $0 && !behind })
      }
      guard let window else { continue }
      accepted = true
      if let open = window {
        if open { return nil }
        windowed = true
      }
    }
    if accepted && schedules.version == 0 { return .unavailable }
    return windowed ? .outsideSchedule : nil
  }

  /// The latest step within the skew whose TOTP (RFC 6238, HMAC-SHA1) equals `presented`.
  private func matchTOTP(_ presented: UInt32, digits: Int, now: Int64) -> Result<Int64, CredentialProblem> {
    guard hasSiteKey else { return .failure(.seal) }
    let opened = withUnsafeBytes(of: last.sealedSeed) { sealed in
      sign1.crypto.openSealed(
        UnsafeRawBufferPointer(rebasing: sealed[0..<last.sealedSeedCount]), into: UnsafeMutableRawBufferPointer(rebasing: seed[0..<64]))
    }
    guard let seedCount = opened, seedCount > 0 else { return .failure(.seal) }
    defer { sign1.crypto.wipe(seed) }
    let key = UnsafeRawBufferPointer(rebasing: seed[0..<seedCount])
    let scratch = UnsafeMutableRawBufferPointer(rebasing: seed[64...])
    let current = now / CredentialSettings.periodSeconds
    let skew = Int64(settings.totpSkewSteps)
    var matched: Int64? = nil
    // Every candidate is computed (no early exit on a match). A plain counter: iterating a
    // ClosedRange<Int64> allocates in unoptimised builds.
    var step = max(0, current - skew)
    while step <= current + skew {
      if TOTP.value(key: key, step: step, digits: digits, crypto: sign1.crypto, scratch: scratch) == presented { matched = step }
      step += 1
    }
    guard let matched else { return .failure(.totpWrong) }
    return .success(matched)
  }
}
