import ScanBase

/// `[credentials]` in config.toml: signed passes (docs/credentials.md).
public struct CredentialSettings: Equatable, Sendable {
  /// Issuer keys (TOML, `[[issuer]]` tables). Signed passes are off when unset.
  public var trustFile: String? = nil
  /// The site's X25519 secret key (hex), opening rotating passes' seeds; secret-file rules.
  public var siteKeyFile: String? = nil
  /// The issuer-signed deny-list (COSE_Sign1), hot-reloaded.
  public var revocationFile: String? = nil
  /// Where single-use passes are remembered across restarts. Without it they are refused.
  public var usedFile: String? = nil
  /// The persisted clock floor (latest wall time seen).
  public var clockFloorFile: String? = nil
  /// This reader's zones: a pass must name one of them (or none, when this list is empty).
  public var zones: [String] = []
  /// TOTP steps accepted either side of now (RFC 6238 §5.2).
  public var totpSkewSteps = 1
  /// Seconds of clock difference allowed on `nbf` and `exp`.
  public var leewaySeconds = 30
  public var timePolicy = TimePolicy.floor
  /// Rotating passes tracked at once for replay (each for its acceptance window).
  public var replayCacheEntries = 1_024
  /// Single-use passes remembered (until they expire).
  public var singleUseEntries = 4_096
  /// Where a counted pass's uses are counted: this reader, or the site (over the fleet link).
  public var usesScope = UsesScope.reader
  /// Counted site-wide, while the fleet link is down.
  public var usesOffline = UsesOffline.deny

  public init() {}

  public var enabled: Bool { trustFile != nil }
  /// TOTP period (RFC 6238 default; Google Wallet's rotating barcodes use the same).
  public static let periodSeconds: Int64 = 30
}

extension CredentialSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<CredentialSettings>

  /// `[credentials]`' keys.
  package static let configKeys: [ConfigKey<CredentialSettings>] = [
    Key(name: "credentials.trust_file", kind: .string) { $0.trustFile = $1.asNonEmptyString },
    Key(name: "credentials.site_key_file", kind: .string) { $0.siteKeyFile = $1.asNonEmptyString },
    Key(name: "credentials.revocation_file", kind: .string) { $0.revocationFile = $1.asNonEmptyString },
    Key(name: "credentials.used_file", kind: .string) { $0.usedFile = $1.asNonEmptyString },
    Key(name: "credentials.clock_floor_file", kind: .string) { $0.clockFloorFile = $1.asNonEmptyString },
    Key(name: "credentials.zones", kind: .strings(count: 0...CredentialClaims.zonesMax)) { $0.zones = $1.asStrings },
    Key(name: "credentials.totp_skew_steps", kind: .integer(0...3)) { $0.totpSkewSteps = $1.asInt },
    Key(name: "credentials.leeway_s", kind: .integer(0...600)) { $0.leewaySeconds = $1.asInt },
    Key(name: "credentials.time_policy", kind: .choice(TimePolicy.allCases.map(\.rawValue))) {
      $0.timePolicy = TimePolicy(rawValue: $1.asString)!
    },
    Key(name: "credentials.replay_cache_entries", kind: .integer(16...65_536)) { $0.replayCacheEntries = $1.asInt },
    Key(name: "credentials.single_use_entries", kind: .integer(16...1_000_000)) { $0.singleUseEntries = $1.asInt },
    Key(name: "credentials.uses_scope", kind: .choice(UsesScope.allCases.map(\.rawValue))) { $0.usesScope = UsesScope(rawValue: $1.asString)! },
    Key(name: "credentials.uses_offline", kind: .choice(UsesOffline.allCases.map(\.rawValue))) {
      $0.usesOffline = UsesOffline(rawValue: $1.asString)!
    },
  ]
}
