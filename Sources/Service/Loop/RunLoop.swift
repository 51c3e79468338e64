import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanLoop

/// Settings of the loop itself (the engine has its own), taken from the configuration.
public struct LoopSettings: Sendable {
  public var allowListPath: String?
  public var watchAllowList: Bool
  public var camera: CameraSupervisor.Settings
  /// Stop after this many frames (0 = run until a signal).
  public var maxFrames: UInt64 = 0
  /// Handle SIGTERM/SIGINT/SIGHUP through a signalfd.
  public var handleSignals = true

  /// The configuration's loop settings (the defaults are the configuration's, so a test that
  /// builds `LoopSettings()` runs with what a reader runs with).
  public init(_ c: ScanConfig = ScanConfig()) {
    allowListPath = c.allowListPath
    watchAllowList = c.allowListWatch
    camera = c.camera.supervision
  }

  public var frameTimeoutMilliseconds: Int {
    get { camera.frameTimeoutMilliseconds }
    set { camera.frameTimeoutMilliseconds = newValue }
  }
  public var reopenBackoffMillisecondsMax: Int {
    get { camera.reopenBackoffMillisecondsMax }
    set { camera.reopenBackoffMillisecondsMax = newValue }
  }
}

/// ScanGate's single-threaded loop: one `poll()` over a fixed table filled each iteration by
/// the camera, the console and a list of poll participants (signals, the allow-list watcher,
/// and whatever inputs come next); the engine's actuator deadline bounds every wait.
///
/// Steady state allocates nothing: the poll table is fixed, and a frame goes straight from the
/// source into the engine. Camera loss degrades (fault event and buzzer pattern) and the camera
/// is reopened with backoff (CameraSupervisor), never by exiting.
public struct RunLoop<
  Source: LoopFrameSource & ~Copyable, Decoder: CodeDecoder & ~Copyable, Relay: OutputLine & ~Copyable,
  Buzzer: OutputLine & ~Copyable, Clock: MonotonicClock, Wall: WallClock, Digester: PayloadDigester
>: ~Copyable, ParticipantHost {
  public typealias Engine = ScanEngine<Decoder, Relay, Buzzer, Clock, Wall, Digester>
  public var engine: Engine
  /// Opens (and after a loss reopens) the frame source.
  private let openSource: () throws(CaptureError) -> Source
  public let settings: LoopSettings
  private var camera: Source? = nil
  private var cameraToken = PollSet.Token.none
  public private(set) var supervisor: CameraSupervisor
  public private(set) var cameraSummary = ""
  public private(set) var startedAt: Instant
  public private(set) var droppedFrames: UInt64 = 0
  public private(set) var stopRequested = false
  private let poll: PollSet
  var participants: [any PollParticipant] = []
  let requests = LoopRequests()
  private let allowListWatcher: AllowListWatcher?
  /// The technician console, served by this loop (nil: none).
  public let console: ConsoleServer<Clock>?
  /// Frames per second over the last second, × 100.
  public private(set) var frameRate: FrameRateMeter
  public var framesPerSecondTimes100: Int { frameRate.perSecondTimes100 }
  /// The audit log (its state on STATUS, LOG, the console's committed position).
  public var auditLog: (any AuditLogAccess)? = nil
  /// Where the loop publishes the frame rate it measures (×100, once a second) for whoever
  /// reports it (the fleet's state topic); nil: nobody.
  public var framesPerSecondGauge: SharedGauge? = nil
  /// Where the decoder workers' restarts are stored once a second (the fleet's diagnostics).
  public var decoderRestartsGauge: SharedGauge? = nil
  /// Why-lines for the journal (a file refused on reload, a camera that would not open), printed
  /// by the event printer after their events (nil: none kept).
  public var journalNotes: JournalNotes? = nil
  private var lastCameraNote = ""
  private var auditLogFaulted = false
  /// systemd: READY, STATUS and the watchdog.
  public let notifier = ServiceNotifier()
  var statusSentState = CameraState.starting
  /// The aiming aid's snapshot under way (RunLoop+Console.swift).
  var snapshotting: Snapshotting
  /// The console's IMPORT under way, and what BACKUP and PIN need from the composition root.
  public var helpers = ConsoleHelpers()
  /// The decoder worker processes (nil: the engine decodes on this thread, `ScanEngine.process`).
  public private(set) var decoders: DecoderWorkers? = nil
  /// Stopping: a decode in flight is waited for, no new frame is taken.
  private var draining = false
  /// Which camera lent the frame being decided (a source of two cameras: `CameraPair`), and the
  /// camera of the frame a decoder worker has now: its reply is decided as that camera's.
  var frameOrigin: FrameOrigin? = nil
  /// Two cameras (a turnstile's entry and exit) served in turn by the decoder workers.
  var turns = CameraTurns()

  /// Room in the poll table for participants registered after init.
  public static var extraPollCapacity: Int { 16 }

  public init(
    engine: consuming Engine, settings: LoopSettings, console: ConsoleServer<Clock>? = nil,
    openSource: @escaping () throws(CaptureError) -> Source
  ) {
    // Block the signals (signalfd) before any thread of this loop starts, so none of them can
    // take a SIGTERM with its default action.
    let signals = settings.handleSignals ? SignalSource() : nil
    self.engine = engine
    self.console = console
    self.openSource = openSource
    snapshotting = Snapshotting(worker: console == nil ? nil : SnapshotWorker(buffer: self.engine.snapshot))
    self.settings = settings
    let now = self.engine.clock.now()
    supervisor = CameraSupervisor(settings: settings.camera, now: now)
    startedAt = now
    frameRate = FrameRateMeter(start: now)
    let watcher = settings.allowListPath.flatMap { settings.watchAllowList ? AllowListWatcher(path: $0) : nil }
    allowListWatcher = watcher
    poll = PollSet(capacity: 1 + (console?.pollCapacity ?? 0) + Self.extraPollCapacity)
    participants.reserveCapacity(Self.extraPollCapacity)
    // Appended, not `register`ed: Swift 6.2 rejects a mutating call in this initializer ("mutating
    // method 'register' may not be used on immutable value 'self.openSource'"; 6.3 accepts it).
    // Two participants of one descriptor each fit the table reserved just above.
    if let signals { participants.append(signals) }
    if let watcher { participants.append(watcher) }
  }

  deinit { snapshotting.worker?.stop() }

  /// Adds a poll participant (at setup, before `run`): its descriptors join the poll table and
  /// it is serviced every iteration.
  public mutating func register(_ participant: any PollParticipant) {
    let used = participants.reduce(0) { $0 + $1.pollCapacity }
    precondition(used + participant.pollCapacity <= Self.extraPollCapacity, "poll participants exceed the table")
    precondition(participants.count < participants.capacity, "participant table is fixed at init")
    participants.append(participant)
  }

  /// Decodes in worker processes from now on (at setup, before `run`): frames go to `workers`,
  /// the loop never waits for a decode, and the engine's decision half runs when a reply comes.
  public mutating func attach(_ workers: DecoderWorkers) {
    register(workers)
    decoders = workers
  }

  /// Loads the allow-list from its file. On failure the live list stays and the error is kept
  /// (and recorded as an event, with why in the journal); returns the error.
  @discardableResult
  public mutating func reloadAllowList() -> AllowListError? {
    reloadCredentials()
    guard let path = settings.allowListPath else { return nil }
    let error: AllowListError?
    switch AllowListFile.read(path, maxBytes: engine.allowList.limits.fileBytesMax) {
    case .failure(let failure):
      engine.allowList.recordFailure(failure.error)
      if failure.retry { allowListWatcher?.retryAt = engine.clock.now().adding(milliseconds: 200) }
      engine.record(.fault, code: FaultCode.allowListRejected.rawValue)
      noteAllowListRefused(path, failure.error)
      return failure.error
    case .success(let bytes):
      error = loadAllowList(bytes)
    }
    engine.record(
      error == nil ? .state : .fault,
      code: (error == nil ? FaultCode.allowListLoaded : FaultCode.allowListRejected).rawValue)
    if let error { noteAllowListRefused(path, error) } else { allowListLoaded(path) }
    return error
  }

  /// The journal's line for a refused allow-list: why, and what is live now.
  private func noteAllowListRefused(_ path: String, _ error: AllowListError) {
    let version = engine.allowList.version, entries = engine.allowList.count
    let kept = version == 0 ? "denying every code until it loads" : "the live list stays (version \(version), \(entries) entries)"
    note("allow-list \(path): \(error); \(kept)")
  }

  /// A line for the journal, printed after the last event recorded (`JournalNotes`).
  func note(_ text: String) { journalNotes?.post("scangate: " + text, after: engine.events.lastSequence) }

  /// Asks the loop to stop after the current iteration.
  public mutating func requestStop() { stopRequested = true }

  /// Runs until a stop signal, `maxFrames`, or the end of a one-shot replay.
  public mutating func run() {
    while !stopRequested { runOnce(maximumWaitMilliseconds: 1_000) }
    drainDecoder()
    finish()
  }

  /// Waits (the loop still turning, no new frame taken) for a decode in flight, up to its
  /// deadline: the last frame of a replay or `--max-frames` is decided.
  private mutating func drainDecoder() {
    guard let decoders, decoders.isBusy else { return }
    draining = true
    let end = engine.clock.now().adding(milliseconds: decoders.stats.deadlineMilliseconds + 50)
    while decoders.isBusy && engine.clock.now() < end { runOnce(maximumWaitMilliseconds: 5) }
    draining = false
  }

  /// Drives the outputs inactive and closes the camera. Runs on every way out of `run`.
  public mutating func finish() {
    notifier.stopping()
    engine.record(.state, code: FaultCode.stopping.rawValue)
    engine.releaseOutputs()
    camera = nil
    decoders?.stop()
  }

  /// One iteration: wait (bounded) for something to do, then do all of it.
  public mutating func runOnce(maximumWaitMilliseconds: Int) {
    let now = engine.clock.now()
    if camera == nil && supervisor.shouldOpen(at: now) { openCamera() }
    poll.reset()
    var deadline = now.adding(milliseconds: maximumWaitMilliseconds)
    let (selfPacedReady, cameraDeadline) = prepareCamera(now: now)
    deadline = Self.earlier(deadline, cameraDeadline)
    deadline = Self.earlier(deadline, engine.nextDeadline())
    for i in 0..<participants.count { deadline = Self.earlier(deadline, participants[i].prepare(poll, now: now)) }
    if let console { deadline = Self.earlier(deadline, console.prepare(poll, now: now, rendering: snapshotting.phase == .rendering)) }
    if notifier.watchdogIntervalMilliseconds > 0 {
      deadline = Self.earlier(deadline, now.adding(milliseconds: notifier.watchdogIntervalMilliseconds))
    }

    _ = poll.wait(milliseconds: selfPacedReady ? 0 : millisecondsUntil(deadline, from: now))

    let after = engine.clock.now()
    for i in 0..<participants.count { participants[i].service(poll, now: after, requests: requests) }
    applyRequests()
    if let decoders { completeDecode(decoders) }
    if !draining && (selfPacedReady || poll.revents(cameraToken) != 0) { captureFrame() }
    checkFrameTimeout()
    engine.sweepPresence()
    engine.tick()
    if let console { serviceConsole(console) }
    checkAuditLog()
    updateFramesPerSecond()
    notifySystemd()
  }

  @inline(__always) static func earlier(_ a: Instant, _ b: Instant?) -> Instant {
    guard let b else { return a }
    return b < a ? b : a
  }

  /// Adds the camera's descriptor (or, for a self-paced source, its next frame time).
  /// Returns whether a self-paced source has a frame now, and when the camera next needs the loop.
  private mutating func prepareCamera(now: Instant) -> (ready: Bool, deadline: Instant?) {
    cameraToken = .none
    let supervision = supervisor.deadline(hasCamera: camera != nil)
    guard let descriptor = camera?.pollDescriptor else { return (false, supervision) }
    if descriptor >= 0 {
      cameraToken = poll.add(descriptor, events: Int16(POLLIN))
      return (false, supervision)
    }
    let due = camera!.millisecondsUntilReady(at: now)
    return (due == 0, Self.earlier(now.adding(milliseconds: due), supervision))
  }

  private mutating func serviceConsole(_ console: ConsoleServer<Clock>) {
    console.service(poll)
    console.runCommands(host: &self)
    advanceSnapshot(console)
    deliverLog(console)
    // WATCH shows only what the log holds, except while the log is failing: then the
    // technician needs the fault events most.
    let limit = auditLog.flatMap { $0.isFaulted ? nil : $0.committedSequence }
    console.broadcast(engine.events, since: startedAt, upTo: limit)
  }

  private mutating func captureFrame() {
    guard var source = camera.take() else { return }
    do throws(CaptureError) {
      let outcome: Bool? = try source.withNextFrame(timeoutMilliseconds: 0) { frame in
        if let decoders {
          // The worker decodes; the loop goes on. A frame that finds it busy is skipped.
          engine.beginFrame(frame)
          let now = engine.clock.now()
          let cameraIndex = frameOrigin?.camera ?? 0
          if !turns.takesTurn(cameraIndex, now: now, paired: frameOrigin != nil) {
            decoders.skip()
          } else if decoders.submit(frame, allViews: engine.wantsAllViews, now: now, camera: cameraIndex) {
            turns.submitted(cameraIndex)
          }
          turns.delivered(cameraIndex, at: now)
        } else {
          engine.process(frame)
        }
        return true
      }
      droppedFrames = source.droppedFrames
      camera = consume source
      if outcome != nil {
        supervisor.frameArrived(at: engine.clock.now())
        if settings.maxFrames > 0 && engine.stats.frames >= settings.maxFrames { stopRequested = true }
      }
    } catch {
      if error == .endOfStream {
        supervisor.finished()
        stopRequested = true
      } else {
        apply(supervisor.lost(error, at: engine.clock.now()))
      }
    }
  }

  /// The decoder's events (a fault's first abandonment or crash: the fault pattern too; its
  /// recovery), then a reply, if one came: the engine's decision half on its results.
  private mutating func completeDecode(_ decoders: DecoderWorkers) {
    while let code = decoders.takeEvent() {
      let recovered = code == FaultCode.decoderRecovered.rawValue || code == FaultCode.decoderPatternCleared.rawValue
      engine.record(recovered ? .state : .fault, code: code)
      if !recovered { engine.play(engine.settings.actuation.faultPattern) }
    }
    guard let reply = decoders.takeReply(into: &engine.results) else { return }
    frameOrigin?.camera = turns.inFlight
    engine.completeFrame(
      reply.frame, report: reply.report, decodeStarted: reply.sent, decoded: reply.decoded, elsewhere: true,
      allViews: reply.allViews)
  }

  private mutating func checkFrameTimeout() {
    guard camera != nil, supervisor.timedOut(at: engine.clock.now()) else { return }
    camera = nil  // releases the device (deinit: STREAMOFF, munmap, close)
    apply(supervisor.lost(.deviceLost(errno: .timedOut), at: engine.clock.now()))
  }

  private mutating func openCamera() {
    supervisor.opening()
    do throws(CaptureError) {
      let source = try openSource()
      cameraSummary = source.summary
      frameOrigin = source.origin
      camera = consume source
      lastCameraNote = ""
      apply(supervisor.opened(at: engine.clock.now()))
    } catch {
      apply(supervisor.openFailed(error, at: engine.clock.now()))
      // Why, once per reason (the reopen retries with backoff).
      let why = "camera: \(Self.describe(error)); retrying"
      if why != lastCameraNote {
        lastCameraNote = why
        note(why)
      }
    }
  }

  /// Records a camera transition (and plays the fault pattern on a loss).
  private mutating func apply(_ transition: CameraTransition?) {
    switch transition {
    case .started: engine.record(.state, code: FaultCode.started.rawValue)
    case .restored: engine.record(.state, code: FaultCode.cameraRestored.rawValue)
    case .lost:
      camera = nil
      engine.record(.fault, code: FaultCode.cameraLost.rawValue)
      engine.play(engine.settings.actuation.faultPattern)
    case nil: break
    }
  }

  /// Reports the audit log's faults and recoveries (event, fault buzzer pattern).
  private mutating func checkAuditLog() {
    guard let log = auditLog else { return }
    let faulted = log.isFaulted
    guard faulted != auditLogFaulted else { return }
    auditLogFaulted = faulted
    engine.record(faulted ? .fault : .state, code: (faulted ? FaultCode.logWriteFailed : FaultCode.logRecovered).rawValue)
    if faulted { engine.play(engine.settings.actuation.faultPattern) }
  }

  private mutating func updateFramesPerSecond() {
    guard frameRate.update(frames: engine.stats.frames, now: engine.clock.now()) else { return }
    framesPerSecondGauge?.store(Int64(framesPerSecondTimes100))
    if let gauge = decoderRestartsGauge, let decoders { gauge.store(Int64(clamping: decoders.stats.restarts)) }
  }

  /// Whether a camera (or replay) is open now.
  public var hasCamera: Bool { camera != nil }
  public var cameraState: CameraState { supervisor.state }
  public var lastCameraError: CaptureError? { supervisor.lastError }
  public var reopenAttempts: UInt64 { supervisor.reopenAttempts }
  public var cameraLosses: UInt64 { supervisor.losses }
}

/// Writes a message that may hold file names or driver text, control bytes escaped.
