/// How an input line is biased inside the chip.
public enum LineBias: String, Sendable, CaseIterable {
  /// Leave the chip's setting as it is.
  case asIs = "as-is"
  case disabled
  case pullUp = "pull-up"
  case pullDown = "pull-down"
}

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

extension ConfigSchema {
  static func doorInputKeys(_ input: DoorInput, _ prefix: String) -> [Key] {
    let i = input.rawValue
    return [
      Key(name: "door.\(prefix)_line", kind: .integer(-1...1023)) { $0.door.inputs[i].line = int($1) },
      Key(name: "door.\(prefix)_active_low", kind: .boolean) { $0.door.inputs[i].activeLow = bool($1) },
      Key(name: "door.\(prefix)_bias", kind: .choice(LineBias.allCases.map(\.rawValue))) {
        $0.door.inputs[i].bias = LineBias(rawValue: str($1))!
      },
      Key(name: "door.\(prefix)_debounce_ms", kind: .integer(0...1_000)) {
        $0.door.machine.debounceMilliseconds[i] = UInt16(int($1))
      },
    ]
  }

  /// `[door]`'s keys.
  static let doorKeys: [Key] =
    [
      Key(name: "door.enabled", kind: .boolean) { $0.door.machine.enabled = bool($1) },
      Key(name: "door.held_open_ms", kind: .integer(1_000...3_600_000)) { $0.door.machine.heldOpenMilliseconds = int($1) },
      Key(name: "door.relock_on_close", kind: .boolean) { $0.door.machine.relockOnClose = bool($1) },
      Key(name: "door.exit_unlocks", kind: .boolean) { $0.door.machine.exitButtonUnlocks = bool($1) },
      Key(name: "door.forced_alarm_ms", kind: .integer(0...3_600_000)) { $0.door.machine.forcedAlarmMilliseconds = int($1) },
      Key(name: "door.held_open_beep", kind: .integers(0...10_000, count: 2...2)) {
        $0.door.machine.heldOpenBeepOnMilliseconds = ints($1)[0]
        $0.door.machine.heldOpenBeepOffMilliseconds = ints($1)[1]
      },
      Key(name: "door.tamper_alarm", kind: .boolean) { $0.door.machine.tamperAlarm = bool($1) },
      Key(name: "door.alarm_line", kind: .integer(-1...1023)) { $0.door.alarmLine = int($1) },
      Key(name: "door.alarm_active_low", kind: .boolean) { $0.door.alarmActiveLow = bool($1) },
      Key(name: "door.aux_relay_line", kind: .integer(-1...1023)) { $0.door.auxRelayLine = int($1) },
      Key(name: "door.aux_relay_active_low", kind: .boolean) { $0.door.auxRelayActiveLow = bool($1) },
      Key(name: "schedule.path", kind: .string) { $0.door.schedulePath = str($1) },
      Key(name: "schedule.time_zone", kind: .string) { $0.door.timeZone = str($1) },
      Key(name: "schedule.unlock_needs_synchronized_clock", kind: .boolean) { $0.door.unlockNeedsSynchronizedClock = bool($1) },
      Key(name: "door.strike_wiring", kind: .choice(StrikeWiring.allCases.map(\.rawValue))) {
        $0.door.strikeWiring = StrikeWiring(rawValue: str($1))!
      },
    ] + doorInputKeys(.contact, "contact") + doorInputKeys(.exitButton, "exit") + doorInputKeys(.tamper, "tamper")

  /// The door's consistency rule: an enabled door needs a contact.
  static func doorErrors(_ c: ScanConfig, line: (String) -> Int) -> [ConfigError] {
    guard c.door.machine.enabled, c.door.input(.contact).line < 0, c.gpioBackend == .gpiod else { return [] }
    return [ConfigError(key: "door.contact_line", line: line("door.enabled"), reason: "door.enabled needs door.contact_line")]
  }

  /// No two of the lines in use on `gpio.chip` (relay, buzzer, the door's, Wiegand's) may share
  /// an offset: each is requested by one owner.
  static func lineClashErrors(_ c: ScanConfig, line: (String) -> Int) -> [ConfigError] {
    guard c.gpioBackend == .gpiod else { return [] }
    var lines: [(String, Int)] = []
    let d = c.door
    if d.machine.enabled {
      lines += [
        ("door.contact_line", d.input(.contact).line), ("door.exit_line", d.input(.exitButton).line),
        ("door.tamper_line", d.input(.tamper).line), ("door.alarm_line", d.alarmLine),
        ("door.aux_relay_line", d.auxRelayLine),
      ]
    }
    let p = c.panel
    if p.mode == .panel && p.link == .wiegand {
      lines += [
        ("panel.wiegand_d0_line", p.wiegandD0Line), ("panel.wiegand_d1_line", p.wiegandD1Line),
        ("panel.wiegand_beeper_line", p.wiegandBeeperLine), ("panel.wiegand_led_line", p.wiegandLEDLine),
      ]
    }
    var errors: [ConfigError] = []
    var used: [(String, Int)] = [("gpio.relay_line", c.relayLine), ("gpio.buzzer_line", c.buzzerLine)]
    for (name, offset) in lines where offset >= 0 {
      if let clash = used.first(where: { $0.1 == offset }) {
        errors.append(ConfigError(key: name, line: line(name), reason: "same line as \(clash.0)"))
      }
      used.append((name, offset))
    }
    return errors
  }
}
