import ScanAccess
import ScanAudit
import ScanDoor
import ScanEmergency
import ScanFeedback
import ScanKeypad
import ScanTurnstile
import ScanFleet
import ScanPanels
import ScanReader

/// Where frames come from.
public enum CameraSourceKind: String, Sendable, CaseIterable { case v4l2, replay, libcamera }
/// The pixel format asked of the camera.
public enum CameraPixelFormat: String, Sendable, CaseIterable {
  case auto, grey, yuyv, yuv420, rgb, mjpeg

  /// The most a driver buffer of this choice holds per pixel (the memory budget's worst case).
  public var bufferBytesPerPixel: Int {
    switch self {
    case .grey: 1
    case .yuyv, .mjpeg, .yuv420: 2
    case .auto, .rgb: 3
    }
  }
  var bufferCase: String {
    switch self {
    case .auto: "RGB24 worst case"
    case .mjpeg: "MJPEG at most 2 bytes a pixel"
    default: rawValue.uppercased()
    }
  }
}
/// Which GPIO backend drives the lines.
public enum GPIOBackend: String, Sendable, CaseIterable { case gpiod, sim }

/// The whole configuration, with every default (config.toml documents each key).
/// `[admin] reader*`: the page on another host than its reader (docs/admin.md, "The page on
/// another host"): the reader's TLS console, the certificate it is checked against, the client
/// certificate and key its `console.tls_client_ca_file` asks for, and its operator secret.
public struct AdminReaderSettings: Equatable, Sendable {
  /// "host:port" of the reader's TLS console ("": the reader is on this host, console.unix_path).
  public var address = ""
  public var caFile = ""
  public var certFile = ""
  public var keyFile = ""
  /// The reader's operator secret (a secret file; "": every account is a viewer on the reader).
  public var secretFile = ""
  public init() {}
}

public struct ScanConfig: Equatable, Sendable {
  // [camera] (the libcamera settings beside it)
  public var camera = CameraConfig()
  /// `source = "libcamera"`: which camera, exposure and focus (`camera.libcamera_id`, ...).
  public var libcamera = LibcameraSettings()
  // [decoder], [presence], [gpio] timing, result slots
  public var engine = ScanConfig.readerDefaults()
  /// The decoder's process settings (its strategy and budget are in `engine`).
  public var decoder = DecoderConfig()
  /// A decode running longer is abandoned: as configured, else 10 × the budget and at least
  /// 100 ms (1 s with no budget: every attempt on every frame).
  public var decoderDeadlineMilliseconds: Int {
    if let d = decoder.deadlineSetting { return d }
    let budget = engine.decode.budgetMicroseconds / 1000
    return budget == 0 ? 1_000 : max(100, 10 * budget)
  }
  /// The worker supervisor's settings.
  public var decoderSupervision: DecoderSupervisor.Settings {
    var s = DecoderSupervisor.Settings()
    s.deadlineMilliseconds = decoderDeadlineMilliseconds
    s.startTimeoutMilliseconds = decoder.startTimeoutMilliseconds
    return s
  }
  /// `decoder.decode_budget_ms`'s default: about a quarter of a 30 fps frame on a Pi 4 core.
  public static let decodeBudgetMillisecondsDefault = 8
  /// `decoder.quiet_after_ms`'s default: a second of a still picture with nothing read.
  public static let quietAfterMillisecondsDefault = 1_000

  /// Defaults differ from a bare `EngineSettings` only where a door reader wants them to.
  static func readerDefaults() -> EngineSettings {
    var e = EngineSettings()
    // Flat CPU cost per frame: one view per frame, round-robin (see docs/decoder.md, views).
    e.decode.variantMode = .alternate
    // The decode strategy, spread across frames within a per-frame budget (docs/decoder.md).
    e.decode.attempts = DecodeAttempt.readerDefault
    e.decode.budgetMicroseconds = ScanConfig.decodeBudgetMillisecondsDefault * 1000
    e.decode.quietAfterMicroseconds = ScanConfig.quietAfterMillisecondsDefault * 1000
    return e
  }
  // [allow_list]
  /// In the state directory: the packaged service may write it (ENROL, REMOVE, PIN changes).
  public var allowListPath = "/var/lib/scangate/allow-list.txt"
  public var allowListWatch = true
  // [credentials]
  public var credentials = CredentialSettings()
  // [gpio]
  public var gpio = GPIOConfig()
  // [door] (DoorConfig.swift)
  public var door = DoorConfig()
  // [emergency] (Emergency/Core/EmergencySettings.swift)
  public var emergency = EmergencyConfig()
  // [turnstile] (Turnstile/Core/TurnstileConfig.swift)
  public var turnstile = TurnstileConfig()
  // [keypad] (Keypad/Core/KeypadSettings.swift)
  public var keypad = KeypadSettings()
  // [feedback] (Feedback/Core/FeedbackSettings.swift)
  public var feedback = FeedbackSettings()
  // [events]
  public var eventRingCapacity = 4_096
  // [log]
  public var log = AuditLogSettings(path: "/var/lib/scangate/audit.db")
  /// `state.directory`: where the state that protects decisions is kept ("" = the audit log's
  /// directory). See `stateDirectory`.
  public var stateDirectorySetting = ""
  // [console] and [admin]
  public var console = ConsoleConfig()
  public var admin = AdminConfig()
  // [panel]
  public var panel = PanelSettings()
  // [fleet]
  public var fleet = FleetSettings()

  public init() {}
}

extension ScanConfig {
  /// Where the reader keeps the state that protects its decisions across restarts (docs/credentials.md,
  /// "What survives a restart"): rotating passes' accepted steps, used single-use passes, the
  /// clock floor, the highest revocation version. `state.directory`, or the audit log's
  /// directory; nil when neither is set (rotating passes and revocation lists are then refused).
  public var stateDirectory: String? {
    if !stateDirectorySetting.isEmpty { return stateDirectorySetting }
    guard !log.path.isEmpty else { return nil }
    guard let slash = log.path.lastIndex(of: "/") else { return "." }
    return slash == log.path.startIndex ? "/" : String(log.path[..<slash])
  }

  /// `name` in the state directory, or nil without one.
  public func statePath(_ name: String) -> String? { stateDirectory.map { $0 + "/" + name } }
}

extension ScanConfig {
  /// The site key the readers of a site share: `fleet.site_key_file`, else the turnstile's
  /// (site-wide anti-passback had it first); "" = none.
  public var siteKeyFile: String { fleet.siteKeyFile.isEmpty ? turnstile.site.keyFile : fleet.siteKeyFile }
}
