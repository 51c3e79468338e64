import ScanCore
import ScanLinux

/// Signed credentials on the loop: the trust file and revocation list are reloaded with the
/// allow-list (SIGHUP, RELOAD, a file written or moved into place); a bad file keeps what is live.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// Reloads the trust file and the revocation list (when configured); records what happened.
  public mutating func reloadCredentials() {
    guard let verifier = engine.policy.credentials else { return }
    let settings = verifier.settings
    let now = engine.wall.unixSeconds()
    if let path = settings.trustFile {
      do throws(FileError) {
        verifier.sign1.trust = try CredentialFiles.readTrust(path)
        engine.record(.state, code: FaultCode.trustLoaded.rawValue)
      } catch {
        verifier.lastFileError = error.description
        engine.record(.fault, code: FaultCode.trustRejected.rawValue)
        note("credentials: trust file \(error); the live issuers stay (\(verifier.sign1.trust.keys.count))")
      }
    }
    guard let path = settings.revocationFile else { return }
    do throws(FileError) {
      // Nothing older than the highest version ever accepted, before or after a restart.
      guard let mark = verifier.revocationMark else {
        throw FileError(path: path, reason: "no durable state for the revocation version (state.directory): refused")
      }
      let bytes = try readWholeFile(path, maxBytes: CredentialFiles.revocationBytesMax)
      let floor = max(verifier.revocation.version, mark.highest)
      let parsed = bytes.withUnsafeBytes { b in
        Result { () throws(ParseError) in
          try CredentialFiles.parseRevocation(b, sign1: verifier.sign1, now: verifier.time.judged(now), current: floor)
        }
      }
      guard case .success(let list) = parsed else {
        if case .failure(let e) = parsed { throw FileError(path: path, reason: e.message) }
        return
      }
      guard mark.raise(to: list.version) else {
        throw FileError(path: path, reason: "version \(list.version) could not be kept durably: refused")
      }
      // A signed issue time is evidence the true time is at least that (TrustedTime); one more
      // than a day ahead of the clock says more about the issuer's clock, and is not taken.
      if list.issuedAt <= now.saturatingAdd(TrustedTime.evidenceAheadSecondsMax) { verifier.time.raise(to: list.issuedAt) }
      verifier.revocation = list
      verifier.ready = true
      engine.record(.state, code: FaultCode.revocationLoaded.rawValue)
    } catch {
      verifier.lastFileError = error.description
      engine.record(.fault, code: FaultCode.revocationRejected.rawValue)
      let kept = verifier.ready ? "the live list stays (v\(verifier.revocation.version))" : "every signed pass is refused until one loads"
      note("credentials: revocation list \(error); \(kept)")
    }
  }

  static func credentialsStatus(_ c: CredentialVerifier, now: Int64) -> String {
    var s = "issuers \(c.sign1.trust.keys.count)"
    s += c.settings.revocationFile == nil ? ", no revocation list" : ", revocation v\(c.revocation.version) (\(c.revocation.ids.count) ids)"
    if !c.ready { s += " NOT LOADED: every signed pass is refused" }
    s += "; clock \(c.clock.state(now: now)) (policy \(c.settings.timePolicy.rawValue))"
    s += "; site key \(c.hasSiteKey ? "loaded" : "missing")"
    s += "; replay cache \(c.replay.count)/\(c.replay.capacity)\(c.replayStore == nil ? " NOT DURABLE: rotating passes are refused" : "")"
    s += "; accepted \(c.accepted), refused \(c.refused)"
    if let p = c.lastProblem { s += "; last refusal \(p.name)" }
    if let e = c.lastFileError { s += "; last file error: \(e)" }
    return s
  }
}
