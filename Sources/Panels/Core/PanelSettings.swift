import ScanBase

/// `[panel]`: whether the reader decides itself (local) or forwards validated passes to an
/// access-control panel as card reads (panel), and the OSDP link to that panel.
public struct PanelSettings: Equatable, Sendable {
  public enum Mode: String, CaseIterable, Sendable {
    /// The reader decides and drives its relay (the default).
    case local
    /// The reader validates, sends the pass's card number to the panel and never drives its
    /// own relay; its buzzer follows the panel's commands.
    case panel
  }
  public var mode = Mode.local
  /// How a panel-mode reader sends card reads: an OSDP peripheral on a serial port, or Wiegand
  /// on two output lines.
  public enum Link: String, CaseIterable, Sendable {
    case osdp, wiegand
  }
  public var link = Link.osdp
  /// Wiegand out: D0 and D1 on `gpio.chip` (-1: none), the pulse and the interval from one bit's
  /// start to the next, and the lines' polarity (false: active = the GPIO high, driving an
  /// open-collector stage that pulls the panel's 5 V data line low).
  public var wiegandD0Line = -1
  public var wiegandD1Line = -1
  public var wiegandPulseMicroseconds = 50
  public var wiegandIntervalMicroseconds = 2_000
  /// Silence between two frames (a panel ends a frame when its lines stay idle this long).
  public var wiegandFrameGapMilliseconds = 25
  public var wiegandActiveLow = false
  /// The panel's beeper and LED wires into the reader (inputs on `gpio.chip`, -1: not wired):
  /// the buzzer sounds while the beeper wire is active; the LED wire turning active plays the
  /// grant sound when there is no beeper wire. Panels pull them low for on (open collector),
  /// so active-low with the chip's pull-up by default.
  public var wiegandBeeperLine = -1
  public var wiegandLEDLine = -1
  public var wiegandFeedbackActiveLow = true
  public var wiegandFeedbackBias = LineBias.pullUp
  /// The OSDP serial port (RS-485 adapter), e.g. /dev/ttyUSB0.
  public var osdpPort = ""
  /// The reader's OSDP address, 0–126.
  public var osdpAddress = 0
  public var osdpBaud = 9_600
  /// Where a panel's osdp_COMSET (new address and baud) is kept across restarts, as OSDP asks
  /// of a reader ("" = not kept: the reader comes back at `osdp_address` / `osdp_baud`).
  public var comFile = ""
  /// Ask the driver for RS-485 direction control (TIOCSRS485) where it has it.
  public var osdpRS485 = true
  /// The Secure Channel base key: 32 hex digits in a file only the service can read.
  public var scbkFile = ""
  /// Accept Secure Channel with the default key so a panel can install this reader's key.
  public var installMode = false
  /// Nothing but ID, CAP and the handshake until Secure Channel is up.
  public var enforceSecure = true
  /// The panel is "offline" on the console after this long without a poll.
  public var offlineAfterMilliseconds = 3_000

  public static let bauds = [9_600, 19_200, 38_400, 57_600, 115_200, 230_400]
  public init() {}
}

extension PanelSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<PanelSettings>

  /// `[panel]`'s keys.
  package static let configKeys: [ConfigKey<PanelSettings>] = [
    Key(name: "panel.mode", kind: .choice(PanelSettings.Mode.allCases.map(\.rawValue))) { $0.mode = PanelSettings.Mode(rawValue: $1.asString)! },
    Key(name: "panel.osdp_port", kind: .string) { $0.osdpPort = $1.asString },
    Key(name: "panel.osdp_address", kind: .integer(0...126)) { $0.osdpAddress = $1.asInt },
    Key(name: "panel.osdp_baud", kind: .integer(9_600...230_400)) { $0.osdpBaud = $1.asInt },
    Key(name: "panel.com_file", kind: .string) { $0.comFile = $1.asString },
    Key(name: "panel.osdp_rs485", kind: .boolean) { $0.osdpRS485 = $1.asBool },
    Key(name: "panel.scbk_file", kind: .string) { $0.scbkFile = $1.asString },
    Key(name: "panel.install_mode", kind: .boolean) { $0.installMode = $1.asBool },
    Key(name: "panel.enforce_secure", kind: .boolean) { $0.enforceSecure = $1.asBool },
    Key(name: "panel.offline_after_ms", kind: .integer(200...60_000)) { $0.offlineAfterMilliseconds = $1.asInt },
    Key(name: "panel.link", kind: .choice(PanelSettings.Link.allCases.map(\.rawValue))) { $0.link = PanelSettings.Link(rawValue: $1.asString)! },
    Key(name: "panel.wiegand_d0_line", kind: .integer(-1...1023)) { $0.wiegandD0Line = $1.asInt },
    Key(name: "panel.wiegand_d1_line", kind: .integer(-1...1023)) { $0.wiegandD1Line = $1.asInt },
    Key(name: "panel.wiegand_pulse_us", kind: .integer(20...100)) { $0.wiegandPulseMicroseconds = $1.asInt },
    Key(name: "panel.wiegand_interval_us", kind: .integer(200...20_000)) { $0.wiegandIntervalMicroseconds = $1.asInt },
    Key(name: "panel.wiegand_frame_gap_ms", kind: .integer(10...1_000)) { $0.wiegandFrameGapMilliseconds = $1.asInt },
    Key(name: "panel.wiegand_active_low", kind: .boolean) { $0.wiegandActiveLow = $1.asBool },
    Key(name: "panel.wiegand_beeper_line", kind: .integer(-1...1023)) { $0.wiegandBeeperLine = $1.asInt },
    Key(name: "panel.wiegand_led_line", kind: .integer(-1...1023)) { $0.wiegandLEDLine = $1.asInt },
    Key(name: "panel.wiegand_feedback_active_low", kind: .boolean) { $0.wiegandFeedbackActiveLow = $1.asBool },
    Key(name: "panel.wiegand_feedback_bias", kind: .choice(LineBias.allCases.map(\.rawValue))) {
      $0.wiegandFeedbackBias = LineBias(rawValue: $1.asString)!
    },
  ]

  /// Combinations `[panel]` refuses.
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    let p = self
    if p.mode == .panel && p.link == .wiegand {
      let lines = [p.wiegandD0Line, p.wiegandD1Line]
      if lines.contains(-1) {
        errors.append(
          ConfigError(key: "panel.link", line: line("panel.link"), reason: "panel.link = \"wiegand\" needs panel.wiegand_d0_line and panel.wiegand_d1_line"))
      }
      if p.wiegandIntervalMicroseconds < 2 * p.wiegandPulseMicroseconds {
        errors.append(
          ConfigError(
            key: "panel.wiegand_interval_us", line: line("panel.wiegand_interval_us"), reason: "the interval must be at least twice the pulse"))
      }
      // A stall is judged halfway from the interval to the frame gap (docs/panels.md): room for both.
      if p.wiegandFrameGapMilliseconds * 1_000 < 2 * p.wiegandIntervalMicroseconds {
        errors.append(
          ConfigError(
            key: "panel.wiegand_frame_gap_ms", line: line("panel.wiegand_frame_gap_ms"),
            reason: "the frame gap must be at least twice the interval"))
      }
    }
    if p.mode == .panel && p.link == .osdp && p.osdpPort.isEmpty {
      errors.append(ConfigError(key: "panel.mode", line: line("panel.mode"), reason: "panel.mode = \"panel\" needs panel.osdp_port"))
    }
    if !PanelSettings.bauds.contains(p.osdpBaud) {
      errors.append(ConfigError(key: "panel.osdp_baud", line: line("panel.osdp_baud"), reason: "wants one of 9600, 19200, 38400, 57600, 115200, 230400"))
    }
    if p.installMode && p.scbkFile.isEmpty {
      errors.append(
        ConfigError(
          key: "panel.install_mode", line: line("panel.install_mode"), reason: "install mode needs panel.scbk_file (where the installed key is stored)"))
    }
    if p.mode == .panel && p.link == .osdp && p.enforceSecure && p.scbkFile.isEmpty {
      errors.append(
        ConfigError(key: "panel.enforce_secure", line: line("panel.enforce_secure"), reason: "enforce_secure needs panel.scbk_file (or set it false)"))
    }
    return errors
  }

  /// The GPIO lines a Wiegand panel link requests on `gpio.chip`, by key (-1: not wired).
  package var linesInUse: [(key: String, offset: Int)] {
    guard mode == .panel && link == .wiegand else { return [] }
    return [
      ("panel.wiegand_d0_line", wiegandD0Line), ("panel.wiegand_d1_line", wiegandD1Line),
      ("panel.wiegand_beeper_line", wiegandBeeperLine), ("panel.wiegand_led_line", wiegandLEDLine),
    ]
  }
}
