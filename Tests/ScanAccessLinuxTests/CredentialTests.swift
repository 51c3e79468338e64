import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

@Suite struct CredentialTests {
  @Test("RFC 6238 appendix B: the SHA-1 test vectors (8 digits)")
  func totpVectors() {
    let crypto = SodiumCredentialCrypto(siteSecretKey: nil)
    let key = Array("12345678901234567890".utf8)
    let vectors: [(Int64, UInt32)] = [
      (59, 94_287_082), (1_111_111_109, 7_081_804), (1_111_111_111, 14_050_471), (1_234_567_890, 89_005_924),
      (2_000_000_000, 69_279_037), (20_000_000_000, 65_353_130),
    ]
    for (t, expected) in vectors {
      #expect(key.withUnsafeBytes { TOTP.value(key: $0, step: t / 30, digits: 8, crypto: crypto) } == expected, "T=\(t)")
    }
  }

  @Test("RFC 9285's examples encode and decode; bad base45 is refused")
  func base45() {
    let cases = [("AB", "BB8"), ("Hello!!", "%69 VD92EX0"), ("base-45", "UJCLQE7W581"), ("ietf!", "QED8WEX0")]
    for (plain, encoded) in cases {
      #expect(String(decoding: Base45.encode(Array(plain.utf8)), as: UTF8.self) == encoded)
      var out = [UInt8](repeating: 0, count: 32)
      let n = Array(encoded.utf8).withUnsafeBytes { t in out.withUnsafeMutableBytes { Base45.decode(t, into: $0) } }
      #expect(n.map { Array(out[0..<$0]) } == Array(plain.utf8))
    }
    for bad in ["GGW", "A", "ab8", "BB8A"] {  // over range, 3k+1 length, lower case
      var out = [UInt8](repeating: 0, count: 32)
      #expect(Array(bad.utf8).withUnsafeBytes { t in out.withUnsafeMutableBytes { Base45.decode(t, into: $0) } } == nil, "\(bad)")
    }
  }

  @Test("a static pass is granted; its label and source are on the decision")
  func staticPass() throws {
    let site = CredentialSite()
    let v = site.verifier()
    let pass = try site.issue(site.claims())
    #expect(decide(v, pass.staticText, at: site.now) == .granted)
    var label = [UInt8](repeating: 0, count: 64)
    let n = label.withUnsafeMutableBytes { v.copyLabel(into: $0) }
    #expect(String(decoding: label[0..<n], as: UTF8.self) == "ALICE")
    // A static signed pass may be shown again (like an allow-list entry) until it expires.
    #expect(decide(v, pass.staticText, at: site.now + 10) == .granted)
  }

  @Test("every way a pass can be wrong has its own verdict, and none grants")
  func everyWrongWay() throws {
    let site = CredentialSite { $0.zones = ["main"] }
    let v = site.verifier()
    var c = site.claims()
    c.zones = ["main"]
    let good = try site.issue(c)
    #expect(problem(v, good.staticText, at: site.now) == nil)
    #expect(problem(v, good.staticText, at: site.now + 7200) == .expired)
    #expect(problem(v, good.staticText, at: site.now - 7200) == .notYetValid)
    var lab = site.claims()
    lab.zones = ["lab"]
    #expect(problem(v, try site.issue(lab).staticText, at: site.now) == .zone)
    let other = try CredentialIssuer.issue(c, kid: Array("other".utf8), issuerSeed: site.issuerSeed)
    #expect(problem(v, other.staticText, at: site.now) == .unknownIssuer)
    let forged = try CredentialIssuer.issue(c, kid: site.kid, issuerSeed: CredentialIssuer.randomBytes(32))
    #expect(problem(v, forged.staticText, at: site.now) == .signature)
    // Truncated: every length short of the whole text.
    let text = good.staticText
    for cut in stride(from: 5, to: text.utf8.count, by: 7) {
      let p = problem(v, String(text.prefix(cut)), at: site.now)
      #expect(p != nil && p!.verdict != .granted, "cut at \(cut): \(String(describing: p))")
    }
    #expect(problem(v, "SG1:", at: site.now) != nil)
    #expect(problem(v, "SG1R6123:" + good.body, at: site.now) == .malformedText)
    #expect(problem(v, "SG1R61234567" + good.body, at: site.now) == .malformedText)
    #expect(problem(v, "SG1R6123456:" + good.body, at: site.now) == .totpUnexpected)
    #expect(problem(v, "SG1:" + String(repeating: "A", count: 1_100), at: site.now) == .oversized)
    #expect(problem(v, "SG1:" + good.body.lowercased(), at: site.now) == .base45)
    // Deeply nested CBOR in place of the message: refused at the first level.
    let nested = Base45.encode([UInt8](repeating: 0x81, count: 600) + [0x00])
    #expect(problem(v, "SG1:" + String(decoding: nested, as: UTF8.self), at: site.now) == .cbor(.unexpected))
    // Indefinite-length and float items are never accepted.
    let indefinite = Base45.encode([0x9F, 0x40, 0xA0, 0x40, 0x40, 0xFF])
    #expect(problem(v, "SG1:" + String(decoding: indefinite, as: UTF8.self), at: site.now) == .cbor(.malformed))
  }

  @Test("one flipped bit anywhere in the message never grants")
  func everyFlippedByte() throws {
    let site = CredentialSite()
    let v = site.verifier()
    let pass = try site.issue(site.claims())
    var granted = 0
    for i in 0..<pass.message.count {
      for bit in [0, 3, 7] {
        var m = pass.message
        m[i] ^= UInt8(1 << bit)
        let text = "SG1:" + String(decoding: Base45.encode(m), as: UTF8.self)
        if decide(v, text, at: site.now, mode: .inspect) == .granted { granted += 1 }
      }
    }
    #expect(granted == 0, "\(granted) of \(pass.message.count * 3) flipped messages granted")
  }

  @Test("rotating: the current TOTP opens once; the same step again is replayed; the next step opens")
  func rotatingReplay() throws {
    let site = CredentialSite()
    let v = site.verifier()
    let pass = try site.rotating()
    let t = site.now - site.now % 30 + 5
    let shown = pass.presented(totp: site.totp(pass, at: t))
    #expect(decide(v, shown, at: t, mode: .inspect) == .granted)  // CHECK does not use it up
    #expect(decide(v, shown, at: t) == .granted)
    #expect(decide(v, shown, at: t + 3) == .deniedReplayed)
    #expect(v.lastProblem == .replayed)
    // A screenshot from the step before, shown after a later step was accepted: replayed too.
    let previous = pass.presented(totp: site.totp(pass, at: t - 30))
    #expect(decide(v, previous, at: t + 4) == .deniedReplayed)
    let next = pass.presented(totp: site.totp(pass, at: t + 30))
    #expect(decide(v, next, at: t + 30) == .granted)
    // Forty seconds later the first code is dead whatever the cache holds.
    let fresh = site.verifier()
    #expect(decide(fresh, shown, at: t + 75) == .deniedTOTP)
    #expect(decide(fresh, pass.staticText, at: t) == .deniedTOTP)  // no TOTP at all
    #expect(decide(site.verifier(siteKey: false), shown, at: t) == .deniedSignature)  // seed cannot be opened
  }

  @Test("the replay cache is fixed: full of live passes it refuses (fail-secure), stale slots are reused")
  func replayCacheBounds() throws {
    let site = CredentialSite { $0.replayCacheEntries = 2 }
    let v = site.verifier()
    let t = site.now - site.now % 30 + 5
    let passes = try (0..<3).map { try site.rotating(id: [UInt8($0) + 1]) }
    #expect(decide(v, passes[0].presented(totp: site.totp(passes[0], at: t)), at: t) == .granted)
    #expect(decide(v, passes[1].presented(totp: site.totp(passes[1], at: t)), at: t) == .granted)
    #expect(decide(v, passes[2].presented(totp: site.totp(passes[2], at: t)), at: t) == .deniedUnavailable)
    let later = t + 120
    #expect(decide(v, passes[2].presented(totp: site.totp(passes[2], at: later)), at: later) == .granted)
  }

  @Test("single use: used once, refused after a restart (the store is a file)")
  func singleUseAcrossRestart() throws {
    let site = CredentialSite()
    let path = temporaryDirectory("used") + "/used-passes"
    defer { removeTree(String(path[..<path.lastIndex(of: "/")!])) }
    var c = site.claims()
    c.singleUse = true
    let pass = try site.issue(c)
    do {
      let v = site.verifier()
      #expect(decide(v, pass.staticText, at: site.now) == .deniedUnavailable)  // no store: refused
      v.useStore = try UsedCredentialFile(path: path, capacity: 16)
      #expect(decide(v, pass.staticText, at: site.now, mode: .inspect) == .granted)
      #expect(decide(v, pass.staticText, at: site.now) == .granted)
      #expect(decide(v, pass.staticText, at: site.now + 1) == .deniedUsed)
    }
    let restarted = site.verifier()
    restarted.useStore = try UsedCredentialFile(path: path, capacity: 16)
    #expect(decide(restarted, pass.staticText, at: site.now + 60) == .deniedUsed)
    var st = stat()
    #expect(stat(path, &st) == 0 && st.st_size == 32 && st.st_mode & 0o077 == 0)
  }

  @Test("revocation: a signed list revokes; an unsigned, foreign or older list is refused whole")
  func revocation() throws {
    let site = CredentialSite()
    let v = site.verifier()
    let pass = try site.issue(site.claims(id: [0xAA, 0xBB]))
    let list = try CredentialIssuer.revocationList(
      version: 2, issuedAt: site.now, ids: [[0xAA, 0xBB], [1]], kid: site.kid, issuerSeed: site.issuerSeed)
    v.revocation = try list.withUnsafeBytes { b throws(ParseError) in
      try CredentialFiles.parseRevocation(b, sign1: v.sign1, now: site.now, current: 0)
    }
    #expect(decide(v, pass.staticText, at: site.now) == .deniedRevoked)
    let foreign = try CredentialIssuer.revocationList(
      version: 3, issuedAt: site.now, ids: [], kid: site.kid, issuerSeed: CredentialIssuer.randomBytes(32))
    let older = try CredentialIssuer.revocationList(version: 1, issuedAt: site.now, ids: [], kid: site.kid, issuerSeed: site.issuerSeed)
    for (name, bytes) in [("foreign", foreign), ("older", older), ("unsigned", Array(list.dropLast(64)))] {
      let r = bytes.withUnsafeBytes { b in
        Result { () throws(ParseError) in try CredentialFiles.parseRevocation(b, sign1: v.sign1, now: site.now, current: 2) }
      }
      if case .success = r { Issue.record("\(name) list accepted") }
    }
  }

  @Test("revocation: a list of 500 passes (far over a pass's 1 KiB) verifies and revokes the last of them")
  func largeRevocation() throws {
    let site = CredentialSite()
    let v = site.verifier()
    let ids: [[UInt8]] = (0..<500).map { i in [0x5A, 0x0C, UInt8(i >> 8), UInt8(i & 0xFF), 1, 2, 3, 4] }
    let pass = try site.issue(site.claims(id: ids[499]))
    let list = try CredentialIssuer.revocationList(version: 9, issuedAt: site.now, ids: ids, kid: site.kid, issuerSeed: site.issuerSeed)
    #expect(list.count > 4_000)
    v.revocation = try list.withUnsafeBytes { b throws(ParseError) in
      try CredentialFiles.parseRevocation(b, sign1: v.sign1, now: site.now, current: 0)
    }
    #expect(decide(v, pass.staticText, at: site.now) == .deniedRevoked)
  }

  @Test("an untrusted clock: policy deny refuses; policy floor judges against the floor")
  func clockPolicy() throws {
    let deny = CredentialSite { $0.timePolicy = .deny }
    let v = deny.verifier()
    let pass = try deny.issue(deny.claims())
    v.clock = ClockTrust(synchronized: false, floor: 0)
    #expect(decide(v, pass.staticText, at: deny.now) == .deniedClock)
    let floor = CredentialSite { $0.timePolicy = .floor }
    let f = floor.verifier()
    let p = try floor.issue(floor.claims(valid: (floor.now - 60)...(floor.now + 600)))
    // The clock reads a year ago (no RTC, no network) but the reader has seen later times:
    f.clock = ClockTrust(synchronized: false, floor: floor.now + 7200)
    #expect(decide(f, p.staticText, at: floor.now - 31_536_000) == .deniedExpired)
    f.clock = ClockTrust(synchronized: false, floor: floor.now)
    #expect(decide(f, p.staticText, at: floor.now - 31_536_000) == .granted)
  }

  @Test("trust file: keys with windows; a bad file is refused with the line")
  func trustFile() throws {
    let text = """
      [issuer.hq-2026]
      ed25519 = "\(String(repeating: "ab", count: 32))"
      not_after = "2027-01-01T00:00:00Z"
      [issuer.hq-2027]
      ed25519 = "\(String(repeating: "cd", count: 32))"
      not_before = "2026-12-01T00:00:00Z"
      """
    let store = try CredentialFiles.parseTrust(Array(text.utf8))
    #expect(store.keys.map(\.kidText) == ["hq-2026", "hq-2027"])
    #expect(store.keys[0].isValid(at: 1_790_000_000) && !store.keys[0].isValid(at: 1_800_000_000))
    for bad in ["[issuer.x]\ned25519 = \"abcd\"\n", "[issuer.x]\ned25519 = \"\(String(repeating: "ab", count: 32))\"\ncolour = \"red\"\n", "x = 1\n"] {
      #expect(throws: ParseError.self) { try CredentialFiles.parseTrust(Array(bad.utf8)) }
    }
  }
}

/// Signed passes and schedules: a pass's zones that name schedules are access windows.
@Suite struct CredentialScheduleTests {
  /// Every unix time read as a Monday, at (seconds / 60) % 1440 minutes (UTC's time of day).
  struct MondayCalendar: LocalCalendar {
    func civil(unixSeconds: Int64) -> CivilTime {
      CivilTime(year: 2026, month: 12, day: 21, weekday: 1, minuteOfDay: Int(unixSeconds / 60 % 1_440))
    }
  }

  func store() -> ScheduleStore {
    let s = ScheduleStore(calendar: MondayCalendar())
    #expect(s.load(Array("schedule evening mon-fri 18:00-22:00\nschedule night mon-fri 22:00-23:59\n".utf8)) == nil)
    return s
  }

  @Test("a pass whose zone names a schedule opens only inside it; a zone naming none is not limited")
  func zoneWindows() throws {
    let site = CredentialSite()
    let inWindow = site.now  // 20:26:40 of its day
    let late = site.now + 7_200  // 22:26:40
    var c = site.claims(valid: (site.now - 86_400)...(site.now + 86_400))
    c.zones = ["evening"]
    let evening = try site.issue(c)
    c.zones = ["lobby"]
    c.id = [7, 7]
    let lobby = try site.issue(c)
    c.zones = ["evening", "night"]
    c.id = [8, 8]
    let both = try site.issue(c)

    let v = site.verifier()
    #expect(decide(v, evening.staticText, at: late) == .granted)  // no schedules: zones are just zones
    var policy = AccessPolicies(allowList: AllowList(limits: AllowListLimits()), credentials: v)
    policy.schedules = store()
    #expect(v.schedules != nil)  // the policy hands its schedules to the verifier
    #expect(decide(v, evening.staticText, at: inWindow) == .granted)
    #expect(decide(v, evening.staticText, at: late) == .deniedOutsideSchedule)
    #expect(problem(v, evening.staticText, at: late) == .outsideSchedule)
    #expect(decide(v, lobby.staticText, at: late) == .granted)
    #expect(decide(v, both.staticText, at: late) == .granted)  // one of its windows is open
    #expect(decide(v, both.staticText, at: site.now - 4 * 3_600) == .deniedOutsideSchedule)  // 16:26

    // A reader with zones judges only the zones it accepts.
    let zoned = CredentialSite { $0.zones = ["main", "evening"] }
    var z = zoned.claims(valid: (zoned.now - 86_400)...(zoned.now + 86_400))
    z.zones = ["main", "night"]  // main: no window; night is not this reader's
    let mainPass = try zoned.issue(z)
    z.zones = ["evening", "night"]
    z.id = [5]
    let eveningPass = try zoned.issue(z)
    let zv = zoned.verifier()
    zv.schedules = store()
    #expect(decide(zv, mainPass.staticText, at: zoned.now - 4 * 3_600) == .granted)
    #expect(decide(zv, eveningPass.staticText, at: zoned.now + 7_200) == .deniedOutsideSchedule)  // night not accepted here
    #expect(decide(zv, eveningPass.staticText, at: zoned.now) == .granted)
  }

  @Test("while the schedule file has not loaded, a pass with zones is refused; one without zones is not")
  func notLoaded() throws {
    let site = CredentialSite()
    var c = site.claims()
    c.zones = ["lobby"]
    let zoned = try site.issue(c)
    c.zones = []
    c.id = [6, 6]
    let plain = try site.issue(c)
    let v = site.verifier()
    v.schedules = ScheduleStore(calendar: MondayCalendar())  // configured, never loaded
    #expect(decide(v, zoned.staticText, at: site.now) == .deniedUnavailable)
    #expect(decide(v, plain.staticText, at: site.now) == .granted)
  }

  @Test("a single-use pass refused outside its window is not used up")
  func singleUseOutsideWindow() throws {
    let site = CredentialSite()
    let path = temporaryDirectory("used-window") + "/used-passes"
    defer { removeTree(String(path[..<path.lastIndex(of: "/")!])) }
    var c = site.claims(valid: (site.now - 86_400)...(site.now + 86_400))
    c.zones = ["evening"]
    c.singleUse = true
    let pass = try site.issue(c)
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: path, capacity: 16)
    v.schedules = store()
    #expect(decide(v, pass.staticText, at: site.now - 4 * 3_600) == .deniedOutsideSchedule)
    #expect(decide(v, pass.staticText, at: site.now) == .granted)
    #expect(decide(v, pass.staticText, at: site.now + 60) == .deniedUsed)
  }
}

/// The fleet's deny-all-but-static offline policy in the decision.
@Suite struct StaticOnlyPolicyTests {
  @Test("static only: static=yes entries grant, others and signed passes are denied-offline, nothing is spent")
  func staticOnly() throws {
    let site = CredentialSite()
    let path = temporaryDirectory("used-static") + "/used-passes"
    defer { removeTree(String(path[..<path.lastIndex(of: "/")!])) }
    var c = site.claims()
    c.singleUse = true
    let pass = try site.issue(c)
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: path, capacity: 16)
    var policy = AccessPolicies(allowList: AllowList(limits: AllowListLimits()), credentials: v)
    let digester = SodiumDigester()
    let list = "text:MASTER label=master static=yes\ntext:VISITOR label=visitor\n"
    #expect(policy.allowList.load(Array(list.utf8), digester: digester, nowUnixSeconds: site.now) == nil)
    func verdict(_ payload: String) -> Verdict {
      Array(payload.utf8).withUnsafeBytes {
        policy.decide($0, digest: digester.sha256($0), nowUnixSeconds: site.now, mode: .admit).verdict
      }
    }
    #expect(verdict("VISITOR") == .granted)
    policy.staticOnly = true
    #expect(verdict("MASTER") == .granted)
    #expect(verdict("VISITOR") == .deniedOffline)
    #expect(verdict("NOBODY") == .deniedUnknown)
    #expect(verdict(pass.staticText) == .deniedOffline)
    #expect(Verdict(name: "denied-offline") == .deniedOffline)
    policy.staticOnly = false
    #expect(verdict(pass.staticText) == .granted)  // the single-use pass was not spent while offline
    #expect(verdict(pass.staticText) == .deniedUsed)
  }

  @Test("static= takes yes or no")
  func staticValue() {
    var list = AllowList(limits: AllowListLimits())
    #expect(list.load(Array("text:A static=maybe\n".utf8), digester: SodiumDigester(), nowUnixSeconds: 0)?.line == 1)
  }
}

/// The lockdown in the decision (docs/turnstiles.md, "Lockdown").
@Suite struct LockdownPolicyTests {
  @Test("lockdown: lockdown=yes entries and passes with the claim grant; the rest are denied-lockdown and spend nothing")
  func lockdown() throws {
    let site = CredentialSite()
    let path = temporaryDirectory("used-lockdown") + "/used-passes"
    defer { removeTree(String(path[..<path.lastIndex(of: "/")!])) }
    var plain = site.claims("visitor", id: [1, 1, 1, 1])
    plain.singleUse = true
    let visitorPass = try site.issue(plain)
    var marked = site.claims("guard", id: [2, 2, 2, 2])
    marked.lockdown = true
    let guardPass = try site.issue(marked)
    var rotating = site.claims("carol", id: [3, 3, 3, 3])
    rotating.rotatingDigits = 6
    rotating.sitePublicKey = CredentialIssuer.sitePublicKey(site.siteSecret)!
    let carol = try site.issue(rotating)
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: path, capacity: 16)
    var policy = AccessPolicies(allowList: AllowList(limits: AllowListLimits()), credentials: v)
    let digester = SodiumDigester()
    let list = "text:STAFF label=staff\ntext:KEYHOLDER lockdown=yes\ntext:FIRE-WARDEN lockdown=no\n"
    #expect(policy.allowList.load(Array(list.utf8), digester: digester, nowUnixSeconds: site.now) == nil)
    func verdict(_ payload: String, at now: Int64 = site.now) -> Verdict {
      Array(payload.utf8).withUnsafeBytes {
        policy.decide($0, digest: digester.sha256($0), nowUnixSeconds: now, mode: .admit).verdict
      }
    }
    policy.lockdown = true
    #expect(verdict("STAFF") == .deniedLockdown)
    #expect(verdict("KEYHOLDER") == .granted)
    #expect(verdict("FIRE-WARDEN") == .deniedLockdown)
    #expect(verdict(visitorPass.staticText) == .deniedLockdown)
    #expect(verdict(guardPass.staticText) == .granted)
    // A rotating code refused during the lockdown is not spent: the same code grants after it.
    let code = carol.presented(totp: site.totp(carol, at: site.now))
    #expect(verdict(code) == .deniedLockdown)
    policy.lockdown = false
    #expect(verdict(code) == .granted)
    #expect(verdict(visitorPass.staticText) == .granted, "the single use was not spent during the lockdown")
    #expect(verdict(visitorPass.staticText) == .deniedUsed)
    #expect(verdict("STAFF") == .granted)
  }

  @Test("the lockdown claim is a CBOR boolean, once; anything else is refused whole")
  func claimForm() throws {
    let site = CredentialSite()
    var c = site.claims("guard")
    c.lockdown = true
    let pass = try site.issue(c)
    let v = site.verifier()
    #expect(decide(v, pass.staticText, at: site.now) == .granted)
    #expect(v.last.lockdown)
    var p = site.claims("visitor", id: [5, 5, 5, 5])
    p.singleUse = false
    let plain = try site.issue(p)
    #expect(decide(v, plain.staticText, at: site.now) == .granted && !v.last.lockdown)
  }
}
