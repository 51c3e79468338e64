import Glibc
import ScanCore
import ScanLinux
import ScanService

/// The demo's signed-pass scenes: a site made for this run (issuer and site keys, trust file,
/// revocation list in the demo's folder) and the passes a door meets — a signed pass, a rotating
/// one, the same rotating code shown again, a revoked, an expired, a tampered pass, and one from
/// a key the site does not trust.
enum DemoCredentials {
  static func prepare(in directory: String, config: inout ScanConfig) throws -> [DemoCommand.Scene] {
    let issuer = CredentialIssuer.randomBytes(32)
    let site = CredentialIssuer.randomBytes(32)
    let kid = Array("demo-site".utf8)
    let trust = "[issuer.demo-site]\ned25519 = \"\(Hex.string(CredentialIssuer.issuerPublicKey(issuer)!))\"\n"
    try writeFileAtomically(directory + "/trust.toml", Array(trust.utf8))
    try SecretFile.create(directory + "/site.key", Array((Hex.string(site) + "\n").utf8))
    let now = Int64(time(nil))
    func pass(
      _ sub: String, _ label: String, id: UInt8, from: Int64 = -60, until: Int64 = 86_400, rotating: Bool = false
    )
      throws -> IssuedPass
    {
      var c = PassClaims(subject: sub, expires: now + until, id: [0xDE, 0x70, id])
      c.notBefore = now + from
      c.issuedAt = now
      c.label = label
      if rotating {
        c.rotatingDigits = 6
        c.sitePublicKey = CredentialIssuer.sitePublicKey(site)!
      }
      return try CredentialIssuer.issue(c, kid: kid, issuerSeed: issuer)
    }
    let signed = try pass("emp-0101", "frank (signed)", id: 1)
    let rotating = try pass("emp-0102", "grace (rotating)", id: 2, rotating: true)
    let revoked = try pass("emp-0103", "heidi (revoked)", id: 3)
    let expired = try pass("emp-0104", "ivan (expired)", id: 4, from: -172_800, until: -86_400)
    var tampered = Array(signed.staticText.utf8)
    tampered[tampered.count / 2] = tampered[tampered.count / 2] == 0x41 ? 0x42 : 0x41  // one character changed
    var foreign = PassClaims(subject: "emp-0666", expires: now + 3600, id: [0x66])
    foreign.label = "mallory (forged)"
    let forged = try CredentialIssuer.issue(foreign, kid: Array("other-site".utf8), issuerSeed: CredentialIssuer.randomBytes(32))
    let list = try CredentialIssuer.revocationList(version: 1, issuedAt: now, ids: [[0xDE, 0x70, 3]], kid: kid, issuerSeed: issuer)
    try writeFileAtomically(directory + "/revoked.cose", list)
    // The rotating pass as the holder's wallet shows it for the next few steps (the demo runs well inside them).
    let code = rotating.seed.withUnsafeBytes {
      TOTP.value(key: $0, step: now / 30, digits: 6, crypto: SodiumCredentialCrypto(siteSecretKey: nil))
    }
    let shown = Array(rotating.presented(totp: code).utf8)

    config.credentials.trustFile = directory + "/trust.toml"
    config.credentials.siteKeyFile = directory + "/site.key"
    config.credentials.revocationFile = directory + "/revoked.cose"
    config.credentials.usedFile = directory + "/used-passes"
    config.stateDirectorySetting = directory  // replay steps, used passes, revocation version
    return [
      .init(payload: Array(signed.staticText.utf8), variant: .upright, note: "signed pass (Ed25519), verified offline"),
      .init(payload: shown, variant: .upright, note: "rotating pass: TOTP of this 30 s step, seed sealed to the site key"),
      .init(payload: shown, variant: .upright, note: "the same rotating code again (a screenshot): replayed"),
      .init(payload: Array(revoked.staticText.utf8), variant: .upright, note: "signed pass on the signed revocation list"),
      .init(payload: Array(expired.staticText.utf8), variant: .upright, note: "signed pass, expired yesterday"),
      .init(payload: tampered, variant: .upright, note: "signed pass with one character changed"),
      .init(payload: Array(forged.staticText.utf8), variant: .upright, note: "signed with a key this site does not trust"),
    ]
  }
}
