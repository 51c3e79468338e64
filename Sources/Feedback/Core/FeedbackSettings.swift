import ScanBase

/// What the ready lamp shows while the reader waits for a code ("show your code here").
public enum FeedbackIdle: String, Sendable, CaseIterable {
  case amber, green, off
}

/// `[feedback]`: green, red and amber lamps (LEDs on GPIO lines) that tell the person at the
/// reader what it is doing, and the buzzer-free mode. A camera reader has no card to feel
/// click: the lamps are how a visitor knows where to hold the code and what came of it.
public struct FeedbackSettings: Equatable, Sendable {
  /// The lamps' GPIO lines on `gpio.chip` (-1: not wired).
  public var greenLine = -1
  public var redLine = -1
  public var amberLine = -1
  /// The lamps' lines are active low (a lamp board sinking current).
  public var activeLow = false
  /// The lamp lit while the reader waits for a code.
  public var idle = FeedbackIdle.amber
  /// How long a grant, a denial and a PIN request are shown (a grant also while the strike is
  /// open; a PIN request until the decision that ends it).
  public var grantedMilliseconds = 3_000
  public var deniedMilliseconds = 2_000
  public var pinMilliseconds = 10_000
  /// Buzzer-free: the reader's grant, deny and PIN-prompt chirps are not sounded (the lamps say
  /// it); faults and the door's alarms still sound.
  public var quiet = false
  public init() {}

  /// Whether any lamp is wired.
  public var isWired: Bool { greenLine >= 0 || redLine >= 0 || amberLine >= 0 }
}

extension FeedbackSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<FeedbackSettings>

  /// `[feedback]`'s keys.
  package static let configKeys: [ConfigKey<FeedbackSettings>] = [
    Key(name: "feedback.green_line", kind: .integer(-1...1023)) { $0.greenLine = $1.asInt },
    Key(name: "feedback.red_line", kind: .integer(-1...1023)) { $0.redLine = $1.asInt },
    Key(name: "feedback.amber_line", kind: .integer(-1...1023)) { $0.amberLine = $1.asInt },
    Key(name: "feedback.active_low", kind: .boolean) { $0.activeLow = $1.asBool },
    Key(name: "feedback.idle", kind: .choice(FeedbackIdle.allCases.map(\.rawValue))) { $0.idle = FeedbackIdle(rawValue: $1.asString)! },
    Key(name: "feedback.granted_ms", kind: .integer(200...60_000)) { $0.grantedMilliseconds = $1.asInt },
    Key(name: "feedback.denied_ms", kind: .integer(200...60_000)) { $0.deniedMilliseconds = $1.asInt },
    Key(name: "feedback.pin_ms", kind: .integer(2_000...60_000)) { $0.pinMilliseconds = $1.asInt },
    Key(name: "feedback.quiet", kind: .boolean) { $0.quiet = $1.asBool },
  ]

  /// The GPIO lines the lamps request on `gpio.chip`, by key (-1: not wired).
  package var linesInUse: [(key: String, offset: Int)] {
    [("feedback.green_line", greenLine), ("feedback.red_line", redLine), ("feedback.amber_line", amberLine)]
  }

  /// A buzzer-free reader must show something, and in panel mode the panel drives the reader's
  /// lamps (osdp_LED, Wiegand's LED wire).
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    if quiet && !isWired {
      errors.append(
        ConfigError(
          key: "feedback.quiet", line: line("feedback.quiet"),
          reason: "a buzzer-free reader needs a lamp to say granted or denied: wire feedback.green_line and red_line"))
    }
    if isWired && facts.panelDecides {
      let key = linesInUse.first { $0.offset >= 0 }!.key
      errors.append(
        ConfigError(key: key, line: line(key), reason: "in panel mode the panel drives the reader's lamps (osdp_LED, Wiegand's LED wire)"))
    }
    return errors
  }

  /// Buzzer-free: the lamps say what the chirps would have.
  package var replacesChirps: Bool { quiet }
}
