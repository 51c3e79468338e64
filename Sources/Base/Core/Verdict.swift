/// Why a payload was granted or denied.
public enum Verdict: UInt8, Sendable, Equatable {
  case granted = 0
  case deniedUnknown = 1
  case deniedExpired = 2
  case deniedNotYetValid = 3
  // Signed credentials (docs/credentials.md).
  case deniedMalformed = 4
  case deniedSignature = 5
  case deniedUnknownIssuer = 6
  case deniedAlgorithm = 7
  case deniedRevoked = 8
  case deniedReplayed = 9
  case deniedTOTP = 10
  case deniedZone = 11
  case deniedClock = 12
  case deniedIssuerKey = 13
  case deniedUsed = 14
  case deniedUnavailable = 15
  /// Known, but outside its schedule's window (or on a holiday): Schedule.swift.
  case deniedOutsideSchedule = 20
  /// The fleet's deny-all-but-static offline policy is in force and the entry is not `static`.
  case deniedOffline = 21
  /// Turnstile anti-passback: this credential passed this way too recently (`timed`), or its
  /// last passage was in this direction (`hard`).
  case deniedPassback = 22
  /// A lockdown is in force and the credential is not marked for it.
  case deniedLockdown = 23
  /// The pass is good and a PIN is asked for on the keypad (docs/admin.md, "PIN"): the
  /// decision that follows is `granted` or a `denied-pin…`. Neither a grant nor a denial.
  case pinRequired = 24
  /// The PIN was wrong, not entered in time, or the credential has none where one is required.
  case deniedPin = 25
  /// Too many wrong PINs for this credential: refused until its lockout ends.
  case deniedPinLocked = 26
  /// The credential needs a PIN (an allow-list entry's `pin=`, a signed pass's PIN claim) and this
  /// reader cannot ask for one and check it (no keypad, or panel mode where the keys go to the
  /// panel): refused, fail-secure, never granted without its second factor.
  case deniedPinUnavailable = 27

  public var isGranted: Bool { self == .granted }

  /// Every verdict, for parsing the stable names back.
  public static let all: [Verdict] = [
    .granted, .deniedUnknown, .deniedExpired, .deniedNotYetValid,
    .deniedMalformed, .deniedSignature, .deniedUnknownIssuer, .deniedAlgorithm, .deniedRevoked, .deniedReplayed,
    .deniedTOTP, .deniedZone, .deniedClock, .deniedIssuerKey, .deniedUsed, .deniedUnavailable,
    .deniedOutsideSchedule, .deniedOffline, .deniedPassback, .deniedLockdown, .pinRequired, .deniedPin, .deniedPinLocked,
    .deniedPinUnavailable,
  ]

  /// The verdict whose `name` is `name` (the audit log's stored text), or nil.
  public init?(name: some StringProtocol) {
    guard let verdict = Self.all.first(where: { $0.name == name }) else { return nil }
    self = verdict
  }

  /// The stable text (console, journal, and the audit database's `verdict` column).
  public var name: String {
    switch self {
    case .granted: "granted"
    case .deniedUnknown: "denied-unknown"
    case .deniedExpired: "denied-expired"
    case .deniedNotYetValid: "denied-not-yet-valid"
    case .deniedMalformed: "denied-malformed"
    case .deniedSignature: "denied-signature"
    case .deniedUnknownIssuer: "denied-unknown-issuer"
    case .deniedAlgorithm: "denied-algorithm"
    case .deniedRevoked: "denied-revoked"
    case .deniedReplayed: "denied-replayed"
    case .deniedTOTP: "denied-totp"
    case .deniedZone: "denied-zone"
    case .deniedClock: "denied-clock"
    case .deniedIssuerKey: "denied-issuer-key"
    case .deniedUsed: "denied-used"
    case .deniedUnavailable: "denied-unavailable"
    case .deniedOutsideSchedule: "denied-outside-schedule"
    case .deniedOffline: "denied-offline"
    case .deniedPassback: "denied-passback"
    case .deniedLockdown: "denied-lockdown"
    case .pinRequired: "pin-required"
    case .deniedPin: "denied-pin"
    case .deniedPinLocked: "denied-pin-locked"
    case .deniedPinUnavailable: "denied-pin-unavailable"
    }
  }
}

/// Which rule a decision came from.
public enum DecisionSource: UInt8, Sendable {
  case none = 0
  case allowList = 1
  case credential = 2

  public var name: String {
    switch self {
    case .none: "none"
    case .allowList: "allow-list"
    case .credential: "credential"
    }
  }
}
