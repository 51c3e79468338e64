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
  public static let bytesMax = 256
  /// A message dated further ahead of this reader's clock is refused (clock skew allowance).
  public static let futureSecondsMax: Int64 = 300

  /// Why a message was refused.
  public enum Refusal: Error, Equatable, Sendable {
    case oversized, malformed, ownReader, future, badMAC, retained, otherKey, oldVersion
    public var reason: String {
      switch self {
      case .oversized: "over \(SitePassage.bytesMax) bytes"
      case .malformed: "not a site passage"
      case .ownReader: "this reader's own"
      case .future: "dated more than \(SitePassage.futureSecondsMax) s ahead"
      case .badMAC: "the MAC does not verify (another site key?)"
      case .retained: "retained"
      case .otherKey: "sent under another site key (its key id differs: a reader with an old or a wrong turnstile.site_key_file)"
      case .oldVersion: "the form of an earlier ScanGate (scangate-passage 1): upgrade every reader of the site"
      }
    }
  }

  /// The text the MAC covers (everything but ` <mac>`).
  public var signedText: String {
    Self.magic + keyID + " " + reader + " " + direction.name + " " + String(unixSeconds) + " " + Self.hex(identity)
  }

  /// The whole message, given the MAC over `signedText`.
  public func message(mac: Digest) -> [UInt8] { Array((signedText + " " + Self.hex(mac)).utf8) }

  static func hex(_ d: Digest) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(64)
    for i in 0..<32 {
      out.append(digits[Int(d.byte(i) >> 4)])
      out.append(digits[Int(d.byte(i) & 15)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Parses a message strictly; `ownReader` is refused (a reader ignores its own), as is one
  /// dated more than `futureSecondsMax` after `nowUnixSeconds`. The MAC is read, not checked.
  public static func parse(_ bytes: [UInt8], ownReader: String, nowUnixSeconds: Int64) -> Result<SitePassage, Refusal> {
    guard bytes.count <= bytesMax else { return .failure(.oversized) }
    let m = Array(magic.utf8)
    if bytes.starts(with: previousMagic.utf8) { return .failure(.oldVersion) }
    guard bytes.count > m.count, Array(bytes.prefix(m.count)) == m else { return .failure(.malformed) }
    let all = bytes[m.count...].split(separator: 0x20, omittingEmptySubsequences: false)
    guard all.count == 6 else { return .failure(.malformed) }
    // Key id: 16 lowercase hex digits.
    let k = all[all.startIndex]
    guard k.count == 16, k.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return .failure(.malformed) }
    let fields = Array(all.dropFirst())
    // Reader id: 1–64 of [A-Za-z0-9._-].
    let r = fields[0]
    guard (1...64).contains(r.count), r.allSatisfy(isIDByte) else { return .failure(.malformed) }
    let direction: PassageDirection
    switch String(decoding: fields[1], as: UTF8.self) {
    case "entry": direction = .entry
    case "exit": direction = .exit
    default: return .failure(.malformed)
    }
    let s = fields[2]
    guard (1...12).contains(s.count), s.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), s.first != 0x30 || s.count == 1 else {
      return .failure(.malformed)
    }
    var seconds: Int64 = 0
    for b in s { seconds = seconds * 10 + Int64(b - 0x30) }
    guard let identity = digest(fields[3]), let mac = digest(fields[4]) else { return .failure(.malformed) }
    let reader = String(decoding: r, as: UTF8.self)
    guard reader != ownReader else { return .failure(.ownReader) }
    guard seconds <= nowUnixSeconds &+ futureSecondsMax else { return .failure(.future) }
    var p = SitePassage(keyID: String(decoding: k, as: UTF8.self), reader: reader, direction: direction, unixSeconds: seconds, identity: identity)
    p.mac = mac
    p.signedCount = bytes.count - 65
    return .success(p)
  }

  private static func isIDByte(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x2D
  }

  /// 64 lowercase hex digits, or nil.
  private static func digest(_ field: ArraySlice<UInt8>) -> Digest? {
    guard field.count == 64 else { return nil }
    var bytes = InlineArray<32, UInt8>(repeating: 0)
    var i = 0
    for b in field {
      let v: UInt8
      switch b {
      case 0x30...0x39: v = b - 0x30
      case 0x61...0x66: v = b - 0x61 + 10
      default: return nil
      }
      bytes[i / 2] = i % 2 == 0 ? v << 4 : bytes[i / 2] | v
      i += 1
    }
    return withUnsafeBytes(of: bytes) { Digest(bytes: $0) }
  }
}
