import ScanBase

/// What anti-passback does while the fleet link is not connected (`turnstile.passback_offline`),
/// when the readers of a site share passages (`turnstile.passback_site`).
public enum PassbackOffline: String, Sendable, CaseIterable {
  /// Every grant anti-passback would check is refused (`denied-offline`).
  case deny
  /// Decided on this reader's records alone (what it recorded and what it had learned), each
  /// such grant logged.
  case allow
  /// The timed rule (`passback_minutes`) on this reader's records, even when the mode is hard.
  case timed
}

/// Site-wide anti-passback, as configured in `[turnstile]`.
public struct SitePassbackSettings: Equatable, Sendable {
  /// Share passages with the site's other readers over the fleet link.
  public var enabled = false
  /// The site key (a secret file, the same on every reader of the site).
  public var keyFile = ""
  public var offline = PassbackOffline.deny
  public init() {}
}

/// How one grant is judged: anti-passback off, a check in `mode`, or refused outright.
public enum PassbackJudgement: Equatable, Sendable {
  case off
  case check(PassbackMode)
  /// The site's passages cannot be learned and the offline rule is `deny`.
  case denyOffline
}

extension SitePassbackSettings {
  /// The rule a grant is judged by, given the configured mode and whether the fleet link is
  /// connected now. Per reader (`enabled` false) the link does not matter.
  public func judgement(mode: PassbackMode, linkConnected: Bool) -> PassbackJudgement {
    guard mode != .off else { return .off }
    guard enabled, !linkConnected else { return .check(mode) }
    switch offline {
    case .deny: return .denyOffline
    case .allow: return .check(mode)
    case .timed: return .check(.timed)
    }
  }
}

/// One passage shared between the readers of a site: the credential's identity keyed under a key
/// derived from the site key, which way, when (wall seconds) and which reader saw it;
/// authenticated with a MAC under another key derived from it, and naming the site key by its id.
///
/// The message is one line of ASCII, nothing else (no trailing newline), at most `bytesMax`:
///
///     scangate-passage 2 <key id: 16 hex> <reader id> <entry|exit> <unix seconds> <identity: 64 hex> <mac: 64 hex>
///
/// The MAC covers every byte before the space that precedes it. Anything else is refused whole.
public struct SitePassage: Equatable, Sendable {
  /// The site key's id (16 lowercase hex digits): the key the sender holds.
  public var keyID: String
  public var reader: String
  public var direction: PassageDirection
  public var unixSeconds: Int64
  public var identity: Digest
  public var mac: Digest
  /// How many leading bytes of the message the MAC covers.
  public var signedCount: Int

  public init(keyID: String, reader: String, direction: PassageDirection, unixSeconds: Int64, identity: Digest) {
    self.keyID = keyID
    self.reader = reader
    self.direction = direction
    self.unixSeconds = unixSeconds
    self.identity = identity
    mac = .zero
    signedCount = 0
  }

  public static let magic = "scangate-passage 2 "
  /// The form before key ids (derived keys): refused with its own reason, so that a site knows a
  /// reader is not yet upgraded.
  static let previousMagic = "scangate-passage 1 "
  public static let bytesMax = SiteMessage.bytesMax
  public static let futureSecondsMax = SiteMessage.futureSecondsMax
  public typealias Refusal = SiteMessage.Refusal

  /// The text the MAC covers (everything but ` <mac>`).
  public var signedText: String {
    Self.magic + keyID + " " + reader + " " + direction.name + " " + String(unixSeconds) + " " + Self.hex(identity)
  }

  /// The whole message, given the MAC over `signedText`.
  public func message(mac: Digest) -> [UInt8] { Array((signedText + " " + Self.hex(mac)).utf8) }

  static func hex(_ d: Digest) -> String { SiteMessage.hex(d) }

  /// Parses a message strictly; `ownReader` is refused (a reader ignores its own), as is one
  /// dated more than `futureSecondsMax` after `nowUnixSeconds`. The MAC is read, not checked.
  public static func parse(_ bytes: [UInt8], ownReader: String, nowUnixSeconds: Int64) -> Result<SitePassage, Refusal> {
    let frame: SiteMessage
    switch SiteMessage.parse(bytes, magic: magic, previousMagic: previousMagic, fieldCount: 3, ownReader: ownReader) {
    case .success(let f): frame = f
    case .failure(let refusal): return .failure(refusal)
    }
    let direction: PassageDirection
    switch String(decoding: frame.fields[0], as: UTF8.self) {
    case "entry": direction = .entry
    case "exit": direction = .exit
    default: return .failure(.malformed)
    }
    guard let seconds = SiteMessage.decimal(frame.fields[1]), let identity = SiteMessage.digest(frame.fields[2]) else {
      return .failure(.malformed)
    }
    guard seconds <= nowUnixSeconds &+ futureSecondsMax else { return .failure(.future) }
    var p = SitePassage(keyID: frame.keyID, reader: frame.reader, direction: direction, unixSeconds: seconds, identity: identity)
    p.mac = frame.mac
    p.signedCount = frame.signedCount
    return .success(p)
  }
}
