import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// Guest passes (issue 31): a pass that counts its uses and one whose validity starts at its first
/// use, kept in the used-passes file across restarts.
@Suite struct GuestPassTests {
  let site = CredentialSite()

  func guest(uses: Int = 0, window: Int64 = 0, valid: ClosedRange<Int64>? = nil, id: [UInt8] = [0x67, 1]) throws -> IssuedPass {
    var c = site.claims("guest", valid: valid, id: id)
    c.label = "Bob"
    c.uses = uses
    c.firstUseWindow = window
    return try site.issue(c)
  }

  func verifier(_ path: String) throws -> CredentialVerifier {
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: path, capacity: 16)
    return v
  }

  @Test("--uses 3: three grants, the fourth denied-used, still after a restart; looking at it spends nothing")
  func threeUses() throws {
    let path = site.stateDirectory + "/used-passes"
    let pass = try guest(uses: 3)
    #expect(decide(site.verifier(), pass.staticText, at: site.now) == .deniedUnavailable)  // nowhere to count: refused
    do {
      let v = try verifier(path)
      for i in 0..<3 {
        #expect(decide(v, pass.staticText, at: site.now + Int64(i), mode: .inspect) == .granted)
        #expect(decide(v, pass.staticText, at: site.now + Int64(i)) == .granted, "use \(i + 1)")
      }
      #expect(decide(v, pass.staticText, at: site.now + 5) == .deniedUsed)
    }
    #expect(decide(try verifier(path), pass.staticText, at: site.now + 60) == .deniedUsed)
    // Another guest's pass is counted on its own.
    let other = try guest(uses: 1, id: [0x67, 2])
    let v = try verifier(path)
    #expect(decide(v, other.staticText, at: site.now + 61) == .granted)
    #expect(decide(v, other.staticText, at: site.now + 62) == .deniedUsed)
  }

  @Test("the slot as written: 16-bit use count at byte 17, 40-bit first use at byte 19, expiry at 24 (little-endian)")
  func slotLayout() throws {
    let path = site.stateDirectory + "/used-layout"
    let pass = try guest(uses: 5, id: [0xAB, 0xCD, 0xEF])
    let v = try verifier(path)
    #expect(decide(v, pass.staticText, at: site.now) == .granted)
    #expect(decide(v, pass.staticText, at: site.now + 100) == .granted)
    let bytes = try readWholeFile(path, maxBytes: 4096)
    #expect(bytes.count == 32)
    #expect(Array(bytes[0..<3]) == [0xAB, 0xCD, 0xEF] && bytes[16] == 3)
    #expect(bytes[17] == 2 && bytes[18] == 0)
    let first = (0..<5).reduce(Int64(0)) { $0 | Int64(bytes[19 + $1]) << (8 * Int64($1)) }
    #expect(first == site.now)  // the first use's time, not the second's
    let expiry = (0..<8).reduce(Int64(0)) { $0 | Int64(bytes[24 + $1]) << (8 * Int64($1)) }
    #expect(expiry == site.now + 3600 + Int64(site.settings.leewaySeconds))
  }

  @Test("a used-passes file written before use counts (zeros after the id's length) still refuses its single-use pass")
  func olderFile() throws {
    let path = site.stateDirectory + "/used-older"
    var c = site.claims("alice", id: [0x51, 0x52])
    c.singleUse = true
    let pass = try site.issue(c)
    // One slot as the previous version wrote it, built here by hand.
    var slot = [UInt8](repeating: 0, count: 32)
    slot[0] = 0x51
    slot[1] = 0x52
    slot[16] = 2
    let expires = site.now + 7200
    for k in 0..<8 { slot[24 + k] = UInt8(truncatingIfNeeded: expires >> (8 * Int64(k))) }
    try writeFileAtomically(path, slot, mode: 0o600)
    #expect(decide(try verifier(path), pass.staticText, at: site.now) == .deniedUsed)
  }

  @Test("a first-use window: valid for the window from its first use, not from issue; refused after it, across a restart")
  func firstUseWindow() throws {
    let path = site.stateDirectory + "/used-window"
    let leeway = Int64(site.settings.leewaySeconds)
    let start = site.now - 60
    let pass = try guest(window: 3600, valid: start...(start + 2 * 86_400))
    let firstUse = site.now + 86_400  // a day after it was issued
    do {
      let v = try verifier(path)
      #expect(decide(v, pass.staticText, at: firstUse) == .granted)
      #expect(decide(v, pass.staticText, at: firstUse + 3600) == .granted)  // as often as wanted within it
    }
    let v = try verifier(path)
    #expect(decide(v, pass.staticText, at: firstUse + 3600 + leeway) == .granted)
    #expect(decide(v, pass.staticText, at: firstUse + 3601 + leeway) == .deniedExpired)
    // Uses and a window together: whichever ends first.
    let both = try guest(uses: 2, window: 600, id: [0x67, 3])
    #expect(decide(v, both.staticText, at: site.now) == .granted)
    #expect(decide(v, both.staticText, at: site.now + 601 + leeway) == .deniedExpired)
    let both2 = try guest(uses: 2, window: 600, id: [0x67, 4])
    #expect(decide(v, both2.staticText, at: site.now) == .granted)
    #expect(decide(v, both2.staticText, at: site.now + 1) == .granted)
    #expect(decide(v, both2.staticText, at: site.now + 2) == .deniedUsed)
  }

  @Test("the issuer refuses what a reader would refuse: uses with single use, 0 or over 65535 uses, a window under a minute")
  func issuerBounds() throws {
    var c = site.claims()
    c.singleUse = true
    c.uses = 2
    #expect(throws: IssueError.self) { try site.issue(c) }
    c.singleUse = false
    c.uses = 65_536
    #expect(throws: IssueError.self) { try site.issue(c) }
    c.uses = 0
    c.firstUseWindow = 59
    #expect(throws: IssueError.self) { try site.issue(c) }
  }

  @Test("a full store refuses a new counted pass (fail-secure) and keeps counting the ones it holds")
  func fullStore() throws {
    let path = site.stateDirectory + "/used-full"
    let v = site.verifier()
    v.useStore = try UsedCredentialFile(path: path, capacity: 2)
    let passes = try (1...3).map { try guest(uses: 2, id: [0x70, UInt8($0)]) }
    #expect(decide(v, passes[0].staticText, at: site.now) == .granted)
    #expect(decide(v, passes[1].staticText, at: site.now) == .granted)
    #expect(decide(v, passes[2].staticText, at: site.now) == .deniedUnavailable)
    #expect(decide(v, passes[0].staticText, at: site.now + 1) == .granted)
    #expect(decide(v, passes[0].staticText, at: site.now + 2) == .deniedUsed)
  }
}
