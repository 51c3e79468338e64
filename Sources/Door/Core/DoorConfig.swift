import ScanBase

/// How the strike is wired: what the door does when the relay is not energised.
public enum StrikeWiring: String, Sendable, CaseIterable {
  /// Locked without power (the relay energised releases it): a power cut keeps the door locked.
  case failSecure = "fail-secure"
  /// Released without power (a maglock or a fail-safe strike, held by the relay's other
  /// contact): a power cut releases the door, as fire codes demand for some escape routes.
  case failSafe = "fail-safe"
}

/// One door input's line: where it is and how it reads (`line` -1: not fitted).
public struct DoorInputConfig: Equatable, Sendable {
  public var line = -1
  public var activeLow = true
  public var bias = LineBias.pullUp
  public init(activeLow: Bool = true) { self.activeLow = activeLow }
}

/// `[door]`: the door's inputs, its alarm line, its timers and the strike's wiring.
public struct DoorConfig: Equatable, Sendable {
  public var machine = DoorSettings()
  /// Contact (active: open), exit button (active: pressed), tamper (active: housing open).
  /// Defaults for the usual wiring, each switch to ground with the pull-up on: a contact and a
  /// tamper loop closed at rest (open = high = active), an exit button open at rest (pressed = low).
  public var inputs: [DoorInputConfig] = [
    DoorInputConfig(activeLow: false), DoorInputConfig(activeLow: true), DoorInputConfig(activeLow: false),
  ]
  /// The alarm/LED line (-1: none).
  public var alarmLine = -1
  public var alarmActiveLow = false
  /// The second relay (-1: none): active while any door alarm stands.
  public var auxRelayLine = -1
  public var auxRelayActiveLow = false
  /// The strike relay's wiring (stated, shown by `probe` and DOOR; the relay line is `gpio.relay_line`).
  public var strikeWiring = StrikeWiring.failSecure
  /// `[schedule]`: the schedule file (docs/schedules.md; "" = none), reloaded when it changes,
  /// and the time zone its windows are read in ("" = the system's /etc/localtime).
  public var schedulePath = ""
  public var timeZone = ""
  /// Unlock windows hold the strike only while the system clock is synchronised (NTP): a Pi has
  /// no real-time clock, and after a power cut its clock can say shop hours at 2 a.m.
  public var unlockNeedsSynchronizedClock = true
  public init() {}

  /// The input settings for `input`.
  public func input(_ input: DoorInput) -> DoorInputConfig { inputs[input.rawValue] }
}

extension DoorConfig: ConfigSection {
  fileprivate typealias Key = ConfigKey<DoorConfig>

  fileprivate static func inputKeys(_ input: DoorInput, _ prefix: String) -> [Key] {
    let i = input.rawValue
    return [
      Key(name: "door.\(prefix)_line", kind: .integer(-1...1023)) { $0.inputs[i].line = $1.asInt },
      Key(name: "door.\(prefix)_active_low", kind: .boolean) { $0.inputs[i].activeLow = $1.asBool },
      Key(name: "door.\(prefix)_bias", kind: .choice(LineBias.allCases.map(\.rawValue))) {
        $0.inputs[i].bias = LineBias(rawValue: $1.asString)!
      },
      Key(name: "door.\(prefix)_debounce_ms", kind: .integer(0...1_000)) {
        $0.machine.debounceMilliseconds[i] = UInt16($1.asInt)
      },
    ]
  }

  /// `[door]`'s and `[schedule]`'s keys.
  package static let configKeys: [ConfigKey<DoorConfig>] =
    [
      Key(name: "door.enabled", kind: .boolean) { $0.machine.enabled = $1.asBool },
      Key(name: "door.held_open_ms", kind: .integer(1_000...3_600_000)) { $0.machine.heldOpenMilliseconds = $1.asInt },
      Key(name: "door.relock_on_close", kind: .boolean) { $0.machine.relockOnClose = $1.asBool },
      Key(name: "door.exit_unlocks", kind: .boolean) { $0.machine.exitButtonUnlocks = $1.asBool },
      Key(name: "door.forced_alarm_ms", kind: .integer(0...3_600_000)) { $0.machine.forcedAlarmMilliseconds = $1.asInt },
      Key(name: "door.held_open_beep", kind: .integers(0...10_000, count: 2...2)) {
        $0.machine.heldOpenBeepOnMilliseconds = $1.asInts[0]
        $0.machine.heldOpenBeepOffMilliseconds = $1.asInts[1]
      },
      Key(name: "door.tamper_alarm", kind: .boolean) { $0.machine.tamperAlarm = $1.asBool },
      Key(name: "door.alarm_line", kind: .integer(-1...1023)) { $0.alarmLine = $1.asInt },
      Key(name: "door.alarm_active_low", kind: .boolean) { $0.alarmActiveLow = $1.asBool },
      Key(name: "door.aux_relay_line", kind: .integer(-1...1023)) { $0.auxRelayLine = $1.asInt },
      Key(name: "door.aux_relay_active_low", kind: .boolean) { $0.auxRelayActiveLow = $1.asBool },
      Key(name: "schedule.path", kind: .string) { $0.schedulePath = $1.asString },
      Key(name: "schedule.time_zone", kind: .string) { $0.timeZone = $1.asString },
      Key(name: "schedule.unlock_needs_synchronized_clock", kind: .boolean) { $0.unlockNeedsSynchronizedClock = $1.asBool },
      Key(name: "door.strike_wiring", kind: .choice(StrikeWiring.allCases.map(\.rawValue))) {
        $0.strikeWiring = StrikeWiring(rawValue: $1.asString)!
      },
    ] + inputKeys(.contact, "contact") + inputKeys(.exitButton, "exit") + inputKeys(.tamper, "tamper")

  /// The door's consistency rule: an enabled door on real GPIO (`gpiod`) needs a contact.
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    guard machine.enabled, input(.contact).line < 0, facts.gpiod else { return [] }
    return [ConfigError(key: "door.contact_line", line: line("door.enabled"), reason: "door.enabled needs door.contact_line")]
  }

  /// The GPIO lines an enabled door requests on `gpio.chip`, by key (-1: not fitted).
  package var linesInUse: [(key: String, offset: Int)] {
    guard machine.enabled else { return [] }
    return [
      ("door.contact_line", input(.contact).line), ("door.exit_line", input(.exitButton).line),
      ("door.tamper_line", input(.tamper).line), ("door.alarm_line", alarmLine),
      ("door.aux_relay_line", auxRelayLine),
    ]
  }
}
