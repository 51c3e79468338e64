import Glibc
import ScanCore
import ScanLinux
import ScanLoop

/// Builds the service from a configuration and runs it until a signal (or the frame limit).
public enum Service {
  public struct Options {
    public var maxFrames: UInt64 = 0
    /// Where the configuration was read (BACKUP archives it); nil: no backups over the console.
    public var configPath: String? = nil
    public var skipping: Set<EventKind> = []
    public var quiet = false
    /// SIGTERM/SIGINT stop and SIGHUP reloads through a signalfd (false: a test runs the service
    /// in its own process and stops it by the frame limit).
    public var handleSignals = true
    /// Drives the door's simulated lines from the loop (the demo): a participant registered after the door.
    public var doorDriver: ((DoorSetup.SimulatedLines, EventRing) -> any PollParticipant)? = nil
    /// The fire and lockdown inputs with `gpio.backend = "sim"` (nil: not wired).
    public var emergencyLines: EmergencySetup.SimulatedLines? = nil
    /// The turnstile's simulated lines (nil: made by the service) and the script that drives them
    /// (the demo), registered after the turnstile.
    public var turnstileLines: TurnstileSetup.SimulatedLines? = nil
    /// With simulated GPIO: the turnstile's scripted hand (the demo's, `--sim-passages`).
    public var turnstileDriver: ((TurnstileSetup.DriverContext) -> any PollParticipant)? = nil
    /// Which camera a decision came from, with `camera.second` (set by `withSource`; the turnstile reads it).
    public var cameraOrigin: FrameOrigin? = nil
    /// The PIN keypad's keys (nil: the configured input device; tests give their own).
    public var keySource: (any KeySource)? = nil
    /// With `gpio.backend = "sim"`: output lines a test watches, by their config key
    /// (`"feedback.green_line"`); any other simulated line is made by the service.
    public var watchedOutputs: [String: any OutputLine] = [:]
    public init() {}
  }

  public static func cameraSettings(_ c: ScanConfig) -> CameraSettings {
    CameraSettings(
      path: c.camera.device, width: c.camera.width, height: c.camera.height, fps: c.camera.fps,
      format: c.camera.format, buffers: c.camera.buffers, mjpegHalfScale: c.camera.mjpegHalfScale)
  }

  /// Runs with the configured source and GPIO backend. Returns the exit status.
  public static func run(_ config: ScanConfig, options: Options) -> Int32 {
    guard config.admin.issuerKeyFile.isEmpty else {
      // An issuer's configuration: whoever takes a reader that holds the issuer key can make
      // passes for every door of the site.
      writeStandardError("scangate: refused: admin.issuer_key_file is set: this configuration is an issuer's, and a reader never holds the issuer key\n")
      return 1
    }
    if let problem = DescriptorLimit.ensure(DescriptorLimit.needed(consoleClients: config.console.clientsMax)) {
      writeStandardError("scangate: refused: \(problem)\n")
      return 1
    }
    switch config.gpio.backend {
    case .sim:
      let relay = SimulatedOutputLine()
      let buzzer = SimulatedOutputLine()
      do {
        let watchdog = try RelayWatchdog(simulated: relay)
        return withSource(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog)
      } catch {
        writeStandardError("scangate: cannot \(error.operation): \(error.errno)\n")
        return 1
      }
    case .gpiod:
      do {
        let relay = try GPIODOutputLine(chip: config.gpio.chip, offset: UInt32(config.gpio.relayLine), activeLow: config.gpio.relayActiveLow)
        let buzzer = try GPIODOutputLine(chip: config.gpio.chip, offset: UInt32(config.gpio.buzzerLine), activeLow: config.gpio.buzzerActiveLow)
        let watchdog = try RelayWatchdog(relay: relay)
        return withSource(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog)
      } catch {
        writeStandardError("scangate: cannot request GPIO lines: \(error.operation): \(error.errno)\n")
        return 1
      }
    }
  }

  public static func withSource<R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ config: ScanConfig, options: Options, relay: consuming R, buzzer: consuming B, watchdog: RelayWatchdog
  ) -> Int32 {
    // `camera.second`: the same kind of source twice, decoded in turn (a turnstile's exit camera).
    let second = config.camera.second.isEmpty ? nil : config.camera.second
    var options = options
    let origin = FrameOrigin()
    if second != nil { options.cameraOrigin = origin }
    let stale = config.camera.supervision.frameTimeoutMilliseconds
    switch config.camera.source {
    case .v4l2:
      let settings = cameraSettings(config)
      guard let second else {
        return serve(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog) { () throws(CaptureError) in
          try V4L2FrameSource(settings)
        }
      }
      var exit = settings
      exit.path = second
      return serve(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog) { () throws(CaptureError) in
        try CameraPair(first: V4L2FrameSource(settings), second: V4L2FrameSource(exit), staleAfterMilliseconds: stale, origin: origin)
      }
    case .libcamera:
      if let reason = LibcameraFrameSource.unavailableReason {
        writeStandardError("scangate: camera.source = \"libcamera\": \(reason)\n")
        return 1
      }
      let settings = LibcameraSourceSettings(
        width: config.camera.width, height: config.camera.height, fps: config.camera.fps, buffers: config.camera.buffers,
        camera: config.libcamera)
      // One libcamera camera per process (the configuration refuses `camera.second` with it).
      return serve(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog) { () throws(CaptureError) in
        try LibcameraFrameSource(settings)
      }
    case .replay:
      let clock = SystemMonotonicClock()
      let replay = { (path: String) throws(CaptureError) -> ReplayFrameSource in
        try ReplayFrameSource(
          path: path, width: config.camera.width, height: config.camera.height, framesPerSecond: config.camera.replayFPS,
          loops: config.camera.replayLoop, clock: clock)
      }
      guard let second else {
        return serve(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog) { () throws(CaptureError) in
          try replay(config.camera.replayPath)
        }
      }
      return serve(config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog) { () throws(CaptureError) in
        try CameraPair(first: replay(config.camera.replayPath), second: replay(second), staleAfterMilliseconds: stale, origin: origin)
      }
    }
  }

  public static func serve<S: LoopFrameSource & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ config: ScanConfig, options: Options, relay: consuming R, buzzer: consuming B, watchdog: RelayWatchdog,
    openSource: @escaping () throws(CaptureError) -> S
  ) -> Int32 {
    if config.decoder.isolation == .process {
      // The workers start first, from a service that has read nothing but its configuration.
      let workers: DecoderWorkers
      do { workers = try makeDecoderWorkers(config) } catch {
        writeStandardError("scangate: decoder workers: \(error)\n")
        return 1
      }
      // Two start timeouts: a slow first start (a cold page cache, an emulated CPU) gets one retry.
      let wait = 2 * config.decoder.startTimeoutMilliseconds + 1_000
      // Under systemd the unit's TimeoutStartSec (60 s) would end a longer wait first, before the
      // reason is printed: the wait is announced as an extension of the start timeout.
      ServiceNotifier().send { w in
        w.write("EXTEND_TIMEOUT_USEC=")
        w.write(wait * 1_000)
        w.write("\nSTATUS=starting the decoder workers")
      }
      guard workers.waitUntilReady(milliseconds: wait) else {
        let s = workers.stats
        writeStandardError(
          "scangate: no decoder worker was ready within \(wait) ms (\(s.startFailures) failed starts, last \(workers.lastCrashName ?? "none")): "
            + "seccomp unavailable, or a start slower than decoder.start_timeout_ms (\(config.decoder.startTimeoutMilliseconds) ms); "
            + "decoder.isolation = \"inline\" decodes in the service\n")
        return 1
      }
      return serve(
        config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog, decoder: IdleDecoder(), workers: workers,
        openSource: openSource)
    }
    let decoder: ZXingDecoder
    do { decoder = try makeDecoder(config) } catch {
      writeStandardError("scangate: \(error)\n")
      return 1
    }
    return serve(
      config, options: options, relay: relay, buzzer: buzzer, watchdog: watchdog, decoder: decoder, workers: nil,
      openSource: openSource)
  }

  // MARK: - The parts, built one way for run, demo and soak

  /// The fleet link's handler for signed bundles and commands; returns the loop's side of it.
  public static func fleetControl(_ config: ScanConfig, link: FleetLink, time: TrustedTime) -> FleetRequests {
    let snapshot =
      config.fleet.snapshot == .off
      ? nil : FleetSnapshot(policy: config.fleet.snapshot, maxWidth: config.camera.width, maxHeight: config.camera.height)
    if config.decoder.isolation == .process {
      // The redaction's second look (every attempt, view and format) in workers of its own.
      snapshot?.makeWorkers = {
        try? FleetSnapshot.secondLookWorkers(
          maxWidth: config.camera.width, maxHeight: config.camera.height, arenaBytes: config.decoder.arenaKiB * 1024,
          supervision: config.decoderSupervision)
      }
    }
    let requests = FleetRequests(
      link: link, followsOffline: config.fleet.offlinePolicy == .denyAllButStatic, snapshot: snapshot)
    // Bundles and commands are signed with the credential issuer keys; without a trust file
    // every one is refused. A bundle may replace only the files this reader has configured.
    let c = config.credentials
    let targets = FleetBundleFiles.targets(config)
    let control = FleetControl(
      settings: config.fleet, statePath: link.statePath,
      verifier: c.trustFile.map { Sign1EnvelopeVerifier(trustPath: $0, payloadBytesMax: config.fleet.messageBytesMax) },
      targets: targets, requests: requests)
    control.time = time
    // The allow-list and revocation watchers (inotify) and the schedule watcher reload those.
    control.watchedTargets = config.allowListWatch ? ["allow-list", "revocation", "schedules"] : ["schedules"]
    link.inbox = control
    return requests
  }

  /// Signed credentials as configured: the verifier joins the loop's policies, the clock
  /// watcher and the revocation list's watcher join its participants. Problems are loud and
  /// fail secure (signed passes refused), never fatal: the allow-list keeps working.
  public static func installCredentials<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable,
    C: MonotonicClock, W: WallClock, G: PayloadDigester
  >(_ config: ScanConfig, loop: inout RunLoop<S, D, R, B, C, W, G>) {
    let c = config.credentials
    guard c.enabled else { return }
    var siteKey: [UInt8]? = nil
    if let path = c.siteKeyFile {
      do { siteKey = try CredentialFiles.readSecretKey(path) } catch {
        writeStandardError("scangate: credentials: \(error); rotating passes are refused\n")
      }
    }
    let crypto = SodiumCredentialCrypto(siteSecretKey: siteKey)
    if var k = siteKey { SecretBytes.wipe(&k) }
    let verifier = CredentialVerifier(settings: c, sign1: Sign1Verifier(trust: TrustStore(), codec: LibCBOR(), crypto: crypto))
    verifier.hasSiteKey = crypto.hasSiteKey
    verifier.ready = c.revocationFile == nil
    CredentialState.open(config, into: verifier, report: { writeStandardError("scangate: credentials: \($0)\n") })
    loop.engine.policy.credentials = verifier
    if config.allowListWatch, let path = c.revocationFile { loop.register(AllowListWatcher(path: path)) }
    if let path = c.trustFile, (try? CredentialFiles.readTrust(path)) == nil {
      writeStandardError("scangate: credentials: trust file \(path) does not load; signed passes are refused until it does\n")
    }
  }

  /// The clock floor's keeper, with its file (`credentials.clock_floor_file`, or in the state directory).
  public static func makeClockFloorKeeper(_ config: ScanConfig, ring: EventRing) -> ClockFloorKeeper {
    let keeper = ClockFloorKeeper(
      time: TrustedTime(), ring: ring, path: config.credentials.clockFloorFile ?? config.statePath("clock-floor"))
    if let problem = keeper.problem { writeStandardError("scangate: clock floor: \(problem)\n") }
    return keeper
  }

  /// The decoder as configured (arena, result slots, try-harder).
  public static func makeDecoder(_ config: ScanConfig) throws(SystemError) -> ZXingDecoder {
    try ZXingDecoder(
      arenaBytes: config.decoder.arenaKiB * 1024, capacity: config.engine.resultsCapacity,
      tryHarder: config.engine.decode.tryHarder)
  }

  /// The decoder worker processes as configured (docs/decoder.md, "The decoder worker"). Debug
  /// builds pass SCANGATE_DECODER_TEST_HOOKS (abort, open, spin) on to the workers (the fault tests).
  public static func makeDecoderWorkers(_ config: ScanConfig) throws(SystemError) -> DecoderWorkers {
    var settings = DecoderWorkerSettings(
      decode: config.engine.decode, maxWidth: config.camera.width, maxHeight: config.camera.height,
      arenaBytes: config.decoder.arenaKiB * 1024, resultsCapacity: config.engine.resultsCapacity,
      payloadBytesMax: config.engine.payloadBytesMax)
    #if DEBUG
      if let hooks = getenv("SCANGATE_DECODER_TEST_HOOKS").map({ String(cString: $0) }) {
        for hook in DecoderChannel.TestHook.allCases where hooks.contains(hook.marker.dropFirst(8).lowercased()) {
          settings.testHooks |= hook.rawValue
        }
      }
    #endif
    return try DecoderWorkers(settings: settings, supervision: config.decoderSupervision)
  }

  public static func loopSettings(_ config: ScanConfig, maxFrames: UInt64, handleSignals: Bool = true) -> LoopSettings {
    var settings = LoopSettings(config)
    settings.maxFrames = maxFrames
    settings.handleSignals = handleSignals
    return settings
  }

  /// The console as configured, or nil (none configured, or it could not start: the door
  /// matters more than the console, so the reader runs without it, loudly).
  public static func makeConsole(_ config: ScanConfig, clock: SystemMonotonicClock) -> ConsoleServer<SystemMonotonicClock>? {
    guard !config.console.listen.isEmpty || !config.console.serialPath.isEmpty || !config.console.unixPath.isEmpty else { return nil }
    if let problem = consoleRingProblem(config) {
      writeStandardError("scangate: console disabled: \(problem)\n")
      return nil
    }
    do {
      let console = try ConsoleServer(settings: ConsoleSettings(config), clock: clock)
      for address in console.boundAddresses { print("console listening on \(address)") }
      if !config.console.serialPath.isEmpty { print("console on serial \(config.console.serialPath) at \(config.console.serialBaud) baud") }
      if let problem = console.secretProblem { print("console: operator commands disabled: \(problem)") }
      flushStandardOutput()
      return console
    } catch {
      writeStandardError("scangate: console disabled: \(error)\n")
      return nil
    }
  }

  /// The chain head in the journal: a later `scangate log verify --head` detects a cut tail.
  public static func printChainHead(_ log: AuditLog) {
    let line = withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      log.chainHead.write(into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
    print("audit log: \(line)")
  }

  public static func printSummary<S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ s: ScanStats, elapsed: UInt64, loop: borrowing RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) {
    let seconds = Double(elapsed) / 1_000_000
    let fps = seconds > 0 ? Double(s.frames) / seconds : 0
    print(
      "summary: \(s.frames) frames in \(formatMilliseconds(seconds * 1000)) ms (\(formatMilliseconds(fps)) fps), "
        + "\(s.grants) granted, \(s.denies) denied, \(loop.droppedFrames) dropped, \(loop.cameraLosses) camera losses")
    print(
      "latency: decode p50 \(s.decode.percentile(0.5)) µs p99 \(s.decode.percentile(0.99)) µs; "
        + "frame-to-edge p50 \(s.frameToEdge.percentile(0.5)) µs p99 \(s.frameToEdge.percentile(0.99)) µs")
  }
}
