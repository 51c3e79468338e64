/// Counters and latency histograms of the loop (fixed size).
public struct ScanStats: Sendable {
  public var frames: UInt64 = 0
  public var framesWithCodes: UInt64 = 0
  public var symbols: UInt64 = 0
  public var grants: UInt64 = 0
  public var denies: UInt64 = 0
  public var manualOpens: UInt64 = 0
  public var gpioErrors: UInt64 = 0
  /// Times the relay watchdog drove the relay inactive because the loop had not by its cap.
  public var relayWatchdogTrips: UInt64 = 0
  public var truncatedPayloads: UInt64 = 0
  /// Time spent in the decoder per frame.
  public var decode = LatencyHistogram()
  /// Decode attempts made (the strategy's views and engine options), and frames whose turn
  /// ended because the per-frame budget was spent.
  public var decodeAttempts: UInt64 = 0
  public var framesOverBudget: UInt64 = 0
  /// Quiet frames (nothing changed and nothing read lately: one attempt every other frame).
  public var framesQuiet: UInt64 = 0
  /// The configured per-frame decode budget (0: none) and the CPU the strategy spent in total.
  public var decodeBudgetMicroseconds: UInt64 = 0
  public var decodeStrategyMicroseconds: UInt64 = 0
  /// Frame capture to decision.
  public var frameToDecision = LatencyHistogram()
  /// Frame capture to the relay's (or, on a deny, the buzzer's) first edge.
  public var frameToEdge = LatencyHistogram()
  public init() {}
}

/// Everything the engine is configured with.
public struct EngineSettings: Equatable, Sendable {
  public var decode = DecodeSettings()
  public var presence = PresenceSettings()
  public var actuation = ActuationSettings()
  public var resultsCapacity = 8
  public var payloadBytesMax = 1_024
  public var allowList = AllowListLimits()
  public var presenceSlots = 32
  public init() {}
}

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
    }
  }
}

/// The keyed tag of a payload: what every outside-facing form shows instead of its SHA-256.
///
/// A payload's unkeyed SHA-256 lets anyone who sees it test guesses offline (a badge number
/// such as `EMP-004217` falls in seconds). The tag is HMAC-SHA-256 under the reader's tag key
/// (32 random bytes kept in the state directory, never shown) over the payload's SHA-256, so
/// only who holds the key can link a tag to a payload (`scangate tag`). The engine computes it
/// once per decision (and per "left" event) and puts it in the event; the SHA-256 itself stays
/// in memory (the allow-list's `sha256:` entries and presence tracking match on it).
/// `tag` runs on the loop's thread: it must not block or allocate.
public protocol PayloadTagger: AnyObject, Sendable {
  func tag(_ digest: Digest) -> Digest
}

/// How tags are shown.
public enum PayloadTag {
  /// Bytes of the tag that events, the audit log and the fleet show (as hex: 16 digits).
  public static let shownBytes = 8

  /// The shown digits of `tag` (allocates: the log writer and tools).
  public static func hex(_ tag: Digest) -> String {
    String(unsafeUninitializedCapacity: shownBytes * 2) { out in
      for i in 0..<shownBytes {
        out[2 * i] = Hex.digit(tag.byte(i) >> 4)
        out[2 * i + 1] = Hex.digit(tag.byte(i))
      }
      return shownBytes * 2
    }
  }
}
