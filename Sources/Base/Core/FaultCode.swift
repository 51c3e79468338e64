/// Codes carried by fault and state events.
public enum FaultCode: UInt16, Sendable {
  case gpio = 1
  case cameraLost = 2
  case cameraRestored = 3
  case allowListRejected = 4
  case allowListLoaded = 5
  case logWriteFailed = 6
  case logRecovered = 7
  case started = 8
  case stopping = 9
  /// The audit log's file was moved aside (corrupt, or written before the keyed chain) and a
  /// new one started; the record's detail names the old file.
  case logMovedAside = 10
  /// The relay watchdog drove the relay inactive: the loop had not by the relay's cap (plus
  /// `ActuationSettings.relayWatchdogMarginMilliseconds`).
  case relayWatchdog = 11
  /// The audit log's first record: the log id (docs/audit-log.md, "Which log").
  case logIdentity = 12
  /// A log that existed is gone (removed, or replaced while in use); the detail says which.
  case logMissing = 13
  // Signed credentials (docs/credentials.md).
  case revocationLoaded = 20
  case revocationRejected = 21
  case trustLoaded = 22
  case trustRejected = 23
  case clockUnsynchronised = 24
  case clockSynchronised = 25
  case clockBehindFloor = 26
  case singleUseStoreFailed = 27
  // The decoder worker processes (docs/decoder.md, "The decoder worker"): the first frame
  // abandoned at the deadline, or the first worker crash, of a fault; its end.
  case decoderDeadline = 40
  case decoderCrashed = 41
  case decoderRecovered = 42
  /// A part of the view stops the decoder (a sheet of finder patterns): masked, the rest read
  /// (docs/decoder.md, "A pattern in view"); STATUS names where. Its end: every tile unmasked.
  case decoderPatternMasked = 43
  case decoderPatternCleared = 44

  public var name: String {
    switch self {
    case .gpio: "gpio-error"
    case .cameraLost: "camera-lost"
    case .cameraRestored: "camera-restored"
    case .allowListRejected: "allow-list-rejected"
    case .allowListLoaded: "allow-list-loaded"
    case .logWriteFailed: "log-write-failed"
    case .logRecovered: "log-recovered"
    case .started: "started"
    case .stopping: "stopping"
    case .logMovedAside: "log-moved-aside"
    case .relayWatchdog: "relay-watchdog"
    case .logIdentity: "log-id"
    case .logMissing: "log-missing"
    case .revocationLoaded: "revocation-loaded"
    case .revocationRejected: "revocation-rejected"
    case .trustLoaded: "trust-loaded"
    case .trustRejected: "trust-rejected"
    case .clockUnsynchronised: "clock-unsynchronised"
    case .clockSynchronised: "clock-synchronised"
    case .clockBehindFloor: "clock-behind-floor"
    case .singleUseStoreFailed: "single-use-store-failed"
    case .decoderDeadline: "decoder-deadline"
    case .decoderCrashed: "decoder-crashed"
    case .decoderRecovered: "decoder-recovered"
    case .decoderPatternMasked: "decoder-pattern-masked"
    case .decoderPatternCleared: "decoder-pattern-cleared"
    }
  }
}
