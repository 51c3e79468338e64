import ScanAccessLinux
import ScanCore

/// The fleet's signed envelopes verified with the signed-credential issuer keys: COSE_Sign1,
/// Ed25519, `kid` in the protected header, the key in the trust file (re-read for every
/// envelope, so a new trust file counts at once; a trust file that does not load refuses
/// everything). The payload bound is the link's message bound (`fleet.message_bytes_max`): an
/// allow-list bundle is far larger than a pass.
public final class Sign1EnvelopeVerifier: SignedEnvelopeVerifier {
  public let trustPath: String
  private let sign1: Sign1Verifier

  public init(trustPath: String, payloadBytesMax: Int) {
    self.trustPath = trustPath
    sign1 = Sign1Verifier(
      trust: TrustStore(), codec: LibCBOR(), crypto: SodiumCredentialCrypto(siteSecretKey: nil), payloadBytesMax: payloadBytesMax)
  }

  public func verify(_ envelope: [UInt8], nowUnixSeconds: Int64) -> Result<VerifiedEnvelope, EnvelopeRefusal> {
    do { sign1.trust = try CredentialFiles.readTrust(trustPath) } catch {
      return .failure(EnvelopeRefusal("trust file \(error)"))
    }
    return envelope.withUnsafeBytes { bytes in
      do throws(CredentialProblem) {
        let parts = try sign1.verify(bytes, now: nowUnixSeconds)
        let kid = String(decoding: envelope[parts.kid], as: UTF8.self)
        return .success(VerifiedEnvelope(payload: Array(envelope[parts.payload]), keyID: kid))
      } catch {
        return .failure(EnvelopeRefusal(error.name))
      }
    }
  }
}
