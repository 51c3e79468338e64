import Glibc
import ScanCore
import ScanLinux
import ScanLoop

/// The service's composition: the loop and its engine, every part it serves, and the order they
/// start and stop in.
extension Service {
  public static func serve<
    S: LoopFrameSource & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable, D: CodeDecoder & ~Copyable
  >(
    _ config: ScanConfig, options: Options, relay: consuming R, buzzer: consuming B, watchdog: RelayWatchdog,
    decoder: consuming D, workers: DecoderWorkers?, openSource: @escaping () throws(CaptureError) -> S
  ) -> Int32 {
    let clock = SystemMonotonicClock()
    let ring = EventRing(capacity: config.eventRingCapacity)
    var loop = makeLoop(
      config, options: options, relay: relay, buzzer: buzzer, decoder: decoder, workers: workers, clock: clock, ring: ring,
      openSource: openSource)
    let parts: Parts
    do throws(SetupRefused) {
      parts = try assemble(config, options: options, watchdog: watchdog, clock: clock, ring: ring, loop: &loop)
    } catch {
      return 1
    }
    runUntilStopped(&loop, parts, watchdog: watchdog)
    if !options.quiet {
      printSummary(loop.engine.stats, elapsed: clock.now().microseconds(since: loop.startedAt), loop: loop)
      if let w = workers?.stats {
        print(
          "decoder workers: \(w.completed) decodes, \(w.abandoned) abandoned, \(w.crashed) crashed, \(w.skipped) skipped, "
            + "\(w.restarts) restarts, \(w.startFailures) failed starts")
      }
    }
    return 0
  }

  // MARK: - serve's steps

  /// A part that could not start; why is already on standard error (serve exits 1).
  struct SetupRefused: Error {}

  /// What serve starts around the loop and stops after it.
  private struct Parts {
    let floorKeeper: ClockFloorKeeper
    let auditLog: AuditLog?
    let fleet: FleetLink?
    let door: DoorController?
    let turnstile: TurnstileController?
    let wiegand: WiegandLink?
    /// The domains' parts put at rest after the loop (`ReaderDomain`), in the order they joined.
    let released: [any ReleasedAtStop]
    let printer: EventPrinter
  }

  /// The loop and its engine (the decoder, the outputs, the console, the decoder workers).
  private static func makeLoop<
    S: LoopFrameSource & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable, D: CodeDecoder & ~Copyable
  >(
    _ config: ScanConfig, options: Options, relay: consuming R, buzzer: consuming B, decoder: consuming D,
    workers: DecoderWorkers?, clock: SystemMonotonicClock, ring: EventRing, openSource: @escaping () throws(CaptureError) -> S
  ) -> RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester> {
    let engine = ScanEngine(
      settings: config.engine, decoder: decoder, relay: relay, buzzer: buzzer, clock: clock, wall: SystemWallClock(),
      digester: SodiumDigester(), events: ring, maxWidth: config.camera.width, maxHeight: config.camera.height)
    let console = makeConsole(config, clock: clock)
    var loop = RunLoop(
      engine: engine, settings: loopSettings(config, maxFrames: options.maxFrames, handleSignals: options.handleSignals), console: console,
      openSource: openSource)
    if let workers { loop.attach(workers) }
    return loop
  }

  /// Every part the loop serves, in the order they join it; then the event printer, the
  /// credentials and the allow-list. Nothing is started yet.
  private static func assemble<S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ config: ScanConfig, options: Options, watchdog: RelayWatchdog, clock: SystemMonotonicClock, ring: EventRing,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> Parts {
    // Why a file was refused on reload, or the camera would not open: printed after the event.
    let notes = JournalNotes()
    loop.journalNotes = notes
    if let path = options.configPath {
      loop.helpers.backupFiles = { () throws(BackupArchive.Refusal) in
        try BackupFiles.gather(config, configPath: path, reader: BackupFiles.hostName(), now: SystemWallClock().unixSeconds(), secrets: false).archive
      }
    }
    // One time policy for every check (TrustedTime); its floor is kept by the keeper.
    let floorKeeper = makeClockFloorKeeper(config, ring: ring)
    loop.engine.policy.time = floorKeeper.time
    loop.register(floorKeeper)
    // Every configured path that is not what the reader needs (a FIFO, a directory or a device where
    // a file belongs; the log's database is then never handed to SQLite): named once at startup,
    // as `check-config` names it. Each part then refuses it where it reads it (the allow-list: a note).
    for (entry, problem) in PathChecks.problems(config) where entry.role != "allow_list.path" {
      writeStandardError("scangate: refused: \(entry.role) \(entry.path): \(problem)\n")
    }
    let (auditLog, fleet, fleetRequests) = try attachAuditLogAndFleet(config, ring: ring, time: floorKeeper.time, loop: &loop)
    loop.engine.relayGuard = watchdog  // the relay's cap, held off the loop too
    // Events show keyed tags, never a payload's SHA-256; a turnstile's anti-passback keeps its
    // records by tag, so its key must be the one they were kept under, or the reader does not start.
    let t = config.turnstile
    guard let tagKey = TagKey.forService(logPath: config.log.path, stableTags: t.machine.enabled && t.passback.mode != .off && !t.site.enabled)
    else { throw SetupRefused() }
    loop.engine.tagger = tagKey
    // State files deleted while the reader runs are put back from memory (a slot file, the tag key).
    let tagKeyFile = TagKeyFile(key: tagKey, path: TagKey.defaultPath(forLog: config.log.path))
    loop.register(StateFileWatch(restoring: config.log.path.isEmpty || !tagKey.isPersistent ? [] : [tagKeyFile]))
    let emergency = try attachEmergency(config, options: options, clock: clock, ring: ring, loop: &loop)
    let door = try attachDoor(config, options: options, clock: clock, ring: ring, loop: &loop)
    door?.exitDuringLockdown = config.emergency.settings.exitDuringLockdown
    let turnstile = try attachTurnstile(
      config, options: options, clock: clock, ring: ring, time: floorKeeper.time, fleet: fleet, loop: &loop)
    // The fleet's lockdown, occupancy and anti-passback commands go to their owners on the loop.
    fleetRequests?.owners = [emergency] + (turnstile.map { [$0] } ?? [])
    fleet?.telemetry.emergency = true  // fire and lockdown on the state topic and in Home Assistant
    fleet?.telemetry.occupancy = turnstile?.occupancyGauge
    if let telemetry = fleet?.telemetry {
      // What the door and the emergencies know now, shown at once after a start.
      emergency.stateGauge = SharedGauge()
      telemetry.emergencyState = emergency.stateGauge
      if let door {
        door.stateGauge = SharedGauge()
        telemetry.doorState = door.stateGauge
      }
    }
    try attachSchedules(config, clock: clock, ring: ring, notes: notes, time: floorKeeper.time, loop: &loop)
    let (wiegand, panelLink) = try attachPanels(config, clock: clock, ring: ring, loop: &loop)
    try attachKeypad(config, options: options, time: floorKeeper.time, panel: panelLink, loop: &loop)
    // The domains' output lines: libgpiod on gpio.chip, or simulated (those a test watches by key).
    let outputs = OutputLineBank(config.gpio.backend == .sim ? .simulated(options.watchedOutputs) : .gpiod(chip: config.gpio.chip))
    let start = DomainStart(
      ring: ring, now: clock.now(), outputs: outputs, fire: emergency.state.fireActive, lockdown: emergency.state.lockdownActive)
    let released = try attachDomains(config, start, loop: &loop)
    let printer = EventPrinter(
      ring: ring, start: loop.startedAt, clock: clock, skipping: options.skipping,
      payloads: config.log.rawPayloads ? .shown : .hidden, notes: notes)
    installCredentials(config, loop: &loop)
    try attachSiteUses(config, fleet: fleet, loop: &loop)
    loop.reloadAllowList()  // a refusal's why is a journal note (denying every code until it loads)
    return Parts(
      floorKeeper: floorKeeper, auditLog: auditLog, fleet: fleet, door: door, turnstile: turnstile, wiegand: wiegand,
      released: released, printer: printer)
  }

  /// The domains that plug in (`ReaderDomain`: a config section and its participants), one line
  /// each; what each returns is put at rest after the loop. A part that cannot start says why
  /// and the reader does not start.
  private static func attachDomains<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, _ start: DomainStart, loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> [any ReleasedAtStop] {
    do throws(DomainRefused) {
      let parts: [(any ReleasedAtStop)?] = [
        try FeedbackDomain.attach(config.feedback, start, to: &loop)
      ]
      return parts.compactMap { $0 }
    } catch {
      writeStandardError("scangate: \(error)\n")
      throw SetupRefused()
    }
  }

  /// The audit log and the fleet link (neither started): the log's identity files, the time its
  /// record ages are judged at, the fleet's door sensors and its control on the loop.
  private static func attachAuditLogAndFleet<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, ring: EventRing, time: TrustedTime,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> (AuditLog?, FleetLink?, FleetRequests?) {
    let auditLog = config.log.path.isEmpty ? nil : AuditLog(settings: config.log, ring: ring)
    loop.auditLog = auditLog
    let fleet = config.fleet.isEnabled ? FleetLink(settings: config.fleet, logPath: config.log.path, auditLog: auditLog) : nil
    fleet?.adminURL = adminURL(config.admin.listen)
    auditLog?.identity.stateDirectory = config.stateDirectory  // the log-id file; made again if deleted
    auditLog?.identity.fleetStatePath = fleet?.statePath
    auditLog?.time = time  // record ages are judged at the floor, never at a clock that jumped
    if let fleet, config.door.machine.enabled {
      fleet.doorSensors = (config.door.inputs[DoorInput.contact.rawValue].line >= 0, config.door.inputs[DoorInput.tamper.rawValue].line >= 0)
    }
    loop.framesPerSecondGauge = fleet?.telemetry.framesPerSecond
    loop.decoderRestartsGauge = fleet?.telemetry.decoderRestarts
    let requests = fleet.map { fleetControl(config, link: $0, time: time) }
    if let requests, let fleet, !config.fleet.homeAssistantCommands.isEmpty {
      do throws(HomeAssistantControl.SetupError) {
        fleet.homeAssistant = try HomeAssistantControl(settings: config.fleet, requests: requests)
      } catch {
        writeStandardError("scangate: refused: \(error)\n")
        throw SetupRefused()
      }
    }
    if let requests { loop.register(requests) }
    return (auditLog, fleet, requests)
  }

  /// The web admin page's address as another machine reaches it: `[admin] listen`, with this
  /// host's name for a wildcard address; nil when the page is off.
  static func adminURL(_ listen: String) -> String? {
    guard !listen.isEmpty, let colon = listen.lastIndex(of: ":") else { return nil }
    var host = String(listen[..<colon])
    if host == "0.0.0.0" || host == "[::]" {
      var name = [CChar](repeating: 0, count: 256)
      guard gethostname(&name, name.count - 1) == 0 else { return nil }
      host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return "https://\(host)\(listen[colon...])/"
  }

  /// Fire and lockdown: registered before the door and the turnstile, which follow its events.
  private static func attachEmergency<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, options: Options, clock: SystemMonotonicClock, ring: EventRing,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> EmergencyController {
    do throws(GPIOError) {
      let emergency = try EmergencySetup.make(config, ring: ring, now: clock.now(), simulated: options.emergencyLines)
      loop.register(emergency)
      return emergency
    } catch {
      writeStandardError("scangate: cannot request emergency lines: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
  }

  /// The turnstile (its controller the engine's gate) and its driver, when one is configured.
  private static func attachTurnstile<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, options: Options, clock: SystemMonotonicClock, ring: EventRing, time: TrustedTime, fleet: FleetLink?,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> TurnstileController? {
    // Site-wide anti-passback: the site key and the fleet link, or the reader does not start.
    var siteKey: TagKey? = nil
    if config.turnstile.machine.enabled && config.turnstile.site.enabled {
      guard fleet != nil else {
        writeStandardError("scangate: refused: turnstile.passback_site = true needs the fleet link ([fleet] brokers)\n")
        throw SetupRefused()
      }
      do { siteKey = try TagKey.loadSiteKey(config.siteKeyFile) } catch {
        writeStandardError("scangate: refused: turnstile.passback_site = true, and the site key cannot be read: \(error)\n")
        throw SetupRefused()
      }
    }
    let turnstile: TurnstileController?
    let lines = options.turnstileLines ?? TurnstileSetup.SimulatedLines()
    do throws(GPIOError) {
      turnstile = try TurnstileSetup.make(config, ring: ring, time: time, now: clock.now(), simulated: lines)
    } catch {
      writeStandardError("scangate: cannot request turnstile lines: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
    guard let turnstile else { return nil }
    turnstile.keyer = loop.engine.tagger  // kept and shown keyed, never as a credential's SHA-256
    if let siteKey, let fleet {
      // Keyed the same on every reader of the site, so that their passages can be shared: by the
      // site key's identity subkey (never the site key itself, never the MAC's key).
      let exchange = SitePassages(link: fleet, siteKey: siteKey)
      turnstile.keyer = exchange.identityKey
      exchange.turnstile = turnstile
      turnstile.site = exchange
      fleet.sitePassages = exchange
      loop.register(exchange)
    }
    turnstile.frameOrigin = options.cameraOrigin  // direction = "camera": the camera that saw the code
    loop.engine.outcome = .turnstile(turnstile)
    loop.register(turnstile)
    if config.gpio.backend == .sim,
      let driver = options.turnstileDriver?(
        TurnstileSetup.DriverContext(lines: lines, ring: ring, occupancy: turnstile.occupancyGauge, notes: loop.journalNotes))
    {
      loop.register(driver)
    }
    return turnstile
  }

  /// Counted uses across the site (`credentials.uses_scope = "site"`): the verifier's use store
  /// becomes the site's exchange over its used-passes file. The site key must be readable, or the
  /// reader does not start.
  private static func attachSiteUses<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, fleet: FleetLink?,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) {
    guard config.credentials.usesScope == .site, let fleet, let verifier = loop.engine.policy.credentials else { return }
    let siteKey: TagKey
    do { siteKey = try TagKey.loadSiteKey(config.siteKeyFile) } catch {
      writeStandardError("scangate: refused: credentials.uses_scope = \"site\", and the site key cannot be read: \(error)\n")
      throw SetupRefused()
    }
    // Without a durable file nothing can be counted: counted passes stay refused, as per reader.
    guard let store = verifier.useStore else { return }
    let exchange = SiteUses(link: fleet, siteKey: siteKey, store: store, offline: config.credentials.usesOffline)
    verifier.useStore = exchange
    fleet.siteUses = exchange
    loop.register(exchange)
  }

  /// The door controller and its driver (the demo's script), when a door is configured.
  private static func attachDoor<S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ config: ScanConfig, options: Options, clock: SystemMonotonicClock, ring: EventRing,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> DoorController? {
    let door: (controller: DoorController, driver: (any PollParticipant)?)?
    do throws(GPIOError) { door = try DoorSetup.make(config, ring: ring, now: clock.now(), driver: options.doorDriver) } catch {
      writeStandardError("scangate: cannot request door lines: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
    if let door { loop.register(door.controller) }
    if let driver = door?.driver { loop.register(driver) }
    return door?.controller
  }

  /// The door's schedules (their file, its watcher) and, in local mode, the unlock windows' keeper.
  private static func attachSchedules<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, clock: SystemMonotonicClock, ring: EventRing, notes: JournalNotes, time: TrustedTime,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) {
    guard !config.door.schedulePath.isEmpty else { return }
    // The zone is set before the printer and log threads start (glibc reads TZ unsynchronised).
    if !SystemLocalCalendar.useTimeZone(config.door.timeZone) {
      writeStandardError("scangate: schedule.time_zone \(config.door.timeZone): not in tzdata\n")
      throw SetupRefused()
    }
    let store = ScheduleStore(calendar: SystemLocalCalendar())
    let watcher = ScheduleFileWatcher(path: config.door.schedulePath, store: store, now: clock.now())
    if let problem = watcher.reload(now: clock.now()) {
      writeStandardError("scangate: schedule \(config.door.schedulePath): \(problem); entries with schedule= are denied until it loads\n")
    }
    watcher.notes = notes  // a later refusal: why, in the journal
    loop.engine.policy.schedules = store
    loop.register(watcher)
    // In panel mode the panel drives its own strike: the reader holds nothing.
    if config.panel.mode == .local {
      let needsSync = config.door.unlockNeedsSynchronizedClock
      // A clock behind its floor never holds a window: the time of day is then unknown.
      let keeper = UnlockWindowKeeper(
        store: store, ring: ring, wall: SystemWallClock(), now: clock.now(),
        clockTrusted: {
          (!needsSync || UnlockWindowKeeper.kernelClockSynchronized()) && !time.isBehind(SystemWallClock().unixSeconds())
        })
      loop.register(keeper)
    }
  }

  /// Starts the threads, runs the loop, then stops every part, in one place.
  ///
  /// The stop order is safety-critical: keep it, and keep it here. The outputs go idle first
  /// (the door released; Wiegand after the frame it is sending), then the clock floor is kept.
  /// The relay watchdog stops while the relay line is still open (the loop's release disarmed
  /// it). Only then is the log stopped, so it writes everything the loop recorded, its last
  /// events included; the fleet publishes after it (for a bounded time), the chain head for
  /// `log verify --head` is printed once both are done, and the printer stops last.
  private static func runUntilStopped<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>, _ parts: Parts,
    watchdog: RelayWatchdog
  ) {
    parts.printer.startThread()
    parts.auditLog?.start()
    parts.fleet?.start()
    loop.run()
    parts.door?.release()
    parts.turnstile?.release()
    parts.wiegand?.stop()  // after the frame it is sending; the lines are released idle
    for part in parts.released { part.release() }  // the lamps dark: a stopped reader is not "ready"
    parts.floorKeeper.persist()
    watchdog.stop()  // disarmed by the loop's release; stopped while the relay line is still open
    parts.auditLog?.stop()  // everything the loop recorded, its last events included, is written
    parts.fleet?.stop()  // and published, for a bounded time
    if let auditLog = parts.auditLog { printChainHead(auditLog) }
    parts.printer.stop()
  }
}
