import ScanCore
import ScanLinux

/// A site: an issuer key, a site key, a trust store, and a verifier as a reader builds it.
package final class CredentialSite {
  package let issuerSeed = CredentialIssuer.randomBytes(32)
  package let siteSecret = CredentialIssuer.randomBytes(32)
  package let kid = Array("hq-2026".utf8)
  package let now: Int64 = 1_780_000_000
  package var settings = CredentialSettings()

  package init(configure: (inout CredentialSettings) -> Void = { _ in }) {
    settings.trustFile = "(memory)"
    configure(&settings)
  }

  package var trust: TrustStore {
    TrustStore(keys: [IssuerKey(kid: kid, publicKey: CredentialIssuer.issuerPublicKey(issuerSeed)!, notBefore: nil, notAfter: nil)!])
  }

  package func verifier(siteKey: Bool = true) -> CredentialVerifier {
    let crypto = SodiumCredentialCrypto(siteSecretKey: siteKey ? siteSecret : nil)
    let v = CredentialVerifier(settings: settings, sign1: Sign1Verifier(trust: trust, codec: LibCBOR(), crypto: crypto))
    v.hasSiteKey = crypto.hasSiteKey
    v.replayStore = try! ReplayStepFile(path: stateDirectory + "/replay-steps-\(verifiers)", cache: v.replay)
    verifiers += 1
    return v
  }

  /// Where this site's verifiers keep their durable state (a fresh directory per site).
  package let stateDirectory = temporaryDirectory("credentials")
  private var verifiers = 0

  package func claims(_ subject: String = "alice", valid: ClosedRange<Int64>? = nil, id: [UInt8] = [1, 2, 3, 4]) -> PassClaims {
    var c = PassClaims(subject: subject, expires: valid?.upperBound ?? now + 3600, id: id)
    c.notBefore = valid?.lowerBound ?? now - 60
    c.label = subject.uppercased()
    return c
  }

  package func issue(_ c: PassClaims) throws -> IssuedPass { try CredentialIssuer.issue(c, kid: kid, issuerSeed: issuerSeed) }

  package func rotating(_ subject: String = "carol", digits: Int = 6, id: [UInt8] = [9, 9, 9]) throws -> IssuedPass {
    var c = claims(subject, id: id)
    c.rotatingDigits = digits
    c.sitePublicKey = CredentialIssuer.sitePublicKey(siteSecret)!
    return try issue(c)
  }

  /// The TOTP a holder's wallet shows at `time` (RFC 6238 over the seed the issuer made).
  package func totp(_ pass: IssuedPass, at time: Int64) -> UInt32 {
    pass.seed.withUnsafeBytes {
      TOTP.value(key: $0, step: time / 30, digits: pass.digits, crypto: SodiumCredentialCrypto(siteSecretKey: nil))
    }
  }
}

package func decide(_ v: CredentialVerifier, _ text: String, at now: Int64, mode: DecideMode = .admit) -> Verdict? {
  Array(text.utf8).withUnsafeBytes { v.decide($0, nowUnixSeconds: now, mode: mode)?.verdict }
}

package func problem(_ v: CredentialVerifier, _ text: String, at now: Int64) -> CredentialProblem? {
  Array(text.utf8).withUnsafeBytes { b in
    do throws(CredentialProblem) {
      try v.verify(b, now: now, mode: .inspect)
      return nil
    } catch { return error }
  }
}
