/// Which way a person passes a turnstile.
public enum PassageDirection: UInt8, Sendable, CaseIterable {
  case entry = 0
  case exit = 1

  public var name: String {
    switch self {
    case .entry: "entry"
    case .exit: "exit"
    }
  }
  public var other: PassageDirection { self == .entry ? .exit : .entry }

  public init?(name: some StringProtocol) {
    guard let d = Self.allCases.first(where: { $0.name == name }) else { return nil }
    self = d
  }
}

/// Why a turnstile direction unlocked or a passage event happened (the high nibble of a
/// turnstile event's `code`; the low nibble is the `PassageDirection`).
public enum PassageReason: UInt16, Sendable, CaseIterable {
  case grant = 1
  case console = 2
  case fire = 3
  /// A rotation the sensor saw with no grant waiting (`turnstile-forced`).
  case noGrant = 4
  /// The turnstile's own alarm input (forced rotation, tailgate).
  case alarmInput = 5

  public var name: String {
    switch self {
    case .grant: "grant"
    case .console: "console"
    case .fire: "fire"
    case .noGrant: "no-grant"
    case .alarmInput: "alarm-input"
    }
  }
}

/// A turnstile event's code: direction in the low nibble, `PassageReason` above it.
public enum PassageCode {
  public static func code(_ direction: PassageDirection, _ reason: PassageReason? = nil) -> UInt16 {
    UInt16(direction.rawValue) | (reason.map { $0.rawValue << 4 } ?? 0)
  }
  public static func direction(_ code: UInt16) -> PassageDirection { PassageDirection(rawValue: UInt8(code & 0xF)) ?? .entry }
  public static func reason(_ code: UInt16) -> PassageReason? { PassageReason(rawValue: (code >> 4) & 0xF) }
}

/// Who latched or cleared a lockdown (the high byte of a `lockdown` event's code). A lockdown is
/// cleared only by the authority that latched it.
public enum EmergencyAuthority: UInt8, Sendable, CaseIterable {
  case input = 1
  case console = 2
  case fleet = 3
  /// Home Assistant's lockdown switch (`fleet.home_assistant_commands`).
  case homeAssistant = 4

  public var name: String {
    switch self {
    case .input: "input"
    case .console: "console"
    case .fleet: "fleet"
    case .homeAssistant: "home-assistant"
    }
  }
}

/// The turnstile's and the emergencies' detail text (journal, console, audit log), written
/// without allocating.
public enum PassageText {
  /// Writes ` entry grant`, ` exit`, ` active`, ` on console by=...` after the kind's name.
  public static func writeDetail(_ e: ScanEvent, into w: inout ByteWriter) {
    switch e.kind {
    case .turnstileUnlocked, .passage, .grantedNotPassed, .turnstileForced, .turnstileLocked:
      w.write(" ")
      w.write(PassageCode.direction(e.code).name)
      if let reason = PassageCode.reason(e.code) {
        w.write(" ")
        w.write(reason.name)
      }
    case .occupancyReset:
      w.write(" was=")
      w.write(e.code)
    case .fireAlarm:
      w.write(e.code == 1 ? " active" : " cleared")
    case .lockdown:
      w.write(e.code & 0xFF == 1 ? " on" : " off")
      if let authority = EmergencyAuthority(rawValue: UInt8(e.code >> 8)) {
        w.write(" ")
        w.write(authority.name)
      }
    default:
      break
    }
    if e.labelCount > 0 {
      w.write(" label=")
      e.withLabel { w.writeEscaped($0) }
    }
    if e.kind == .lockdown && e.payloadCount > 0 {
      w.write(" by=")
      e.withPayload { w.writeEscaped($0) }
    }
    EventText.writeTag(e, into: &w)
  }

  /// The same detail as a String, without its leading space (the audit record's `detail`).
  public static func detail(_ e: ScanEvent) -> String {
    var copy = e
    copy.tag = .zero
    copy.setLabel(UnsafeRawBufferPointer(start: nil, count: 0))
    return withUnsafeTemporaryAllocation(byteCount: 160, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      writeDetail(copy, into: &w)
      return String(decoding: w.written.dropFirst(w.written.isEmpty ? 0 : 1), as: UTF8.self)
    }
  }
}
