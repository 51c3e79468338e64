import ScanBase

/// What a PIN typed after a pass is checked against (docs/admin.md "PIN after the pass"): a MAC
/// of the PIN, never the PIN.
/// - An allow-list entry's `pin=`: HMAC-SHA-256 under the site's PIN key (the readers' secret),
///   bound to the credential's digest; `salt` is nil.
/// - A signed pass's PIN claim, opened with the site key: HMAC-SHA-256 under the pass's own
///   random `salt`, bound to nothing else (the pass's bytes include the claim).
public struct PinVerifier: Equatable, Sendable {
  public var salt: Digest?
  public var mac: Digest

  public init(salt: Digest? = nil, mac: Digest) {
    self.salt = salt
    self.mac = mac
  }
}
