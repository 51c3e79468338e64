import ScanBase

/// Which way the people a code admits are going.
public enum DirectionSource: String, Sendable, CaseIterable {
  /// This reader's camera faces one way: every grant is an entry (or every one an exit).
  case entry, exit
  /// One camera for both ways, the direction chosen by an input (a button, a second sensor):
  /// `direction_line` active = exit.
  case input
  /// Two cameras on one reader (`camera.second`): codes the first camera sees enter, codes
  /// the second sees exit.
  case camera
}

/// One turnstile line (`line` -1: not wired).
public struct TurnstileLineConfig: Equatable, Sendable {
  public var line = -1
  public var activeLow = false
  public init(activeLow: Bool = false) { self.activeLow = activeLow }
}

/// `[turnstile]`: the machine's settings, anti-passback, the area it counts, and its lines.
public struct TurnstileConfig: Equatable, Sendable {
  public var machine = TurnstileSettings()
  public var passback = PassbackSettings()
  /// Site-wide anti-passback over the fleet link (docs/turnstiles.md "Site-wide anti-passback").
  public var site = SitePassbackSettings()
  public var direction = DirectionSource.entry
  /// The area whose occupancy this turnstile counts (entries minus exits).
  public var area = "site"
  /// Outputs: the entry and exit unlock (or pulse) lines, and the alarm line.
  public var entryUnlock = TurnstileLineConfig()
  public var exitUnlock = TurnstileLineConfig()
  public var alarm = TurnstileLineConfig()
  /// Inputs: the rotation-complete sensor per direction, the turnstile's alarm (forced rotation,
  /// tailgate) and the direction input. Defaults: a contact to ground with the pull-up on, closed
  /// while the sensor reports (low = active).
  public var entryPassage = TurnstileLineConfig(activeLow: true)
  public var exitPassage = TurnstileLineConfig(activeLow: true)
  public var alarmInput = TurnstileLineConfig(activeLow: true)
  public var directionInput = TurnstileLineConfig(activeLow: true)
  public init() {}
}

extension TurnstileConfig: ConfigSection {
  fileprivate typealias Key = ConfigKey<TurnstileConfig>

  fileprivate static func lineKeys(_ name: String, _ path: WritableKeyPath<TurnstileConfig, TurnstileLineConfig> & Sendable) -> [Key] {
    [
      Key(name: "turnstile.\(name)_line", kind: .integer(-1...1023)) { $0[keyPath: path].line = $1.asInt },
      Key(name: "turnstile.\(name)_active_low", kind: .boolean) { $0[keyPath: path].activeLow = $1.asBool },
    ]
  }

  /// `[turnstile]`'s keys.
  package static let configKeys: [ConfigKey<TurnstileConfig>] =
    [
      Key(name: "turnstile.enabled", kind: .boolean) { $0.machine.enabled = $1.asBool },
      Key(name: "turnstile.wiring", kind: .choice(TurnstileWiring.allCases.map(\.rawValue))) {
        $0.machine.wiring = TurnstileWiring(rawValue: $1.asString)!
      },
      Key(name: "turnstile.pulse_ms", kind: .integer(20...10_000)) { $0.machine.pulseMilliseconds = $1.asInt },
      Key(name: "turnstile.passage_timeout_ms", kind: .integer(1_000...120_000)) {
        $0.machine.passageTimeoutMilliseconds = $1.asInt
      },
      Key(name: "turnstile.debounce_ms", kind: .integer(0...1_000)) { $0.machine.debounceMilliseconds = UInt16($1.asInt) },
      Key(name: "turnstile.grants_queued_max", kind: .integer(1...4)) { $0.machine.grantsQueuedMax = $1.asInt },
      Key(name: "turnstile.forced_alarm_ms", kind: .integer(0...3_600_000)) { $0.machine.forcedAlarmMilliseconds = $1.asInt },
      Key(name: "turnstile.direction", kind: .choice(DirectionSource.allCases.map(\.rawValue))) {
        $0.direction = DirectionSource(rawValue: $1.asString)!
      },
      Key(name: "turnstile.area", kind: .string) { $0.area = $1.asString },
      Key(name: "turnstile.passback", kind: .choice(PassbackMode.allCases.map(\.rawValue))) {
        $0.passback.mode = PassbackMode(rawValue: $1.asString)!
      },
      Key(name: "turnstile.passback_minutes", kind: .integer(1...10_080)) { $0.passback.timedSeconds = Int64($1.asInt) * 60 },
      Key(name: "turnstile.passback_entries", kind: .integer(16...1_048_576)) { $0.passback.entriesMax = $1.asInt },
      Key(name: "turnstile.passback_site", kind: .boolean) { $0.site.enabled = $1.asBool },
      Key(name: "turnstile.site_key_file", kind: .string) { $0.site.keyFile = $1.asString },
      Key(name: "turnstile.passback_offline", kind: .choice(PassbackOffline.allCases.map(\.rawValue))) {
        $0.site.offline = PassbackOffline(rawValue: $1.asString)!
      },
    ] + lineKeys("entry_unlock", \.entryUnlock) + lineKeys("exit_unlock", \.exitUnlock) + lineKeys("alarm", \.alarm)
    + lineKeys("entry_passage", \.entryPassage) + lineKeys("exit_passage", \.exitPassage)
    + lineKeys("alarm_input", \.alarmInput) + lineKeys("direction_input", \.directionInput)

  /// An enabled turnstile on real GPIO needs the unlock line and the passage sensor of each
  /// direction it grants: without the sensor a grant could never be seen used.
  /// In panel mode the panel drives the turnstile.
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    if machine.enabled && facts.panelDecides {
      errors.append(
        ConfigError(key: "turnstile.enabled", line: line("turnstile.enabled"), reason: "in panel mode the panel drives the turnstile: turn one off"))
    }
    // Sharing passages needs the site key (identities keyed the same on every reader) and a mode.
    if machine.enabled && site.enabled {
      if facts.siteKeyFile.isEmpty {
        errors.append(
          ConfigError(
            key: "turnstile.site_key_file", line: line("turnstile.passback_site"),
            reason: "turnstile.passback_site needs a site key (fleet.site_key_file, or this one)"))
      }
      if passback.mode == .off {
        errors.append(ConfigError(key: "turnstile.passback", line: line("turnstile.passback_site"), reason: "turnstile.passback_site needs timed or hard"))
      }
    }
    guard machine.enabled, facts.gpiod else { return errors }
    let directions: [PassageDirection] =
      direction == .input || direction == .camera ? [.entry, .exit] : [direction == .entry ? .entry : .exit]
    for d in directions {
      let (unlock, passage) = d == .entry ? (entryUnlock, entryPassage) : (exitUnlock, exitPassage)
      if unlock.line < 0 {
        errors.append(ConfigError(key: "turnstile.\(d.name)_unlock_line", line: line("turnstile.enabled"), reason: "turnstile.enabled needs it"))
      }
      if passage.line < 0 {
        errors.append(ConfigError(key: "turnstile.\(d.name)_passage_line", line: line("turnstile.enabled"), reason: "turnstile.enabled needs it"))
      }
    }
    if direction == .input && directionInput.line < 0 {
      errors.append(ConfigError(key: "turnstile.direction_input_line", line: line("turnstile.direction"), reason: "direction = \"input\" needs it"))
    }
    return errors
  }

  /// The GPIO lines an enabled turnstile requests on `gpio.chip`, by key (-1: not wired).
  package var linesInUse: [(key: String, offset: Int)] {
    guard machine.enabled else { return [] }
    return [
      ("turnstile.entry_unlock_line", entryUnlock.line), ("turnstile.exit_unlock_line", exitUnlock.line),
      ("turnstile.alarm_line", alarm.line), ("turnstile.entry_passage_line", entryPassage.line),
      ("turnstile.exit_passage_line", exitPassage.line), ("turnstile.alarm_input_line", alarmInput.line),
      ("turnstile.direction_input_line", directionInput.line),
    ]
  }
}
