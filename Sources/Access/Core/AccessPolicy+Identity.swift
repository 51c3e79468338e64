import ScanBase

extension AccessPolicies {
  /// Who `decision` was about, stable across the codes a person shows (anti-passback keys on
  /// it): for an allow-list entry, the payload's SHA-256 (`digest`, which its entry matched); for
  /// a signed pass, the SHA-256 of its subject (`sub`), or of its id (`cti`) when it names none,
  /// so each 30-second code of a rotating pass is the same person. Nil when no rule decided or
  /// the pass's claims are not the last verified. The owner keys it (`PayloadTagger`) before it
  /// keeps it anywhere. Nothing allocates.
  public func identity(_ decision: AccessDecision, digest: Digest, digester: some PayloadDigester) -> Digest? {
    switch decision.source {
    case .none: return nil
    case .allowList: return digest
    case .credential:
      guard let credentials, credentials.lastVerified else { return nil }
      let claims = credentials.last
      return withUnsafeTemporaryAllocation(byteCount: 4 + CredentialClaims.subjectBytesMax, alignment: 1) { buffer in
        // A prefix keeps a subject and an id with the same bytes apart (and both apart from a payload).
        let useSubject = claims.subjectCount > 0
        let prefix: StaticString = useSubject ? "sub:" : "cti:"
        for i in 0..<4 { buffer[i] = prefix.utf8Start[i] }
        let n = useSubject ? claims.subjectCount : claims.idCount
        withUnsafeBytes(of: useSubject ? claims.subject : InlineArray<64, UInt8>(repeating: 0)) { subject in
          withUnsafeBytes(of: claims.id) { id in
            for i in 0..<n { buffer[4 + i] = useSubject ? subject[i] : id[i] }
          }
        }
        return digester.sha256(UnsafeRawBufferPointer(rebasing: buffer[0..<(4 + n)]))
      }
    }
  }
}
