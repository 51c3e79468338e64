import ScanBase

/// `[keypad]`: a PIN on a numeric keypad after the pass (docs/admin.md, "PIN").
public struct KeypadSettings: Equatable, Sendable {
  /// The keypad's input device (`/dev/input/by-id/…-event-kbd`); empty: no keypad.
  public var device = ""
  /// Every grant needs a PIN (an entry without `pin=` is then `denied-pin`); otherwise only the
  /// entries that have one.
  public var requirePin = false
  /// The secret the allow-list's `pin=` hashes are keyed with (`scangate keypad keygen`).
  public var pinKeyFile = ""
  /// How long the PIN may take, from the pass and from each key.
  public var entryTimeoutMilliseconds = 10_000
  /// Wrong PINs in a row before the credential is locked out, and for how long.
  public var attemptsMax = 3
  public var lockoutSeconds = 300
  /// Credentials whose wrong PINs are counted at once (a fixed table, kept durably).
  public var attemptEntries = 256
  public init() {}

  /// Whether a keypad is configured.
  public var enabled: Bool { !device.isEmpty }
}

extension KeypadSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<KeypadSettings>

  /// `[keypad]`'s keys.
  package static let configKeys: [ConfigKey<KeypadSettings>] = [
    Key(name: "keypad.device", kind: .string) { $0.device = $1.asString },
    Key(name: "keypad.require_pin", kind: .boolean) { $0.requirePin = $1.asBool },
    Key(name: "keypad.pin_key_file", kind: .string) { $0.pinKeyFile = $1.asString },
    Key(name: "keypad.entry_timeout_ms", kind: .integer(2_000...60_000)) { $0.entryTimeoutMilliseconds = $1.asInt },
    Key(name: "keypad.attempts_max", kind: .integer(1...10)) { $0.attemptsMax = $1.asInt },
    Key(name: "keypad.lockout_s", kind: .integer(10...86_400)) { $0.lockoutSeconds = $1.asInt },
    Key(name: "keypad.attempt_entries", kind: .integer(16...65_536)) { $0.attemptEntries = $1.asInt },
  ]

  /// What `[keypad]` cannot be on this reader. In panel mode the panel checks PINs: over OSDP
  /// the keys go to it (osdp_KEYPAD) and no PIN key is needed here; Wiegand's keypad formats are
  /// not sent.
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    let keysToPanel = facts.keysToPanel
    var errors: [ConfigError] = []
    if enabled && facts.panelDecides && !keysToPanel {
      errors.append(
        ConfigError(
          key: "keypad.device", line: line("keypad.device"),
          reason: "in panel mode the panel checks PINs, and keys reach it over OSDP only (osdp_KEYPAD): Wiegand keypad bursts are not sent"))
    }
    if requirePin && !enabled {
      errors.append(ConfigError(key: "keypad.require_pin", line: line("keypad.require_pin"), reason: "a PIN needs a keypad: set keypad.device"))
    }
    if requirePin && keysToPanel {
      errors.append(
        ConfigError(key: "keypad.require_pin", line: line("keypad.require_pin"), reason: "in panel mode the panel decides who needs a PIN"))
    }
    if enabled && pinKeyFile.isEmpty && !keysToPanel {
      errors.append(
        ConfigError(
          key: "keypad.pin_key_file", line: line("keypad.device"),
          reason: "a keypad checks PINs against keyed hashes: set keypad.pin_key_file (scangate keypad keygen)"))
    }
    return errors
  }
}
