import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// Issue 26's holes that a restart or a clock set back used to reopen (docs/credentials.md,
/// "What survives a restart" and "Time"). The real binary is tried the same way by
/// deploy/restart-security.py (kill -9 loop, clock set back).
@Suite struct RestartSecurityTests {
  /// A rotating code accepted once stays refused by a new verifier over the same file (a
  /// restart), however many times; without a durable store rotating passes are refused.
  @Test("a rotating code accepted once is refused after any number of restarts")
  func rotatingAcrossRestarts() throws {
    let site = CredentialSite()
    let pass = try site.rotating()
    let t = site.now - site.now % 30 + 5
    let shown = pass.presented(totp: site.totp(pass, at: t))
    let path = site.stateDirectory + "/steps"
    var grants = 0
    for restart in 0..<8 {
      let v = site.verifier()
      v.replayStore = try ReplayStepFile(path: path, cache: v.replay)
      if decide(v, shown, at: t + Int64(restart)) == .granted { grants += 1 }
    }
    #expect(grants == 1)
    // The next step's code still opens (the file keeps steps, not a ban).
    let v = site.verifier()
    v.replayStore = try ReplayStepFile(path: path, cache: v.replay)
    #expect(decide(v, pass.presented(totp: site.totp(pass, at: t + 30)), at: t + 30) == .granted)
    // No durable store: refused, not granted from memory alone.
    let bare = site.verifier()
    bare.replayStore = nil
    #expect(decide(bare, pass.presented(totp: site.totp(pass, at: t + 60)), at: t + 60) == .deniedUnavailable)
  }

  @Test("a replay file with more live slots than the cache keeps every one refused")
  func replayFileLargerThanCache() throws {
    let site = CredentialSite()
    let t = site.now - site.now % 30 + 5
    let passes = try (0..<4).map { try site.rotating(id: [0x40, UInt8($0)]) }
    let path = site.stateDirectory + "/steps-large"
    let big = site.verifier()
    big.replayStore = try ReplayStepFile(path: path, cache: big.replay)
    for p in passes { #expect(decide(big, p.presented(totp: site.totp(p, at: t)), at: t) == .granted) }
    let small = CredentialSite { $0.replayCacheEntries = 2 }
    // Same keys: reuse the first site's verifier settings but a 2-slot cache.
    let v = CredentialVerifier(
      settings: small.settings, sign1: Sign1Verifier(trust: site.trust, codec: LibCBOR(), crypto: SodiumCredentialCrypto(siteSecretKey: site.siteSecret)))
    v.replayStore = try ReplayStepFile(path: path, cache: v.replay)
    for p in passes { #expect(decide(v, p.presented(totp: site.totp(p, at: t)), at: t + 1) == .deniedReplayed) }
  }

  @Test("a damaged replay file is refused, not read as empty")
  func damagedReplayFile() throws {
    let site = CredentialSite()
    let path = site.stateDirectory + "/steps-damaged"
    try writeFileAtomically(path, [UInt8](repeating: 7, count: 45))
    #expect(throws: FileError.self) { try ReplayStepFile(path: path, cache: ReplayCache(capacity: 4)) }
    unlink(path)
    mkfifo(path, 0o600)
    #expect(throws: FileError.self) { try ReplayStepFile(path: path, cache: ReplayCache(capacity: 4)) }
  }

  /// With the clock set back behind its floor every time check judges at the floor.
  @Test("clock behind the floor: old TOTP, expired issuer key, expired allow-list entry, schedules")
  func clockBehindFloor() throws {
    let site = CredentialSite()
    let trueNow = site.now - site.now % 30 + 5
    let behind = trueNow - 3_000  // 50 minutes back
    // A rotating code of 50 minutes ago (a screenshot), shown to a reader whose clock was set back.
    let pass = try site.rotating()
    let old = pass.presented(totp: site.totp(pass, at: behind))
    let v = site.verifier()
    v.time = TrustedTime(floor: trueNow, synchronized: true)
    #expect(decide(v, old, at: behind) == .deniedTOTP)
    #expect(decide(v, pass.presented(totp: site.totp(pass, at: trueNow)), at: behind) == .granted)
    // An issuer key past its not_after.
    let keyed = CredentialVerifier(
      settings: site.settings,
      sign1: Sign1Verifier(
        trust: TrustStore(keys: [
          IssuerKey(
            kid: site.kid, publicKey: CredentialIssuer.issuerPublicKey(site.issuerSeed)!, notBefore: nil, notAfter: trueNow - 600)!
        ]), codec: LibCBOR(), crypto: SodiumCredentialCrypto(siteSecretKey: nil)))
    keyed.time = TrustedTime(floor: trueNow, synchronized: true)
    let signed = try site.issue(site.claims(valid: (behind - 600)...(trueNow + 3600)))
    #expect(decide(keyed, signed.staticText, at: behind) == .deniedIssuerKey)
    // An allow-list entry past its until=, and one with a schedule, through the reader's policies.
    var list = AllowList(limits: AllowListLimits())
    let text = "text:EMP-1 until=\(RFC3339.format(trueNow - 600))\ntext:EMP-2 schedule=evening\n"
    #expect(list.load(Array(text.utf8), digester: SodiumDigester(), nowUnixSeconds: behind) == nil)
    var policies = AccessPolicies(allowList: list)
    let schedules = ScheduleStore(calendar: CredentialScheduleTests.MondayCalendar())
    #expect(schedules.load(Array("schedule evening mon-sun 00:00-24:00\n".utf8)) == nil)
    policies.schedules = schedules
    func verdict(_ payload: String, at now: Int64) -> Verdict {
      let bytes = Array(payload.utf8)
      return bytes.withUnsafeBytes { policies.decide($0, digest: SodiumDigester().sha256($0), nowUnixSeconds: now, mode: .admit).verdict }
    }
    #expect(verdict("EMP-1", at: behind) == .granted)  // no floor: the clock is believed
    #expect(verdict("EMP-2", at: behind) == .granted)
    policies.time = TrustedTime(floor: trueNow, synchronized: true)
    #expect(verdict("EMP-1", at: behind) == .deniedExpired)
    #expect(verdict("EMP-2", at: behind) == .deniedOutsideSchedule)  // the time of day is unknown
    #expect(verdict("EMP-2", at: trueNow + 5) == .granted)
  }

  @Test("a single-use pass expiring at 2^63-1 is a verdict, not a trap, and is used once")
  func overflowingExpiry() throws {
    let site = CredentialSite()
    var c = site.claims()
    c.expires = .max
    c.singleUse = true
    c.id = [0x7F, 0xFF]
    let pass = try site.issue(c)
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: site.stateDirectory + "/used-max", capacity: 16)
    #expect(decide(v, pass.staticText, at: site.now) == .granted)
    #expect(decide(v, pass.staticText, at: site.now + 1) == .deniedUsed)
    // Not-before at the other end, and the leeway added to it (saturating, never a trap).
    c.expires = site.now + 60
    c.notBefore = .max
    c.singleUse = false
    #expect(decide(v, try site.issue(c).staticText, at: site.now) == .deniedNotYetValid)
    #expect(decide(v, try site.issue(c).staticText, at: .max - 5) == .deniedExpired)
    c.notBefore = .min
    c.expires = .min
    #expect(decide(v, try site.issue(c).staticText, at: .min + 5) == .deniedExpired)
  }

  @Test("the highest revocation version survives a restart; a damaged mark is refused")
  func revocationMark() throws {
    let dir = temporaryDirectory("marks")
    defer { removeTree(dir) }
    let path = dir + "/revocation-version"
    do {
      let mark = try VersionMarks(path: path, name: "revocation")
      #expect(mark.highest == 0)
      #expect(mark.raise(to: 2))
      #expect(mark.raise(to: 1) && mark.highest == 2)  // never lowered
    }
    #expect(try VersionMarks(path: path, name: "revocation").highest == 2)
    try writeFileAtomically(path, Array("revocation x\n".utf8))
    #expect(throws: FileError.self) { try VersionMarks(path: path, name: "revocation") }
  }
}

/// The clock floor: moves only on evidence a bad reading cannot fake, never back.
@Suite struct ClockFloorTests {
  final class Clocks: @unchecked Sendable {
    var wall: Int64 = 1_780_000_000
    var boot: Int64 = 1_000
    var synchronized = true
    func read() -> ClockReading { ClockReading(wall: wall, sinceBoot: boot, synchronized: synchronized) }
    func advance(_ s: Int64) {
      wall += s
      boot += s
    }
  }

  func keeper(_ c: Clocks, path: String?, boot: String = "boot-a") -> ClockFloorKeeper {
    ClockFloorKeeper(time: TrustedTime(), ring: EventRing(capacity: 64), path: path, bootID: boot, read: { c.read() })
  }

  func refresh(_ k: ClockFloorKeeper, for seconds: Int64, _ c: Clocks) {
    var t: Int64 = 0
    while t < seconds {
      c.advance(5)
      k.refresh(now: Instant(nanoseconds: UInt64(c.boot) * 1_000_000_000), wallNanoseconds: c.wall * 1_000_000_000)
      t += 5
    }
  }

  @Test("a synchronised clock moves the floor only after it held steady; the floor follows boot time")
  func steadyEvidence() throws {
    let dir = temporaryDirectory("floor")
    defer { removeTree(dir) }
    let c = Clocks()
    let k = keeper(c, path: dir + "/clock-floor")
    refresh(k, for: 300, c)
    #expect(k.time.floor < c.wall - 1_000)  // not yet steady for 10 minutes
    refresh(k, for: 400, c)
    #expect(k.time.floor >= c.wall - 5 && k.time.floor <= c.wall)
    // The clock is set back an hour while the reader runs: behind the floor, which keeps advancing.
    let before = k.time.floor
    c.wall -= 3_600
    refresh(k, for: 60, c)
    #expect(k.time.isBehind(c.wall))
    #expect(k.time.floor >= before + 60)
  }

  @Test("one bad synchronised reading a year ahead is not kept; the floor never goes back but by a reset")
  func badReading() throws {
    let dir = temporaryDirectory("floor")
    defer { removeTree(dir) }
    let path = dir + "/clock-floor"
    let c = Clocks()
    do {
      let k = keeper(c, path: path)
      refresh(k, for: 700, c)
      let good = k.time.floor
      c.wall += 366 * 86_400  // one bad reading
      refresh(k, for: 5, c)
      c.wall -= 366 * 86_400
      refresh(k, for: 60, c)
      #expect(k.time.floor < good + 120)
      k.persist()
      // A floor really raised (a steady bad clock): only an operator's reset lowers it.
      k.time.raise(to: c.wall + 366 * 86_400)
      #expect(k.resetToClock() == c.wall)
      #expect(k.time.floor == c.wall)
    }
    #expect(keeper(c, path: path).time.floor <= c.wall)
  }

  @Test("a restart within one boot recovers the floor plus the time since; another boot the floor as written")
  func restartWithinBoot() throws {
    let dir = temporaryDirectory("floor")
    defer { removeTree(dir) }
    let path = dir + "/clock-floor"
    let c = Clocks()
    let k = keeper(c, path: path)
    refresh(k, for: 700, c)
    k.persist()
    let written = k.time.floor
    c.advance(1_000)  // killed, restarted 1,000 s later with the clock set back a day
    c.wall -= 86_400
    let same = keeper(c, path: path)
    #expect(same.time.floor == written + 1_000)
    let other = keeper(c, path: path, boot: "boot-b")
    #expect(other.time.floor == written)
    // An older floor file (a bare number) still loads; a damaged one keeps the floor at 0 and says so.
    try writeFileAtomically(path, Array("1700000000\n".utf8))
    #expect(keeper(c, path: path).time.floor == 1_700_000_000)
    try writeFileAtomically(path, Array("scangate-clock-floor 1 nonsense\n".utf8))
    #expect(keeper(c, path: path).problem != nil)
  }
}

/// A signed fleet command captured off the broker stays refused after its nonce was let go and
/// the reader restarted with its clock set back.
@Suite struct FleetReplayTests {
  @Test("a used command is refused after its nonce was pruned, a restart, and a clock 40 s behind")
  func replayedAfterPrune() throws {
    let t: Int64 = 1_780_000_000
    let open = FleetCommand(reader: "door-1", action: .open, nonce: String(repeating: "ab", count: 8), expiresUnixSeconds: t + 30)
    var ledger = NonceLedger()
    #expect(ledger.admit(open, now: t) == nil)
    // Later commands prune the nonce once it expired.
    let later = FleetCommand(reader: "door-1", action: .status, nonce: String(repeating: "cd", count: 8), expiresUnixSeconds: t + 120)
    #expect(ledger.admit(later, now: t + 60) == nil)
    #expect(!ledger.entries.contains { $0.nonce == open.nonce })
    // Restart from the file; the clock reads 40 s behind the command's expiry.
    var restarted = NonceLedger()
    restarted.load(ledger.text)
    #expect(restarted.admit(open, now: t - 10) != nil)
    // A fresh command is still taken.
    let fresh = FleetCommand(reader: "door-1", action: .open, nonce: String(repeating: "ef", count: 8), expiresUnixSeconds: t + 200)
    #expect(restarted.admit(fresh, now: t + 100) == nil)
  }
}

/// State files and tools meet values no reader writes (a damaged or hostile file, a typo): a
/// refusal or a clamped value, never an arithmetic trap that restarts the reader in a loop.
@Suite struct OutsideValueRangeTests {
  @Test("a fleet state file at 2^63-1 is refused as damaged (its +1 trapped the fleet thread)")
  func fleetStateOutOfRange() throws {
    #expect(throws: FileError.self) { try FleetState.parse(Array("scangate-fleet acked 9223372036854775807\n".utf8)) }
    #expect(try FleetState.parse(Array("scangate-fleet acked 4611686018427387904\n".utf8)) == 1 << 62)
  }

  @Test("times at the ends of Int64 format clamped to years 0000 and 9999")
  func formatExtremes() {
    #expect(RFC3339.format(.min) == "0000-01-01T00:00:00Z")
    #expect(RFC3339.format(.max) == "9999-12-31T23:59:59Z")
    #expect(RFC3339.format(1_780_000_000) == "2026-05-28T20:26:40Z")
  }

  @Test("a clock fault says in the journal why it matters and what to do; a synchronised clock says nothing")
  func clockFaultExplained() {
    let unsynchronised = ClockFloorKeeper.explanation(.clockUnsynchronised) ?? ""
    #expect(unsynchronised.contains("not synchronised") && unsynchronised.contains("timedatectl set-ntp true"), "\(unsynchronised)")
    #expect(unsynchronised.contains("unlock windows stay closed"))
    let behind = ClockFloorKeeper.explanation(.clockBehindFloor) ?? ""
    #expect(behind.contains("CLOCK FLOOR RESET"), "\(behind)")
    #expect(ClockFloorKeeper.explanation(.clockSynchronised) == nil)
  }
}
