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
  /// The OSDP serial port (RS-485 adapter), e.g. /dev/ttyUSB0.
  public var osdpPort = ""
  /// The reader's OSDP address, 0–126.
  public var osdpAddress = 0
  public var osdpBaud = 9_600
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

/// Where a validated pass goes in panel mode: the engine asks it instead of driving its relay.
public protocol PanelForwarder: AnyObject {
  /// Forwards a granted decision's card to the panel; false when it could not (no card number
  /// on the entry, queue full, no panel link): the reader then treats the pass as denied.
  func forward(_ decision: AccessDecision) -> Bool
}

extension ConfigSchema {
  static let panelKeys: [Key] = [
    Key(name: "panel.mode", kind: .choice(PanelSettings.Mode.allCases.map(\.rawValue))) { $0.panel.mode = PanelSettings.Mode(rawValue: str($1))! },
    Key(name: "panel.osdp_port", kind: .string) { $0.panel.osdpPort = str($1) },
    Key(name: "panel.osdp_address", kind: .integer(0...126)) { $0.panel.osdpAddress = int($1) },
    Key(name: "panel.osdp_baud", kind: .integer(9_600...230_400)) { $0.panel.osdpBaud = int($1) },
    Key(name: "panel.osdp_rs485", kind: .boolean) { $0.panel.osdpRS485 = bool($1) },
    Key(name: "panel.scbk_file", kind: .string) { $0.panel.scbkFile = str($1) },
    Key(name: "panel.install_mode", kind: .boolean) { $0.panel.installMode = bool($1) },
    Key(name: "panel.enforce_secure", kind: .boolean) { $0.panel.enforceSecure = bool($1) },
    Key(name: "panel.offline_after_ms", kind: .integer(200...60_000)) { $0.panel.offlineAfterMilliseconds = int($1) },
  ]

  /// Combinations `[panel]` refuses.
  static func panelErrors(_ config: ScanConfig, line: (String) -> Int) -> [ConfigError] {
    var errors: [ConfigError] = []
    let p = config.panel
    if p.mode == .panel && p.osdpPort.isEmpty {
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
    if p.mode == .panel && p.enforceSecure && p.scbkFile.isEmpty {
      errors.append(
        ConfigError(key: "panel.enforce_secure", line: line("panel.enforce_secure"), reason: "enforce_secure needs panel.scbk_file (or set it false)"))
    }
    return errors
  }
}
