import ScanBase

/// The commands Home Assistant may send a reader (`fleet.home_assistant_commands`, none by
/// default), each on its own topic `<topic_prefix>/<reader id>/ha/<name>`.
public enum HomeAssistantCommand: String, Sendable, CaseIterable {
  /// A `lock` entity "Door": UNLOCK or OPEN pulses the strike (as the console's OPEN); its state
  /// is the strike's. With `home_assistant_code_file`, Home Assistant asks for the code.
  case open
  /// A `switch` "Lockdown": ON latches a lockdown, OFF lifts one that Home Assistant latched.
  case lockdown
  /// A `button` "Forgive anti-passback": the holder the turnstile denied last may pass again.
  case passbackForgive = "passback-forgive"
  /// A `button` "Reset occupancy": the turnstile's count back to 0.
  case occupancyReset = "occupancy-reset"

  public func topic(_ topics: FleetTopics) -> String { topics.base + "/ha/" + rawValue }
}

/// What one command message asks, parsed whole: anything but the exact forms is refused.
public enum HomeAssistantRequest: Equatable, Sendable {
  case open
  /// The lock's LOCK: nothing to do (the strike locks itself after every pulse).
  case lock
  case lockdown(on: Bool)
  case forgiveLast
  case occupancyReset

  /// Bytes in a command message at most (`UNLOCK` and a 12-digit code fit many times over).
  public static let bytesMax = 64

  /// `command`'s message: the lock sends `UNLOCK`, `OPEN` or `LOCK`, then a space and the code
  /// when Home Assistant asks for one (its `command_template`); the switch `ON` or `OFF`; a
  /// button `PRESS`. Returns the request and the code's bytes (empty: none given).
  public static func parse(_ command: HomeAssistantCommand, _ payload: [UInt8]) -> Result<(HomeAssistantRequest, code: [UInt8]), HomeAssistantRefusal> {
    guard payload.count <= bytesMax else { return .failure(.malformed) }
    var word = payload[...]
    var code: [UInt8] = []
    if let space = payload.firstIndex(of: 0x20) {
      word = payload[..<space]
      code = Array(payload[(space + 1)...])
      guard command == .open, (1...HomeAssistantCode.digitsMax).contains(code.count), code.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
      else { return .failure(.malformed) }
    }
    let text = String(decoding: word, as: UTF8.self)
    let request: HomeAssistantRequest? =
      switch command {
      case .open: text == "UNLOCK" || text == "OPEN" ? .open : text == "LOCK" ? .lock : nil
      case .lockdown: text == "ON" ? .lockdown(on: true) : text == "OFF" ? .lockdown(on: false) : nil
      case .passbackForgive: text == "PRESS" ? .forgiveLast : nil
      case .occupancyReset: text == "PRESS" ? .occupancyReset : nil
      }
    guard let request else { return .failure(.malformed) }
    return .success((request, code))
  }
}

/// Why a command message was not acted on (the journal's words).
public enum HomeAssistantRefusal: Error, Equatable, Sendable {
  case malformed
  case retained
  case notListed
  case tooSoon
  case codeNeeded
  case wrongCode(lockedForSeconds: Int)
  case codeLockedOut(seconds: Int)
  case unauthenticatedBroker

  public var reason: String {
    switch self {
    case .malformed: "not a command this entity sends"
    case .retained: "a retained command is never acted on"
    case .notListed: "not in fleet.home_assistant_commands"
    case .tooSoon: "one command a second at most"
    case .codeNeeded: "the code is missing"
    case .wrongCode(let s): s > 0 ? "wrong code: codes refused for \(s) s" : "wrong code"
    case .codeLockedOut(let s): "codes refused for \(s) s more after wrong ones"
    case .unauthenticatedBroker: "the broker is not authenticated"
    }
  }
}

/// The code Home Assistant's lock must send: 4 to 12 digits from a secret file.
public struct HomeAssistantCode: Sendable {
  public static let digitsMax = 12
  let digits: [UInt8]

  /// The file's bytes, a trailing newline allowed; nil unless 4 to 12 digits.
  public init?(fileBytes: [UInt8]) {
    var d = fileBytes
    if d.last == 0x0A { d.removeLast() }
    guard (4...Self.digitsMax).contains(d.count), d.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    digits = d
  }

  /// Compared in time that depends on the lengths only, never on where the bytes differ.
  public func matches(_ given: [UInt8]) -> Bool {
    var diff = UInt8(given.count == digits.count ? 0 : 1)
    for i in 0..<digits.count { diff |= digits[i] ^ (i < given.count ? given[i] : 0) }
    return diff == 0
  }
}

/// The rate and code limits for Home Assistant's commands, on the monotonic clock: one command
/// a second (any message on a command topic counts, so wrong codes are tried at most once a
/// second); three wrong codes in a row refuse every code for 30 s, doubling with each further
/// wrong one up to 15 min; a right code ends it. Kept in memory: a restart needs the reader's
/// own host, which no one on the broker has.
public struct HomeAssistantGate: Sendable {
  public static let spacingMilliseconds = 1_000
  public static let wrongCodesFree = 3
  public static let lockoutSecondsFirst = 30
  public static let lockoutSecondsMax = 900

  private var lastMessage: Instant? = nil
  public private(set) var wrongInARow = 0
  private var lockedUntil: Instant? = nil

  public init() {}

  /// Whether a message arriving now may be looked at (it is counted either way).
  public mutating func admit(now: Instant) -> HomeAssistantRefusal? {
    defer { lastMessage = now }
    if let last = lastMessage, now.milliseconds(since: last) < Self.spacingMilliseconds { return .tooSoon }
    return nil
  }

  /// Checks `given` against `code` (nil: no code configured: anything passes).
  public mutating func check(_ given: [UInt8], against code: HomeAssistantCode?, now: Instant) -> HomeAssistantRefusal? {
    guard let code else { return nil }
    if let until = lockedUntil, now < until {
      return .codeLockedOut(seconds: Int((until.milliseconds(since: now) + 999) / 1_000))
    }
    guard !given.isEmpty else { return .codeNeeded }
    if code.matches(given) {
      wrongInARow = 0
      lockedUntil = nil
      return nil
    }
    wrongInARow += 1
    guard wrongInARow >= Self.wrongCodesFree else { return .wrongCode(lockedForSeconds: 0) }
    let doublings = min(wrongInARow - Self.wrongCodesFree, 5)
    let seconds = min(Self.lockoutSecondsFirst << doublings, Self.lockoutSecondsMax)
    lockedUntil = now.adding(milliseconds: seconds * 1_000)
    return .wrongCode(lockedForSeconds: seconds)
  }
}
