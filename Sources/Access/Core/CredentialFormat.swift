import ScanBase

/// The SG1 credential's text forms and claims (docs/credentials.md is the specification).
///
///   static:   `SG1:` base45(COSE_Sign1)
///   rotating: `SG1R` d (one digit, 6–8) then exactly d TOTP digits, `:`, base45(COSE_Sign1)
///
/// The TOTP field sits between two fixed markers and has the length its own prefix states, so
/// it can never be read as part of the base45 body (whose alphabet has digits and `:` too).
public enum CredentialText {
  public static let staticPrefix: [UInt8] = Array("SG1:".utf8)
  public static let rotatingPrefix: [UInt8] = Array("SG1R".utf8)
  /// Longest text accepted (the decoder's default payload bound; a version-22 alphanumeric QR code).
  public static let textBytesMax = 1_024
  /// Longest decoded COSE message accepted.
  public static let messageBytesMax = textBytesMax / 3 * 2

  /// Whether `payload` claims to be an SG1 credential (starts with `SG1`).
  public static func isCredential(_ payload: UnsafeRawBufferPointer) -> Bool {
    payload.count >= 4 && payload[0] == 0x53 && payload[1] == 0x47 && payload[2] == 0x31
  }

  public struct Parsed: Sendable {
    /// Where the base45 body is in the payload.
    public var body: Range<Int>
    /// The TOTP value presented (rotating form), and its digit count.
    public var totp: UInt32?
    public var digits: Int
  }

  /// Splits a presented text into its TOTP field and base45 body.
  public static func parse(_ payload: UnsafeRawBufferPointer) throws(CredentialProblem) -> Parsed {
    guard payload.count <= textBytesMax else { throw .oversized }
    guard isCredential(payload) else { throw .notCredential }
    if payload[3] == 0x3A { return Parsed(body: 4..<payload.count, totp: nil, digits: 0) }
    guard payload[3] == 0x52, payload.count >= 5 else { throw .malformedText }
    let d = Int(payload[4]) - 0x30
    guard (6...8).contains(d), payload.count > 5 + d, payload[5 + d] == 0x3A else { throw .malformedText }
    var value: UInt32 = 0
    for i in 5..<(5 + d) {
      let c = payload[i]
      guard c >= 0x30 && c <= 0x39 else { throw .malformedText }
      value = value * 10 + UInt32(c - 0x30)
    }
    return Parsed(body: (6 + d)..<payload.count, totp: value, digits: d)
  }
}

/// Every way a credential can be refused; each maps to a verdict (several details share one).
public enum CredentialProblem: Error, Equatable, Sendable {
  case notCredential  // not SG1: another policy decides
  case malformedText  // the prefix or the TOTP field
  case base45  // not base45 (bad character, bad length, a group over range): truncated, too
  case oversized  // over a size bound (text, message, a string, a count, nesting)
  case cbor(CBORProblem)  // not the COSE_Sign1 / CWT structure
  case algorithm  // alg is not EdDSA, or is missing, or headers are unprotected
  case unknownIssuer  // kid not in the trust file
  case issuerKeyNotValid  // the key's validity window does not hold now
  case signature  // Ed25519 verification failed
  case expired
  case notYetValid
  case clockUntrusted  // the clock is not synchronised and the policy denies
  case revoked
  case zone  // none of the pass's zones is this reader's
  case outsideSchedule  // its zones name schedules, and none is open now
  case totpMissing  // a rotating pass without its TOTP value
  case totpUnexpected  // a TOTP value on a pass that does not rotate
  case totpWrong  // no step within the allowed skew gives that value
  case seal  // the rotation seed cannot be opened with the site key
  case replayed  // this (pass, step) or a later step was already accepted
  case used  // a single-use pass already used
  case unavailable  // a fixed cache or the single-use store cannot take it: refused, fail-secure
  case lockdown  // a lockdown is in force and the pass does not carry the lockdown claim
  case pinUnavailable  // the pass carries a PIN claim and this reader cannot ask for a PIN
  case usesOffline  // uses counted site-wide, the fleet link down, and the offline rule refuses

  public var verdict: Verdict {
    switch self {
    case .notCredential: .deniedUnknown
    case .malformedText, .base45, .oversized, .cbor, .totpUnexpected: .deniedMalformed
    case .algorithm: .deniedAlgorithm
    case .unknownIssuer: .deniedUnknownIssuer
    case .issuerKeyNotValid: .deniedIssuerKey
    case .signature, .seal: .deniedSignature
    case .expired: .deniedExpired
    case .notYetValid: .deniedNotYetValid
    case .clockUntrusted: .deniedClock
    case .revoked: .deniedRevoked
    case .zone: .deniedZone
    case .outsideSchedule: .deniedOutsideSchedule
    case .totpMissing, .totpWrong: .deniedTOTP
    case .replayed: .deniedReplayed
    case .used: .deniedUsed
    case .unavailable: .deniedUnavailable
    case .lockdown: .deniedLockdown
    case .pinUnavailable: .deniedPinUnavailable
    case .usesOffline: .deniedOffline
    }
  }

  /// The stable text (`credential show`, tests).
  public var name: String {
    switch self {
    case .notCredential: "not-a-credential"
    case .malformedText: "malformed-text"
    case .base45: "bad-base45"
    case .oversized: "oversized"
    case .cbor(let p):
      switch p {
      case .malformed: "bad-cbor"
      case .unexpected: "unexpected-structure"
      case .oversized: "oversized"
      case .trailing: "trailing-bytes"
      }
    case .algorithm: "bad-algorithm"
    case .unknownIssuer: "unknown-issuer"
    case .issuerKeyNotValid: "issuer-key-not-valid"
    case .signature: "bad-signature"
    case .expired: "expired"
    case .notYetValid: "not-yet-valid"
    case .clockUntrusted: "clock-untrusted"
    case .revoked: "revoked"
    case .zone: "wrong-zone"
    case .outsideSchedule: "outside-schedule"
    case .totpMissing: "totp-missing"
    case .totpUnexpected: "totp-unexpected"
    case .totpWrong: "totp-wrong"
    case .seal: "seal-not-opened"
    case .replayed: "replayed"
    case .used: "used"
    case .unavailable: "unavailable"
    case .lockdown: "lockdown"
    case .pinUnavailable: "pin-unavailable"
    case .usesOffline: "uses-offline"
    }
  }
}

/// CBOR labels: COSE (RFC 9052), CWT (RFC 8392), and ScanGate's private claim.
public enum CredentialLabel {
  public static let coseSign1Tag: UInt64 = 18
  public static let headerAlg: UInt64 = 1
  public static let headerKid: UInt64 = 4
  /// COSE algorithm EdDSA (RFC 9053), encoded as negative integer argument 7.
  public static let algEdDSA: Int64 = -8
  public static let iss: Int64 = 1, sub: Int64 = 2, aud: Int64 = 3, exp: Int64 = 4, nbf: Int64 = 5, iat: Int64 = 6, cti: Int64 = 7
  /// The private claim (RFC 8392 §4: below -65536) holding ScanGate's own map.
  public static let scangate: Int64 = -65_537
  // Keys in the private map.
  public static let label: UInt64 = 1, zones: UInt64 = 2, singleUse: UInt64 = 3, seed: UInt64 = 4, digits: UInt64 = 5,
    card: UInt64 = 6, lockdown: UInt64 = 7, uses: UInt64 = 8, firstUseWindow: UInt64 = 9, pin: UInt64 = 10
}

/// The verified claims of one credential, in fixed storage (nothing allocated).
public struct CredentialClaims: Sendable {
  public static let subjectBytesMax = 64
  public static let idBytesMax = 16
  public static let kidBytesMax = 16
  public static let zonesMax = 8
  public static let zoneBytesMax = 32
  public static let zoneStorageBytes = 128
  /// A sealed box (32 + 16 bytes) around a seed of at most 64 bytes.
  public static let sealedSeedBytesMax = 112
  /// A sealed box (32 + 16 bytes) around a PIN verifier: its salt (32) and MAC (32).
  public static let sealedPinBytes = 112
  /// A counted pass opens at most this often (the use count is kept in 16 bits).
  public static let usesMax = 65_535
  /// A first-use window: from a minute to a year.
  public static let firstUseWindowMin: Int64 = 60
  public static let firstUseWindowMax: Int64 = 366 * 86_400

  public var kid = InlineArray<16, UInt8>(repeating: 0)
  public var kidCount = 0
  public var subject = InlineArray<64, UInt8>(repeating: 0)
  public var subjectCount = 0
  public var id = InlineArray<16, UInt8>(repeating: 0)
  public var idCount = 0
  public var label = LabelLimits.Storage(repeating: 0)
  public var labelCount = 0
  public var notBefore: Int64? = nil
  public var expires: Int64 = 0
  public var issuedAt: Int64? = nil
  /// Zone names packed end to end; `zoneEnds[i]` is where zone i ends.
  public var zoneBytes = InlineArray<128, UInt8>(repeating: 0)
  public var zoneEnds = InlineArray<8, UInt8>(repeating: 0)
  public var zoneCount = 0
  public var singleUse = false
  /// How many times the pass opens (a guest pass: `credential issue --uses N`); 0: not counted.
  public var uses = 0
  /// Seconds the pass stays valid from its first use (a day ticket); 0: none.
  public var firstUseWindow: Int64 = 0
  /// Granted during a lockdown (docs/turnstiles.md).
  public var lockdown = false
  public var sealedSeed = InlineArray<112, UInt8>(repeating: 0)
  public var sealedSeedCount = 0
  /// A PIN after the pass (`credential issue --pin`): its verifier sealed to the site key, so
  /// that the pass (a screenshot of it) holds nothing a PIN can be guessed from.
  public var sealedPin = InlineArray<112, UInt8>(repeating: 0)
  public var hasPin = false
  /// TOTP digits (6–8) of a rotating pass; 0 when it does not rotate.
  public var digits = 0
  public var cardFacility: UInt32? = nil
  public var cardNumber: UInt64? = nil

  public init() {}

  public var rotates: Bool { sealedSeedCount > 0 }
  /// Its uses are counted durably (single use, a number of uses, or a first-use window).
  public var counted: Bool { singleUse || uses > 0 || firstUseWindow > 0 }
  /// How many times it opens: 1 for single use, 0 for no limit.
  public var usesAllowed: Int { singleUse ? 1 : uses }

  public func withZone<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    let start = i == 0 ? 0 : Int(zoneEnds[i - 1])
    let end = Int(zoneEnds[i])
    return withUnsafeBytes(of: zoneBytes) { body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
  }

  // Text views for tools and tests (these allocate; the hot path never calls them).
  public var kidText: String { Self.string(kid, kidCount) }
  public var subjectText: String { Self.string(subject, subjectCount) }
  public var labelText: String { withUnsafeBytes(of: label) { String(decoding: $0[0..<labelCount], as: UTF8.self) } }
  public var idHex: String { withUnsafeBytes(of: id) { Hex.string(UnsafeRawBufferPointer(rebasing: $0[0..<idCount])) } }
  public var zones: [String] { (0..<zoneCount).map { i in withZone(i) { String(decoding: $0, as: UTF8.self) } } }

  private static func string<let n: Int>(_ storage: InlineArray<n, UInt8>, _ count: Int) -> String {
    withUnsafeBytes(of: storage) { String(decoding: $0[0..<count], as: UTF8.self) }
  }
}
