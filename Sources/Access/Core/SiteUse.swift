import ScanBase

/// Where a counted pass's uses are counted (`credentials.uses_scope`).
public enum UsesScope: String, Sendable, CaseIterable {
  /// On this reader alone: `--uses 3` opens three times at each reader.
  case reader
  /// Across the readers of the site, over the fleet's site topic (docs/credentials.md, "Visitors
  /// across a site"): `--uses 3` opens three times in all.
  case site
}

/// What a counted pass meets while the fleet link is not connected (`credentials.uses_offline`),
/// when uses are counted site-wide; the same rule as anti-passback's `passback_offline`.
public enum UsesOffline: String, Sendable, CaseIterable {
  /// Every counted pass is refused (`denied-offline`): a use elsewhere may not have reached here.
  case deny
  /// Counted on this reader's records alone (its own uses and those it had learned), each such
  /// grant logged.
  case allow
}

/// One use of a counted pass, shared between the readers of a site: the pass's id keyed under a
/// key derived from the site key (never the id itself), when it was used (Unix milliseconds, which
/// also tells one use from another), and until when the pass can verify at all (the record's
/// lifetime); authenticated with a MAC under another key derived from it (`SiteMessage`):
///
///     scangate-use 1 <key id: 16 hex> <reader id> <unix ms> <expires: unix s> <identity: 64 hex> <mac: 64 hex>
public struct SiteUse: Equatable, Sendable {
  public var keyID: String
  public var reader: String
  public var unixMilliseconds: Int64
  public var expires: Int64
  public var identity: Digest
  public var mac: Digest
  public var signedCount: Int

  public init(keyID: String, reader: String, unixMilliseconds: Int64, expires: Int64, identity: Digest) {
    self.keyID = keyID
    self.reader = reader
    self.unixMilliseconds = unixMilliseconds
    self.expires = expires
    self.identity = identity
    mac = .zero
    signedCount = 0
  }

  public static let magic = "scangate-use 1 "

  /// The text the MAC covers (everything but ` <mac>`).
  public var signedText: String {
    Self.magic + keyID + " " + reader + " " + String(unixMilliseconds) + " " + String(expires) + " " + SiteMessage.hex(identity)
  }

  /// The whole message, given the MAC over `signedText`.
  public func message(mac: Digest) -> [UInt8] { Array((signedText + " " + SiteMessage.hex(mac)).utf8) }

  /// Parses a message strictly (`SiteMessage`); one dated more than `SiteMessage.futureSecondsMax`
  /// after `nowUnixSeconds` is refused. The MAC is read, not checked.
  public static func parse(_ bytes: [UInt8], ownReader: String, nowUnixSeconds: Int64) -> Result<SiteUse, SiteMessage.Refusal> {
    let frame: SiteMessage
    switch SiteMessage.parse(bytes, magic: magic, fieldCount: 3, ownReader: ownReader) {
    case .success(let f): frame = f
    case .failure(let refusal): return .failure(refusal)
    }
    guard let ms = SiteMessage.decimal(frame.fields[0], digitsMax: 15), let expires = SiteMessage.decimal(frame.fields[1]),
      let identity = SiteMessage.digest(frame.fields[2])
    else { return .failure(.malformed) }
    guard ms / 1000 <= nowUnixSeconds &+ SiteMessage.futureSecondsMax else { return .failure(.future) }
    var u = SiteUse(keyID: frame.keyID, reader: frame.reader, unixMilliseconds: ms, expires: expires, identity: identity)
    u.mac = frame.mac
    u.signedCount = frame.signedCount
    return .success(u)
  }
}
