/// A value read from config.toml.
public enum ConfigValue: Equatable, Sendable {
  case string(String)
  case integer(Int64)
  case real(Double)
  case boolean(Bool)
  case list([ConfigValue])

  var display: String {
    switch self {
    case .string(let s): "\"\(s)\""
    case .integer(let i): "\(i)"
    case .real(let d): "\(d)"
    case .boolean(let b): "\(b)"
    case .list(let l): "[" + l.map(\.display).joined(separator: ", ") + "]"
    }
  }
}

/// One key of the file with its value and line.
public struct ConfigEntry: Equatable, Sendable {
  public var key: String
  public var value: ConfigValue
  public var line: Int
  public init(key: String, value: ConfigValue, line: Int) {
    self.key = key
    self.value = value
    self.line = line
  }
}

/// A configuration error naming the key and line.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
  public var key: String
  public var line: Int
  public var reason: String
  public init(key: String, line: Int, reason: String) {
    self.key = key
    self.line = line
    self.reason = reason
  }
  public var description: String { line > 0 ? "line \(line): \(key): \(reason)" : "\(key): \(reason)" }
}

/// Every problem found in one configuration file.
public struct ConfigErrors: Error, Equatable, Sendable, CustomStringConvertible {
  public var errors: [ConfigError]
  public init(errors: [ConfigError]) { self.errors = errors }
  public var description: String { errors.map(\.description).joined(separator: "\n") }
}

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
public struct ScanConfig: Equatable, Sendable {
  // [camera]
  public var cameraSource = CameraSourceKind.v4l2
  public var cameraDevice = "/dev/video0"
  public var cameraWidth = 640
  public var cameraHeight = 480
  public var cameraFPS = 30
  public var cameraFormat = CameraPixelFormat.auto
  public var cameraBuffers = 4
  public var mjpegHalfScale = false
  public var replayPath = ""
  public var replayFPS = 0
  public var replayLoop = true
  /// Frame timeout and reopen backoff (`camera.frame_timeout_ms`, `camera.reopen_backoff_ms_max`).
  public var cameraSupervision = CameraSupervisor.Settings()
  /// `source = "libcamera"`: which camera, exposure and focus (`camera.libcamera_id`, ...).
  public var libcamera = LibcameraSettings()
  // [decoder], [presence], [gpio] timing, result slots
  public var engine = ScanConfig.readerDefaults()
  public var decoderArenaKiB = 4_096
  /// `decoder.isolation`: decode in worker processes (the default) or on the loop's thread.
  public var decoderIsolation = DecoderIsolation.process
  /// `decoder.deadline_ms` (nil: `decoderDeadlineMilliseconds`' default from the budget).
  public var decoderDeadlineSetting: Int? = nil
  /// `decoder.start_timeout_ms`: a worker not ready this long after its spawn (its warm-up
  /// decodes) is killed and started again; the service waits twice this for its first worker.
  public var decoderStartTimeoutMilliseconds = 10_000
  /// A decode running longer is abandoned: as configured, else 10 × the budget and at least
  /// 100 ms (1 s with no budget: every attempt on every frame).
  public var decoderDeadlineMilliseconds: Int {
    if let d = decoderDeadlineSetting { return d }
    let budget = engine.decode.budgetMicroseconds / 1000
    return budget == 0 ? 1_000 : max(100, 10 * budget)
  }
  /// The worker supervisor's settings.
  public var decoderSupervision: DecoderSupervisor.Settings {
    var s = DecoderSupervisor.Settings()
    s.deadlineMilliseconds = decoderDeadlineMilliseconds
    s.startTimeoutMilliseconds = decoderStartTimeoutMilliseconds
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
  public var allowListPath = "/etc/scangate/allow-list.txt"
  public var allowListWatch = true
  // [credentials]
  public var credentials = CredentialSettings()
  // [gpio]
  public var gpioBackend = GPIOBackend.gpiod
  public var gpioChip = "gpiochip0"
  public var relayLine = 17
  public var relayActiveLow = false
  public var buzzerLine = 27
  public var buzzerActiveLow = false
  // [door] (DoorConfig.swift)
  public var door = DoorConfig()
  // [events]
  public var eventRingCapacity = 4_096
  // [log]
  public var log = AuditLogSettings(path: "/var/lib/scangate/audit.db")
  /// `state.directory`: where the state that protects decisions is kept ("" = the audit log's
  /// directory). See `stateDirectory`.
  public var stateDirectorySetting = ""
  // [console]
  public var consoleListen = ["127.0.0.1:4570"]
  public var consoleClientsMax = 16
  public var consoleClientsPerPeerMax = 4
  public var consoleIdleTimeoutSeconds = 300
  public var consoleClientOutputBytes = 16_384
  public var consoleSerialPath = ""
  public var consoleSerialBaud = 115_200
  public var consoleSecretFile = ""
  public var consoleAuth = AuthSettings()
  public var consoleLimits = ConsoleLimits()
  public var consoleTLSCertFile = ""
  public var consoleTLSKeyFile = ""
  public var consoleTLSClientCAFile = ""
  public var consoleAllowPlaintextRemote = false
  // [panel]
  public var panel = PanelSettings()
  // [fleet]
  public var fleet = FleetSettings()

  public init() {}
}

/// config.toml's schema: every key, its type, range and default, and where it lands.
public enum ConfigSchema {
  enum Kind: Sendable {
    case integer(ClosedRange<Int>)
    case boolean
    case string
    case choice([String])
    case integers(ClosedRange<Int>, count: ClosedRange<Int>)
    case choices([String], count: ClosedRange<Int>)
    case strings(count: ClosedRange<Int>)
  }

  struct Key: Sendable {
    var name: String
    var kind: Kind
    var apply: @Sendable (inout ScanConfig, ConfigValue) -> Void
  }

  static func int(_ v: ConfigValue) -> Int { if case .integer(let i) = v { return Int(i) }; return 0 }
  static func bool(_ v: ConfigValue) -> Bool { if case .boolean(let b) = v { return b }; return false }
  static func str(_ v: ConfigValue) -> String { if case .string(let s) = v { return s }; return "" }
  static func ints(_ v: ConfigValue) -> [Int] { if case .list(let l) = v { return l.map(int) }; return [] }
  static func strs(_ v: ConfigValue) -> [String] { if case .list(let l) = v { return l.map(str) }; return [] }
  static func nonEmpty(_ s: String) -> String? { s.isEmpty ? nil : s }

  static let variantNames = ImageVariant.allCases.map(\.name)
  static let formatNames = ["all", "matrix"] + BarcodeFormats.names.map(\.name)

  static let keys: [Key] = coreKeys + fleetKeys
  static let coreKeys: [Key] =
    [
      Key(name: "camera.source", kind: .choice(CameraSourceKind.allCases.map(\.rawValue))) { $0.cameraSource = CameraSourceKind(rawValue: str($1))! },
      Key(name: "camera.device", kind: .string) { $0.cameraDevice = str($1) },
      Key(name: "camera.width", kind: .integer(160...4096)) { $0.cameraWidth = int($1) },
      Key(name: "camera.height", kind: .integer(120...4096)) { $0.cameraHeight = int($1) },
      Key(name: "camera.fps", kind: .integer(1...120)) { $0.cameraFPS = int($1) },
      Key(name: "camera.format", kind: .choice(CameraPixelFormat.allCases.map(\.rawValue))) { $0.cameraFormat = CameraPixelFormat(rawValue: str($1))! },
      Key(name: "camera.buffers", kind: .integer(2...8)) { $0.cameraBuffers = int($1) },
      Key(name: "camera.mjpeg_half_scale", kind: .boolean) { $0.mjpegHalfScale = bool($1) },
      Key(name: "camera.replay_path", kind: .string) { $0.replayPath = str($1) },
      Key(name: "camera.replay_fps", kind: .integer(0...1000)) { $0.replayFPS = int($1) },
      Key(name: "camera.replay_loop", kind: .boolean) { $0.replayLoop = bool($1) },
      Key(name: "camera.reopen_backoff_ms_max", kind: .integer(100...10_000)) { $0.cameraSupervision.reopenBackoffMillisecondsMax = int($1) },
      Key(name: "camera.frame_timeout_ms", kind: .integer(100...30_000)) { $0.cameraSupervision.frameTimeoutMilliseconds = int($1) },
      Key(name: "camera.libcamera_id", kind: .string) { $0.libcamera.camera = str($1) },
      Key(name: "camera.exposure_us", kind: .integer(0...10_000_000)) { $0.libcamera.exposureMicroseconds = int($1) },
      Key(name: "camera.exposure_max_us", kind: .integer(0...10_000_000)) { $0.libcamera.exposureMaxMicroseconds = int($1) },
      Key(name: "camera.autofocus", kind: .choice(AutofocusMode.allCases.map(\.rawValue))) { $0.libcamera.autofocus = AutofocusMode(rawValue: str($1))! },
      Key(name: "camera.focus_mm", kind: .integer(0...100_000)) { $0.libcamera.focusMillimetres = int($1) },

      Key(name: "decoder.formats", kind: .choices(formatNames, count: 1...16)) {
        $0.engine.decode.formats = (try? BarcodeFormats.parse(strs($1).joined(separator: ","))) ?? .qrCode
      },
      Key(name: "decoder.variant_mode", kind: .choice(VariantMode.allCases.map(\.rawValue))) { $0.engine.decode.variantMode = VariantMode(rawValue: str($1))! },
      Key(name: "decoder.variants", kind: .choices(variantNames, count: 1...4)) { c, v in
        c.engine.decode.variants = strs(v).compactMap { n in ImageVariant.allCases.first { $0.name == n } }
      },
      Key(name: "decoder.try_harder", kind: .boolean) { $0.engine.decode.tryHarder = bool($1) },
      Key(name: "decoder.downscale", kind: .integer(1...2)) { $0.engine.decode.downscale = int($1) },
      Key(name: "decoder.roi", kind: .integers(0...4096, count: 4...4)) {
        let r = ints($1)
        $0.engine.decode.region = Region(x: r[0], y: r[1], width: r[2], height: r[3])
      },
      Key(name: "decoder.results_max", kind: .integer(1...64)) { $0.engine.resultsCapacity = int($1) },
      Key(name: "decoder.payload_bytes_max", kind: .integer(16...8192)) { $0.engine.payloadBytesMax = int($1) },
      Key(name: "decoder.arena_kib", kind: .integer(0...262_144)) { $0.decoderArenaKiB = int($1) },
      Key(name: "decoder.decode_budget_ms", kind: .integer(0...1_000)) { $0.engine.decode.budgetMicroseconds = int($1) * 1000 },
      Key(name: "decoder.isolation", kind: .choice(DecoderIsolation.allCases.map(\.rawValue))) {
        $0.decoderIsolation = DecoderIsolation(rawValue: str($1))!
      },
      Key(name: "decoder.deadline_ms", kind: .integer(10...60_000)) { $0.decoderDeadlineSetting = int($1) },
      Key(name: "decoder.start_timeout_ms", kind: .integer(1_000...600_000)) { $0.decoderStartTimeoutMilliseconds = int($1) },
      Key(name: "decoder.quiet_after_ms", kind: .integer(0...60_000)) { $0.engine.decode.quietAfterMicroseconds = int($1) * 1000 },
      Key(name: "decoder.strategy", kind: .choice(["default", "none"])) {
        $0.engine.decode.attempts = str($1) == "none" ? [] : DecodeAttempt.readerDefault
      },

      Key(name: "presence.confirm_frames", kind: .integer(1...30)) { $0.engine.presence.confirmFrames = int($1) },
      Key(name: "presence.leave_after_ms", kind: .integer(50...60_000)) { $0.engine.presence.leaveAfterMilliseconds = int($1) },
      Key(name: "presence.cooldown_ms", kind: .integer(0...600_000)) { $0.engine.presence.cooldownMilliseconds = int($1) },
      Key(name: "presence.repeat_ms", kind: .integer(0...600_000)) { $0.engine.presence.repeatMilliseconds = int($1) },
      Key(name: "presence.slots", kind: .integer(1...1024)) { $0.engine.presenceSlots = int($1) },

      Key(name: "allow_list.path", kind: .string) { $0.allowListPath = str($1) },
      Key(name: "allow_list.entries_max", kind: .integer(1...1_000_000)) { $0.engine.allowList.entriesMax = int($1) },
      Key(name: "allow_list.watch", kind: .boolean) { $0.allowListWatch = bool($1) },

      Key(name: "gpio.backend", kind: .choice(GPIOBackend.allCases.map(\.rawValue))) { $0.gpioBackend = GPIOBackend(rawValue: str($1))! },
      Key(name: "gpio.chip", kind: .string) { $0.gpioChip = str($1) },
      Key(name: "gpio.relay_line", kind: .integer(0...1023)) { $0.relayLine = int($1) },
      Key(name: "gpio.relay_active_low", kind: .boolean) { $0.relayActiveLow = bool($1) },
      Key(name: "gpio.buzzer_line", kind: .integer(0...1023)) { $0.buzzerLine = int($1) },
      Key(name: "gpio.buzzer_active_low", kind: .boolean) { $0.buzzerActiveLow = bool($1) },
      Key(name: "gpio.relay_pulse_ms", kind: .integer(50...ActuationSettings.relayPulseMillisecondsCap)) {
        $0.engine.actuation.relayPulseMilliseconds = int($1)
      },
      Key(name: "gpio.relay_pulse_ms_max", kind: .integer(50...ActuationSettings.relayPulseMillisecondsCap)) {
        $0.engine.actuation.relayPulseMillisecondsMax = int($1)
      },
      Key(name: "gpio.grant_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.engine.actuation.grantPattern = BuzzerPattern(ints($1)) },
      Key(name: "gpio.deny_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.engine.actuation.denyPattern = BuzzerPattern(ints($1)) },
      Key(name: "gpio.fault_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.engine.actuation.faultPattern = BuzzerPattern(ints($1)) },

      Key(name: "events.ring_capacity", kind: .integer(64...1_048_576)) { $0.eventRingCapacity = int($1) },

      Key(name: "state.directory", kind: .string) { $0.stateDirectorySetting = str($1) },
      Key(name: "log.path", kind: .string) { $0.log.path = str($1) },
      Key(name: "log.commit_interval_ms", kind: .integer(10...10_000)) { $0.log.commitIntervalMilliseconds = int($1) },
      Key(name: "log.retain_records", kind: .integer(1_000...100_000_000)) { $0.log.retainRecords = Int64(int($1)) },
      Key(name: "log.retain_days", kind: .integer(1...3_650)) { $0.log.retainDays = int($1) },
      Key(name: "log.raw_payloads", kind: .boolean) { $0.log.rawPayloads = bool($1) },
      Key(name: "log.retain_bytes", kind: .integer(1_048_576...1_099_511_627_776)) { $0.log.retainBytes = Int64(int($1)) },
      Key(name: "log.chain_key_file", kind: .string) { $0.log.chainKeyFile = str($1) },

      Key(name: "credentials.trust_file", kind: .string) { $0.credentials.trustFile = nonEmpty(str($1)) },
      Key(name: "credentials.site_key_file", kind: .string) { $0.credentials.siteKeyFile = nonEmpty(str($1)) },
      Key(name: "credentials.revocation_file", kind: .string) { $0.credentials.revocationFile = nonEmpty(str($1)) },
      Key(name: "credentials.used_file", kind: .string) { $0.credentials.usedFile = nonEmpty(str($1)) },
      Key(name: "credentials.clock_floor_file", kind: .string) { $0.credentials.clockFloorFile = nonEmpty(str($1)) },
      Key(name: "credentials.zones", kind: .strings(count: 0...CredentialClaims.zonesMax)) { $0.credentials.zones = strs($1) },
      Key(name: "credentials.totp_skew_steps", kind: .integer(0...3)) { $0.credentials.totpSkewSteps = int($1) },
      Key(name: "credentials.leeway_s", kind: .integer(0...600)) { $0.credentials.leewaySeconds = int($1) },
      Key(name: "credentials.time_policy", kind: .choice(TimePolicy.allCases.map(\.rawValue))) {
        $0.credentials.timePolicy = TimePolicy(rawValue: str($1))!
      },
      Key(name: "credentials.replay_cache_entries", kind: .integer(16...65_536)) { $0.credentials.replayCacheEntries = int($1) },
      Key(name: "credentials.single_use_entries", kind: .integer(16...1_000_000)) { $0.credentials.singleUseEntries = int($1) },

      Key(name: "console.listen", kind: .strings(count: 0...8)) { $0.consoleListen = strs($1) },
      Key(name: "console.clients_max", kind: .integer(1...256)) { $0.consoleClientsMax = int($1) },
      Key(name: "console.clients_per_peer_max", kind: .integer(1...256)) { $0.consoleClientsPerPeerMax = int($1) },
      Key(name: "console.idle_timeout_s", kind: .integer(10...86_400)) { $0.consoleIdleTimeoutSeconds = int($1) },
      Key(name: "console.client_output_bytes", kind: .integer(4_096...1_048_576)) { $0.consoleClientOutputBytes = int($1) },
      Key(name: "console.serial_path", kind: .string) { $0.consoleSerialPath = str($1) },
      Key(name: "console.serial_baud", kind: .choice(["9600", "19200", "38400", "57600", "115200", "230400", "460800", "921600"])) {
        $0.consoleSerialBaud = Int(str($1))!
      },
      Key(name: "console.secret_file", kind: .string) { $0.consoleSecretFile = str($1) },
      Key(name: "console.tls_cert_file", kind: .string) { $0.consoleTLSCertFile = str($1) },
      Key(name: "console.tls_key_file", kind: .string) { $0.consoleTLSKeyFile = str($1) },
      Key(name: "console.tls_client_ca_file", kind: .string) { $0.consoleTLSClientCAFile = str($1) },
      Key(name: "console.allow_plaintext_remote", kind: .boolean) { $0.consoleAllowPlaintextRemote = bool($1) },
      Key(name: "console.auth_failures_max", kind: .integer(1...100)) { $0.consoleAuth.failuresMax = int($1) },
      Key(name: "console.auth_lockout_s", kind: .integer(1...86_400)) { $0.consoleAuth.lockoutSeconds = int($1) },
      Key(name: "console.serial_operator_idle_s", kind: .integer(0...86_400)) { $0.consoleLimits.serialOperatorIdleSeconds = int($1) },
    ] + panelKeys + doorKeys

  /// Every key the file may contain.
  public static var keyNames: [String] { keys.map(\.name) }

  /// Builds a configuration from the file's entries. Collects every error (unknown keys,
  /// wrong types, out-of-range values, inconsistent combinations), each naming key and line.
  public static func build(_ entries: [ConfigEntry]) -> Result<ScanConfig, ConfigErrors> {
    var config = ScanConfig()
    var errors: [ConfigError] = []
    var seen: Set<String> = []
    for entry in entries {
      guard let key = keys.first(where: { $0.name == entry.key }) else {
        var hint = ""
        if let section = entry.key.split(separator: ".").first,
          case let known = keys.filter({ $0.name.hasPrefix(section + ".") }).map(\.name), !known.isEmpty
        {
          hint = " (known in [\(section)]: " + known.map { String($0.dropFirst(section.count + 1)) }.joined(separator: ", ") + ")"
        }
        errors.append(ConfigError(key: entry.key, line: entry.line, reason: "unknown key\(hint)"))
        continue
      }
      seen.insert(entry.key)
      if let problem = check(entry.value, against: key.kind) {
        errors.append(ConfigError(key: entry.key, line: entry.line, reason: "\(problem), got \(entry.value.display)"))
        continue
      }
      key.apply(&config, entry.value)
    }
    // A large camera mode reads with the large-frame order (docs/decoder.md): a downscaled whole
    // view every frame, full-resolution tiles and the tracked region in turn.
    if config.engine.decode.attempts == DecodeAttempt.readerDefault && config.cameraWidth * config.cameraHeight >= 1280 * 720 {
      config.engine.decode.attempts = DecodeAttempt.readerLarge(width: config.cameraWidth)
    }
    let line: (String) -> Int = { name in entries.first { $0.key == name }?.line ?? 0 }
    let a = config.engine.actuation
    if a.relayPulseMilliseconds > a.relayPulseMillisecondsMax {
      errors.append(
        ConfigError(
          key: "gpio.relay_pulse_ms", line: line("gpio.relay_pulse_ms"),
          reason: "\(a.relayPulseMilliseconds) exceeds gpio.relay_pulse_ms_max (\(a.relayPulseMillisecondsMax))"))
    }
    if let r = config.engine.decode.region,
      r.width < 16 || r.height < 16 || r.x + r.width > config.cameraWidth || r.y + r.height > config.cameraHeight
    {
      errors.append(
        ConfigError(
          key: "decoder.roi", line: line("decoder.roi"),
          reason: "[x, y, width, height] must lie inside the \(config.cameraWidth)×\(config.cameraHeight) frame and be at least 16×16"))
    }
    if config.gpioBackend == .gpiod && config.relayLine == config.buzzerLine {
      errors.append(ConfigError(key: "gpio.buzzer_line", line: line("gpio.buzzer_line"), reason: "same line as gpio.relay_line"))
    }
    if config.cameraSource == .replay && config.replayPath.isEmpty {
      errors.append(ConfigError(key: "camera.replay_path", line: line("camera.source"), reason: "camera.source = \"replay\" needs camera.replay_path"))
    }
    errors += doorErrors(config, line: line)
    errors += panelErrors(config, line: line)
    errors += lineClashErrors(config, line: line)
    errors += fleetProblems(config, line: line)
    _ = seen
    errors.sort { $0.line < $1.line }
    return errors.isEmpty ? .success(config) : .failure(ConfigErrors(errors: errors))
  }

  static func check(_ value: ConfigValue, against kind: Kind) -> String? {
    switch (kind, value) {
    case (.integer(let range), .integer(let i)):
      return range.contains(Int(i)) ? nil : "wants an integer in \(range.lowerBound)...\(range.upperBound)"
    case (.integer(let range), _):
      return "wants an integer in \(range.lowerBound)...\(range.upperBound)"
    case (.boolean, .boolean): return nil
    case (.boolean, _): return "wants true or false"
    case (.string, .string(let s)): return s.utf8.count <= 4096 ? nil : "string longer than 4096 bytes"
    case (.string, _): return "wants a string"
    case (.choice(let names), .string(let s)):
      return names.contains(s) ? nil : "wants one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
    case (.choice(let names), _): return "wants one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
    case (.integers(let range, let count), .list(let items)):
      guard count.contains(items.count) else { return "wants \(count.lowerBound)...\(count.upperBound) integers" }
      for item in items {
        guard case .integer(let i) = item, range.contains(Int(i)) else {
          return "wants integers in \(range.lowerBound)...\(range.upperBound)"
        }
      }
      return nil
    case (.integers(let range, let count), _):
      return "wants a list of \(count.lowerBound)...\(count.upperBound) integers in \(range.lowerBound)...\(range.upperBound)"
    case (.choices(let names, let count), .list(let items)):
      guard count.contains(items.count) else { return "wants a list of \(count.lowerBound)...\(count.upperBound) names" }
      for item in items {
        guard case .string(let s) = item, names.contains(s) else {
          return "wants names from " + names.joined(separator: ", ")
        }
      }
      return nil
    case (.choices(let names, _), _): return "wants a list of names from " + names.joined(separator: ", ")
    case (.strings(let count), .list(let items)):
      guard count.contains(items.count) else { return "wants a list of \(count.lowerBound)...\(count.upperBound) strings" }
      for item in items { guard case .string = item else { return "wants a list of strings" } }
      return nil
    case (.strings(let count), _): return "wants a list of \(count.lowerBound)...\(count.upperBound) strings"

    }
  }
}

/// The memory the configuration commits to at startup, line by line.
/// What the reader allocates at startup, line by line: each owner says what it allocates for
/// the configuration (the console's owner lives in ScanLinux and adds its line there).
public struct MemoryBudget: Sendable {
  public var lines: [(name: String, bytes: Int)]
  public var totalBytes: Int { lines.reduce(0) { $0 + $1.bytes } }

  /// The MJPEG decoder's arena for a frame `width` pixels wide: libjpeg's per-frame memory grows
  /// with the width (its row buffers); 640×480 4:2:2 frames use 21.6 KiB of this 104 KiB.
  public static func mjpegArenaBytes(width: Int) -> Int { (64 << 10) + 64 * max(width, 0) }

  public init(_ c: ScanConfig) {
    let frame = c.cameraWidth * c.cameraHeight
    let e = c.engine
    var lines = [
      (
        "camera buffers (driver mmap, \(c.cameraFormat.bufferCase))",
        c.cameraBuffers * frame * c.cameraFormat.bufferBytesPerPixel
      ),
      ("gray plane (MJPEG decode target)", frame),
      ("MJPEG decoder arena (libjpeg's per-frame memory)", Self.mjpegArenaBytes(width: c.cameraWidth)),
      (
        "decoder scratch plane (the strategy's largest view)",
        DecodePipeline<NoDecoder>.bytes(maxWidth: c.cameraWidth, maxHeight: c.cameraHeight, attempts: e.decode.attempts)
      ),
      ("decoder C++ arena", c.decoderArenaKiB * 1024),
      (
        "result slots (\(e.resultsCapacity) × \(e.payloadBytesMax) B × payload+text)",
        DecodeResults.bytes(capacity: e.resultsCapacity, payloadBytesMax: e.payloadBytesMax)
      ),
      ("allow-list tables (live + spare, \(e.allowList.entriesMax) entries)", 2 * AllowListTable.bytes(entriesMax: e.allowList.entriesMax)),
      ("presence slots (\(e.presenceSlots))", PresenceTracker.bytes(capacity: e.presenceSlots)),
      (
        "event ring (\(EventRing.roundedCapacity(c.eventRingCapacity)) × \(MemoryLayout<ScanEvent>.stride) B)",
        EventRing.bytes(capacity: c.eventRingCapacity)
      ),
    ]
    if c.credentials.enabled {
      lines.append(
        ("signed credentials (message, replay cache of \(c.credentials.replayCacheEntries))", CredentialVerifier.bytes(c.credentials)))
    }
    self.lines = lines
  }
}

/// A decoder type for asking `DecodePipeline` its size without one.
public struct NoDecoder: CodeDecoder {
  public mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {}
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
