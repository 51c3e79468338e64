import ScanBase

/// The emergencies, as configured in `[emergency]`.
public struct EmergencySettings: Equatable, Sendable {
  /// Exit buttons release the strike during a lockdown (life safety: egress stays free).
  public var exitDuringLockdown = true
  /// The fire and lockdown inputs count once a level has held this long.
  public var debounceMilliseconds: UInt16 = 50
  public init() {}
}

/// One emergency input's line (`line` -1: not wired).
public struct EmergencyInputConfig: Equatable, Sendable {
  public var line = -1
  public var activeLow = false
  public var bias = LineBias.pullUp
  public init() {}
}

/// `[emergency]`: the fire panel's release contact, the lockdown switch, and the rules.
public struct EmergencyConfig: Equatable, Sendable {
  public var settings = EmergencySettings()
  /// Fire (active: the alarm stands), lockdown switch (active: on). The defaults suit a contact
  /// closed to ground at rest with the pull-up on (a fire panel's normally-closed relay): the
  /// alarm, or a cut wire, opens it and the line reads high = active (fail-safe for egress).
  public var inputs = [EmergencyInputConfig(), EmergencyInputConfig()]
  public init() {}

  public func input(_ input: EmergencyInput) -> EmergencyInputConfig { inputs[input.rawValue] }
  /// Whether anything of the emergencies is on this reader (an input wired; the console's
  /// LOCKDOWN works whenever a door, a turnstile or the relay is driven, so always true).
  public var hasInputs: Bool { inputs.contains { $0.line >= 0 } }
}

extension EmergencyConfig: ConfigSection {
  fileprivate typealias Key = ConfigKey<EmergencyConfig>

  fileprivate static func inputKeys(_ input: EmergencyInput) -> [Key] {
    let i = input.rawValue, prefix = "emergency.\(input.name)"
    return [
      Key(name: "\(prefix)_line", kind: .integer(-1...1023)) { $0.inputs[i].line = $1.asInt },
      Key(name: "\(prefix)_active_low", kind: .boolean) { $0.inputs[i].activeLow = $1.asBool },
      Key(name: "\(prefix)_bias", kind: .choice(LineBias.allCases.map(\.rawValue))) {
        $0.inputs[i].bias = LineBias(rawValue: $1.asString)!
      },
    ]
  }

  /// `[emergency]`'s keys.
  package static let configKeys: [ConfigKey<EmergencyConfig>] =
    [
      Key(name: "emergency.debounce_ms", kind: .integer(0...1_000)) { $0.settings.debounceMilliseconds = UInt16($1.asInt) },
      Key(name: "emergency.exit_during_lockdown", kind: .boolean) { $0.settings.exitDuringLockdown = $1.asBool },
    ] + inputKeys(.fire) + inputKeys(.lockdown)

  /// The GPIO lines the emergency inputs request on `gpio.chip`, by key (-1: not wired).
  package var linesInUse: [(key: String, offset: Int)] {
    [("emergency.fire_line", input(.fire).line), ("emergency.lockdown_line", input(.lockdown).line)]
  }
}
