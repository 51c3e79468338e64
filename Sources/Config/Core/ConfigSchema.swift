import ScanAccess
import ScanAudit
import ScanBase
import ScanDoor
import ScanEmergency
import ScanKeypad
import ScanTurnstile
import ScanFleet
import ScanPanels
import ScanReader

/// config.toml's schema: every key, its type, range and default, and where it lands. Each
/// domain lists the keys of its own section (`DoorConfig.configKeys`, `FleetSettings.configKeys`,
/// ...); this file lifts them onto `ScanConfig` through key paths, adds the keys that set
/// `ScanConfig`'s own fields (camera, decoder, lines, console), and checks the combinations
/// that span sections. The order of `keys` is the order an unknown key's hint lists them in.
public enum ConfigSchema {
  typealias Key = ConfigKey<ScanConfig>

  static let variantNames = ImageVariant.allCases.map(\.name)
  static let formatNames = ["all", "matrix"] + BarcodeFormats.names.map(\.name)

  static let keys: [Key] = sections.flatMap { $0 }

  /// Every section's keys, in config.toml's order: the reader's own, then each domain's.
  static let sections: [[Key]] =
    [
      cameraKeys, decoderKeys, EngineSettings.presenceKeys.lifted(\.engine), allowListKeys, gpioKeys,
      [
        Key(name: "events.ring_capacity", kind: .integer(64...1_048_576)) { $0.eventRingCapacity = $1.asInt },
        Key(name: "state.directory", kind: .string) { $0.stateDirectorySetting = $1.asString },
      ],
      consoleKeys,
    ] + domains.map(\.keys)

  /// One entry per domain: its section on ScanConfig. Its keys, its GPIO lines and its checks
  /// are the domain's own (`ConfigSection`); the schema only loops over them. A line wired twice
  /// is reported on the later key in this order.
  static let domains: [DomainSection] = [
    DomainSection(\.log), DomainSection(\.credentials), DomainSection(\.door), DomainSection(\.emergency),
    DomainSection(\.turnstile), DomainSection(\.panel), DomainSection(\.keypad), DomainSection(\.fleet),
    DomainSection(\.feedback),
  ]

  /// A domain's section as ScanConfig holds it: its keys lifted onto ScanConfig, and its lines
  /// and checks read through the same key path.
  struct DomainSection: Sendable {
    let keys: [Key]
    let linesInUse: @Sendable (ScanConfig) -> [(key: String, offset: Int)]
    let problems: @Sendable (ScanConfig, ReaderFacts, ConfigLineLookup) -> [ConfigError]
    let replacesChirps: @Sendable (ScanConfig) -> Bool

    init<Section: ConfigSection>(_ path: any WritableKeyPath<ScanConfig, Section> & Sendable) {
      keys = Section.configKeys.lifted(path)
      linesInUse = { $0[keyPath: path].linesInUse }
      problems = { $0[keyPath: path].configProblems($1, line: $2) }
      replacesChirps = { $0[keyPath: path].replacesChirps }
    }
  }

  /// What every domain's checks may consult of the whole reader.
  static func facts(_ c: ScanConfig) -> ReaderFacts {
    ReaderFacts(
      gpiod: c.gpio.backend == .gpiod, panelDecides: c.panel.mode == .panel, keysToPanel: c.panel.mode == .panel && c.panel.link == .osdp,
      logPath: c.log.path, siteKeyFile: c.siteKeyFile)
  }

  static let cameraKeys: [Key] =
    [
      Key(name: "camera.source", kind: .choice(CameraSourceKind.allCases.map(\.rawValue))) {
        $0.camera.source = CameraSourceKind(rawValue: $1.asString)!
      },
      Key(name: "camera.device", kind: .string) { $0.camera.device = $1.asString },
      Key(name: "camera.width", kind: .integer(160...4096)) { $0.camera.width = $1.asInt },
      Key(name: "camera.height", kind: .integer(120...4096)) { $0.camera.height = $1.asInt },
      Key(name: "camera.fps", kind: .integer(1...120)) { $0.camera.fps = $1.asInt },
      Key(name: "camera.format", kind: .choice(CameraPixelFormat.allCases.map(\.rawValue))) {
        $0.camera.format = CameraPixelFormat(rawValue: $1.asString)!
      },
      Key(name: "camera.buffers", kind: .integer(2...8)) { $0.camera.buffers = $1.asInt },
      Key(name: "camera.mjpeg_half_scale", kind: .boolean) { $0.camera.mjpegHalfScale = $1.asBool },
      Key(name: "camera.replay_path", kind: .string) { $0.camera.replayPath = $1.asString },
      Key(name: "camera.replay_fps", kind: .integer(0...1000)) { $0.camera.replayFPS = $1.asInt },
      Key(name: "camera.replay_loop", kind: .boolean) { $0.camera.replayLoop = $1.asBool },
      Key(name: "camera.second", kind: .string) { $0.camera.second = $1.asString },
    ] + CameraSupervisor.Settings.configKeys.lifted(\.camera.supervision) + LibcameraSettings.configKeys.lifted(\.libcamera)

  /// `[decoder]`: the engine's decode settings and the worker processes' (ScanConfig's own).
  static let decoderKeys: [Key] = [
    Key(name: "decoder.formats", kind: .choices(formatNames, count: 1...16)) {
      $0.engine.decode.formats = (try? BarcodeFormats.parse($1.asStrings.joined(separator: ","))) ?? .qrCode
    },
    Key(name: "decoder.variant_mode", kind: .choice(VariantMode.allCases.map(\.rawValue))) {
      $0.engine.decode.variantMode = VariantMode(rawValue: $1.asString)!
    },
    Key(name: "decoder.variants", kind: .choices(variantNames, count: 1...4)) { c, v in
      c.engine.decode.variants = v.asStrings.compactMap { n in ImageVariant.allCases.first { $0.name == n } }
    },
    Key(name: "decoder.try_harder", kind: .boolean) { $0.engine.decode.tryHarder = $1.asBool },
    Key(name: "decoder.downscale", kind: .integer(1...2)) { $0.engine.decode.downscale = $1.asInt },
    Key(name: "decoder.roi", kind: .integers(0...4096, count: 4...4)) {
      let r = $1.asInts
      $0.engine.decode.region = Region(x: r[0], y: r[1], width: r[2], height: r[3])
    },
    Key(name: "decoder.results_max", kind: .integer(1...64)) { $0.engine.resultsCapacity = $1.asInt },
    Key(name: "decoder.payload_bytes_max", kind: .integer(16...8192)) { $0.engine.payloadBytesMax = $1.asInt },
    Key(name: "decoder.arena_kib", kind: .integer(0...262_144)) { $0.decoder.arenaKiB = $1.asInt },
    Key(name: "decoder.decode_budget_ms", kind: .integer(0...1_000)) { $0.engine.decode.budgetMicroseconds = $1.asInt * 1000 },
    Key(name: "decoder.isolation", kind: .choice(DecoderIsolation.allCases.map(\.rawValue))) {
      $0.decoder.isolation = DecoderIsolation(rawValue: $1.asString)!
    },
    Key(name: "decoder.deadline_ms", kind: .integer(10...60_000)) { $0.decoder.deadlineSetting = $1.asInt },
    Key(name: "decoder.start_timeout_ms", kind: .integer(1_000...600_000)) { $0.decoder.startTimeoutMilliseconds = $1.asInt },
    Key(name: "decoder.quiet_after_ms", kind: .integer(0...60_000)) { $0.engine.decode.quietAfterMicroseconds = $1.asInt * 1000 },
    Key(name: "decoder.strategy", kind: .choice(["default", "none"])) {
      $0.engine.decode.attempts = $1.asString == "none" ? [] : DecodeAttempt.readerDefault
    },
  ]

  static let allowListKeys: [Key] = [
    Key(name: "allow_list.path", kind: .string) { $0.allowListPath = $1.asString },
    Key(name: "allow_list.entries_max", kind: .integer(1...1_000_000)) { $0.engine.allowList.entriesMax = $1.asInt },
    Key(name: "allow_list.watch", kind: .boolean) { $0.allowListWatch = $1.asBool },
  ]

  /// `[gpio]`: the chip and the relay's and buzzer's lines, then the actuator's timing.
  static let gpioKeys: [Key] =
    [
      Key(name: "gpio.backend", kind: .choice(GPIOBackend.allCases.map(\.rawValue))) { $0.gpio.backend = GPIOBackend(rawValue: $1.asString)! },
      Key(name: "gpio.chip", kind: .string) { $0.gpio.chip = $1.asString },
      Key(name: "gpio.relay_line", kind: .integer(0...1023)) { $0.gpio.relayLine = $1.asInt },
      Key(name: "gpio.relay_active_low", kind: .boolean) { $0.gpio.relayActiveLow = $1.asBool },
      Key(name: "gpio.buzzer_line", kind: .integer(0...1023)) { $0.gpio.buzzerLine = $1.asInt },
      Key(name: "gpio.buzzer_active_low", kind: .boolean) { $0.gpio.buzzerActiveLow = $1.asBool },
    ] + ActuationSettings.configKeys.lifted(\.engine.actuation)

  static let consoleKeys: [Key] = [
    Key(name: "console.listen", kind: .strings(count: 0...8)) { $0.console.listen = $1.asStrings },
    Key(name: "console.clients_max", kind: .integer(1...256)) { $0.console.clientsMax = $1.asInt },
    Key(name: "console.clients_per_peer_max", kind: .integer(1...256)) { $0.console.clientsPerPeerMax = $1.asInt },
    Key(name: "console.idle_timeout_s", kind: .integer(10...86_400)) { $0.console.idleTimeoutSeconds = $1.asInt },
    Key(name: "console.client_output_bytes", kind: .integer(4_096...1_048_576)) { $0.console.clientOutputBytes = $1.asInt },
    Key(name: "console.serial_path", kind: .string) { $0.console.serialPath = $1.asString },
    Key(name: "console.serial_baud", kind: .choice(["9600", "19200", "38400", "57600", "115200", "230400", "460800", "921600"])) {
      $0.console.serialBaud = Int($1.asString)!
    },
    Key(name: "console.secret_file", kind: .string) { $0.console.secretFile = $1.asString },
    Key(name: "console.unix_path", kind: .string) { $0.console.unixPath = $1.asString },
    Key(name: "admin.users_file", kind: .string) { $0.admin.usersFile = $1.asString },
    Key(name: "admin.listen", kind: .string) { $0.admin.listen = $1.asString },
    Key(name: "admin.tls_cert_file", kind: .string) { $0.admin.tlsCertFile = $1.asString },
    Key(name: "admin.tls_key_file", kind: .string) { $0.admin.tlsKeyFile = $1.asString },
    Key(name: "admin.session_idle_minutes", kind: .integer(1...1_440)) { $0.admin.sessionIdleMinutes = $1.asInt },
    Key(name: "admin.metrics_token_file", kind: .string) { $0.admin.metricsTokenFile = $1.asString },
    Key(name: "admin.issuer_key_file", kind: .string) { $0.admin.issuerKeyFile = $1.asString },
    Key(name: "admin.issuer_kid", kind: .string) { $0.admin.issuerKid = $1.asString },
    Key(name: "admin.reader", kind: .string) { $0.admin.reader.address = $1.asString },
    Key(name: "admin.reader_ca_file", kind: .string) { $0.admin.reader.caFile = $1.asString },
    Key(name: "admin.reader_cert_file", kind: .string) { $0.admin.reader.certFile = $1.asString },
    Key(name: "admin.reader_key_file", kind: .string) { $0.admin.reader.keyFile = $1.asString },
    Key(name: "admin.reader_secret_file", kind: .string) { $0.admin.reader.secretFile = $1.asString },
    Key(name: "console.unix_operators", kind: .strings(count: 0...16)) { $0.console.unixOperators = $1.asStrings },
    Key(name: "console.tls_cert_file", kind: .string) { $0.console.tlsCertFile = $1.asString },
    Key(name: "console.tls_key_file", kind: .string) { $0.console.tlsKeyFile = $1.asString },
    Key(name: "console.tls_client_ca_file", kind: .string) { $0.console.tlsClientCAFile = $1.asString },
    Key(name: "console.allow_plaintext_remote", kind: .boolean) { $0.console.allowPlaintextRemote = $1.asBool },
    Key(name: "console.auth_failures_max", kind: .integer(1...100)) { $0.console.auth.failuresMax = $1.asInt },
    Key(name: "console.auth_lockout_s", kind: .integer(1...86_400)) { $0.console.auth.lockoutSeconds = $1.asInt },
    Key(name: "console.serial_operator_idle_s", kind: .integer(0...86_400)) { $0.console.limits.serialOperatorIdleSeconds = $1.asInt },
  ]

  /// Every key the file may contain.
  public static var keyNames: [String] { keys.map(\.name) }

  /// Builds a configuration from the file's entries. Collects every error (unknown keys,
  /// wrong types, out-of-range values, inconsistent combinations), each naming key and line.
  public static func build(_ entries: [ConfigEntry]) -> Result<ScanConfig, ConfigErrors> {
    var config = ScanConfig()
    var errors: [ConfigError] = []
    for entry in entries {
      guard let key = keys.first(where: { $0.name == entry.key }) else {
        errors.append(ConfigError(key: entry.key, line: entry.line, reason: "unknown key\(hint(entry.key))"))
        continue
      }
      if let problem = key.kind.problem(with: entry.value) {
        errors.append(ConfigError(key: entry.key, line: entry.line, reason: "\(problem), got \(entry.value.display)"))
        continue
      }
      key.apply(&config, entry.value)
    }
    derive(&config)
    let line: ConfigLineLookup = { name in entries.first { $0.key == name }?.line ?? 0 }
    let facts = facts(config)
    for domain in domains { errors += domain.problems(config, facts, line) }
    errors += config.engine.actuation.configProblems(line: line)
    errors += readerProblems(config, line: line)
    // A grant is a door's strike pulse, a turnstile's passage or a panel's card read: one of them.
    if config.turnstile.machine.enabled && config.door.machine.enabled {
      errors.append(
        ConfigError(key: "turnstile.enabled", line: line("turnstile.enabled"), reason: "a reader drives a door or a turnstile: turn door.enabled off"))
    }
    // A second camera is a turnstile's exit camera, and a turnstile's "camera" direction needs it.
    let cameraDirection = config.turnstile.machine.enabled && config.turnstile.direction == .camera
    if !config.camera.second.isEmpty && !cameraDirection {
      errors.append(
        ConfigError(
          key: "camera.second", line: line("camera.second"),
          reason: "a second camera is a turnstile's exit camera: it needs turnstile.enabled and turnstile.direction = \"camera\""))
    }
    if !config.camera.second.isEmpty && config.camera.source == .libcamera {
      // libcamera allows one camera manager per process (a second aborts it): not yet shared.
      errors.append(
        ConfigError(
          key: "camera.second", line: line("camera.second"),
          reason: "camera.source = \"libcamera\" opens one camera per reader: run a reader per camera (docs/turnstiles.md)"))
    }
    if cameraDirection && config.camera.second.isEmpty {
      errors.append(ConfigError(key: "turnstile.direction", line: line("turnstile.direction"), reason: "direction = \"camera\" needs camera.second"))
    }
    errors += lineClashErrors(config, line: line)
    errors += keyFileClashErrors(config, line: line)
    errors += actorProblems(config, line: line)
    errors.sort { $0.line < $1.line }
    return errors.isEmpty ? .success(config) : .failure(ConfigErrors(errors: errors))
  }

  /// Who acts from outside needs what carries it out here: `console.unix_operators` a socket;
  /// each command Home Assistant may send: the open a door of
  /// this reader's own (the lock shows its strike), the anti-passback and occupancy buttons a
  /// turnstile (with anti-passback, for the first).
  static func actorProblems(_ config: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    let key = "fleet.home_assistant_commands"
    var errors: [ConfigError] = []
    if !config.console.unixOperators.isEmpty && config.console.unixPath.isEmpty {
      // Operators of a socket that is not there: a setting that would mean nothing.
      errors.append(
        ConfigError(
          key: "console.unix_operators", line: line("console.unix_operators"),
          reason: "operators on a Unix socket that is not there: set console.unix_path, or remove them"))
    }
    errors += siteKeyProblems(config, line: line)
    errors += issuerProblems(config, line: line)
    for command in config.fleet.homeAssistantCommands {
      let missing: String? =
        switch command {
        case .open: config.door.machine.enabled ? nil : "\"open\" needs the reader's own door ([door] enabled = true): Home Assistant's lock shows its strike"
        case .lockdown: nil
        case .passbackForgive:
          config.turnstile.machine.enabled && config.turnstile.passback.mode != .off ? nil : "\"passback-forgive\" needs a turnstile with anti-passback"
        case .occupancyReset: config.turnstile.machine.enabled ? nil : "\"occupancy-reset\" needs a turnstile"
        }
      if let missing { errors.append(ConfigError(key: key, line: line(key), reason: missing)) }
    }
    return errors
  }

  /// The page drives a reader only through its Unix socket, so it needs one, unless it is an
  /// issuer's page (guest passes only), which must never sit beside a reader: a reader's host
  /// holding the issuer key would let whoever takes the reader make passes for every door.
  static func issuerProblems(_ config: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    let issuer = !config.admin.issuerKeyFile.isEmpty
    let remote = config.admin.reader
    if !config.admin.listen.isEmpty && config.console.unixPath.isEmpty && remote.address.isEmpty && !issuer {
      errors.append(
        ConfigError(
          key: "admin.listen", line: line("admin.listen"),
          reason: "the web page needs a reader (console.unix_path here, or admin.reader on another host) or admin.issuer_key_file"))
    }
    if !remote.address.isEmpty && !config.console.unixPath.isEmpty {
      errors.append(
        ConfigError(key: "admin.reader", line: line("admin.reader"), reason: "one reader a page: console.unix_path (this host's) or admin.reader, not both"))
    }
    if !remote.address.isEmpty && (remote.caFile.isEmpty || remote.certFile.isEmpty || remote.keyFile.isEmpty) {
      errors.append(
        ConfigError(
          key: "admin.reader", line: line("admin.reader"),
          reason: "a reader on another host is reached over TLS only: admin.reader_ca_file, reader_cert_file and reader_key_file"))
    }
    if issuer && !config.console.unixPath.isEmpty {
      errors.append(
        ConfigError(
          key: "admin.issuer_key_file", line: line("admin.issuer_key_file"),
          reason: "an issuer key never sits beside a reader (console.unix_path is set): issue passes on a machine that runs no reader"))
    }
    let kid = config.admin.issuerKid.utf8
    if issuer && !((1...64).contains(kid.count) && kid.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 })) {
      errors.append(
        ConfigError(
          key: "admin.issuer_kid", line: line("admin.issuer_kid"), reason: "the issuer key's id in the readers' trust files: 1 to 64 printable characters"))
    }
    return errors
  }

  /// The site key the readers of a site share: one file (`fleet.site_key_file`, or the
  /// turnstile's), and counted uses site-wide need it, signed passes and the fleet link.
  static func siteKeyProblems(_ config: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    let fleetKey = config.fleet.siteKeyFile, turnstileKey = config.turnstile.site.keyFile
    if !fleetKey.isEmpty && !turnstileKey.isEmpty && fleetKey != turnstileKey {
      errors.append(
        ConfigError(
          key: "turnstile.site_key_file", line: line("turnstile.site_key_file"),
          reason: "a second site key (fleet.site_key_file names another file): a site has one; set fleet.site_key_file only"))
    }
    guard config.credentials.usesScope == .site else { return errors }
    let key = "credentials.uses_scope"
    let missing = [
      config.credentials.enabled ? nil : "signed passes (credentials.trust_file)",
      config.fleet.isEnabled ? nil : "the fleet link ([fleet] brokers)",
      config.siteKeyFile.isEmpty ? "the site key (fleet.site_key_file)" : nil,
    ].compactMap { $0 }
    if !missing.isEmpty {
      errors.append(ConfigError(key: key, line: line(key), reason: "\"site\" needs " + missing.joined(separator: ", ")))
    }
    return errors
  }

  /// ` (known in [camera]: source, device, ...)` for an unknown key in a known section.
  static func hint(_ name: String) -> String {
    guard let section = name.split(separator: ".").first,
      case let known = keys.filter({ $0.name.hasPrefix(section + ".") }).map(\.name), !known.isEmpty
    else { return "" }
    return " (known in [\(section)]: " + known.map { String($0.dropFirst(section.count + 1)) }.joined(separator: ", ") + ")"
  }

  /// The region of interest, the relay and buzzer lines, and the replay source.
  static func readerProblems(_ config: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    if let r = config.engine.decode.region,
      r.width < 16 || r.height < 16 || r.x + r.width > config.camera.width || r.y + r.height > config.camera.height
    {
      errors.append(
        ConfigError(
          key: "decoder.roi", line: line("decoder.roi"),
          reason: "[x, y, width, height] must lie inside the \(config.camera.width)×\(config.camera.height) frame and be at least 16×16"))
    }
    if config.gpio.backend == .gpiod && config.gpio.relayLine == config.gpio.buzzerLine {
      errors.append(ConfigError(key: "gpio.buzzer_line", line: line("gpio.buzzer_line"), reason: "same line as gpio.relay_line"))
    }
    if config.camera.source == .replay && config.camera.replayPath.isEmpty {
      errors.append(ConfigError(key: "camera.replay_path", line: line("camera.source"), reason: "camera.source = \"replay\" needs camera.replay_path"))
    }
    return errors
  }

  /// No two of the lines in use on `gpio.chip` (relay, buzzer, the door's, Wiegand's) may share
  /// an offset: each is requested by one owner.
  /// No two secrets share a file (docs/credentials.md, "The key tree"): each key has one purpose,
  /// so a site key for passes (X25519) is never also the turnstile's passage key (HMAC), a PIN key
  /// or the log's chain or tag key.
  static func keyFileClashErrors(_ c: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    let logKey = c.log.path.isEmpty ? "" : (c.log.chainKeyFile.isEmpty ? c.log.path + ".key" : c.log.chainKeyFile)
    let files: [(String, String)] = [
      ("credentials.site_key_file", c.credentials.siteKeyFile ?? ""),
      ("turnstile.site_key_file", c.turnstile.site.keyFile == c.fleet.siteKeyFile ? "" : c.turnstile.site.keyFile),
      ("fleet.site_key_file", c.fleet.siteKeyFile),
      ("keypad.pin_key_file", c.keypad.pinKeyFile), ("console.secret_file", c.console.secretFile),
      ("console.tls_key_file", c.console.tlsKeyFile), ("fleet.tls_key_file", c.fleet.tlsKeyFile),
      ("fleet.password_file", c.fleet.passwordFile), ("panel.scbk_file", c.panel.scbkFile),
      ("log.chain_key_file", logKey), ("log.path (its tag key)", c.log.path.isEmpty ? "" : c.log.path + ".tag-key"),
    ]
    var errors: [ConfigError] = []
    for (i, (name, path)) in files.enumerated() where !path.isEmpty {
      if let clash = files[..<i].first(where: { $0.1 == path }) {
        let key = name.hasPrefix("log.path") ? "log.path" : name
        errors.append(ConfigError(key: key, line: line(key), reason: "the same file as \(clash.0): every key has one purpose and its own file"))
      }
    }
    return errors
  }

  static func lineClashErrors(_ c: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    guard c.gpio.backend == .gpiod else { return [] }
    var errors: [ConfigError] = []
    var used: [(String, Int)] = [("gpio.relay_line", c.gpio.relayLine), ("gpio.buzzer_line", c.gpio.buzzerLine)]
    for (name, offset) in domains.flatMap({ $0.linesInUse(c) }) where offset >= 0 {
      if let clash = used.first(where: { $0.1 == offset }) {
        errors.append(ConfigError(key: name, line: line(name), reason: "same line as \(clash.0)"))
      }
      used.append((name, offset))
    }
    return errors
  }
}
