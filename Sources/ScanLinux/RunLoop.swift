import CLinux
import Glibc
import ScanCore

/// The camera's state as the loop sees it.
public enum CameraState: UInt8, Sendable {
  case starting, streaming, degraded, finished
  public var name: String {
    switch self {
    case .starting: "starting"
    case .streaming: "streaming"
    case .degraded: "degraded"
    case .finished: "finished"
    }
  }
}

/// Settings of the loop itself (the engine has its own).
public struct LoopSettings: Sendable {
  public var allowListPath: String?
  public var watchAllowList = true
  public var frameTimeoutMilliseconds = 2_000
  public var reopenBackoffMillisecondsMax = 1_000
  /// Stop after this many frames (0 = run until a signal).
  public var maxFrames: UInt64 = 0
  /// Handle SIGTERM/SIGINT/SIGHUP through a signalfd.
  public var handleSignals = true
  /// Test hook: SIGUSR1 makes the loop hang (to prove the systemd watchdog notices).
  public var stallOnSIGUSR1 = getenv("SCANGATE_TEST_STALL").map { String(cString: $0) == "1" } ?? false
  public init() {}
}

/// ScanGate's single-threaded loop: one `poll()` over the camera, a signalfd and an inotify
/// watch on the allow-list; the engine's actuator deadline bounds every wait.
///
/// Steady state allocates nothing: the pollfd array and the inotify buffer are fixed, and a
/// frame goes straight from the source into the engine. Camera loss degrades (fault event and
/// buzzer pattern) and the camera is reopened with backoff, never by exiting.
public struct RunLoop<
  Source: LoopFrameSource & ~Copyable, Decoder: CodeDecoder & ~Copyable, Relay: OutputLine & ~Copyable,
  Buzzer: OutputLine & ~Copyable, Clock: MonotonicClock, Wall: WallClock, Digester: PayloadDigester
>: ~Copyable {
  public typealias Engine = ScanEngine<Decoder, Relay, Buzzer, Clock, Wall, Digester>
  public var engine: Engine
  /// Opens (and after a loss reopens) the frame source.
  private let openSource: () throws(CaptureError) -> Source
  public let settings: LoopSettings
  private var camera: Source? = nil
  public private(set) var cameraState = CameraState.starting
  public private(set) var cameraSummary = ""
  public private(set) var lastCameraError: CaptureError? = nil
  public private(set) var reopenAttempts: UInt64 = 0
  public private(set) var cameraLosses: UInt64 = 0
  private var reopenAt: Instant
  private var backoffMilliseconds = 100
  private var lastFrameAt: Instant
  private var allowListRetryAt: Instant? = nil
  public private(set) var stopRequested = false
  public private(set) var startedAt: Instant
  private let signalDescriptor: Int32
  private var inotifyDescriptor: Int32 = -1
  private let allowListName: String
  private let pollSet: UnsafeMutableBufferPointer<pollfd>
  private let inotifyBuffer: UnsafeMutableRawBufferPointer
  public private(set) var droppedFrames: UInt64 = 0
  /// The technician console, served by this loop (nil: none).
  public let console: ConsoleServer?
  /// Frames per second over the last second, × 100.
  public private(set) var framesPerSecondTimes100 = 0
  private var fpsWindowStart: Instant
  private var fpsWindowFrames: UInt64 = 0
  /// Scratch for console arguments (CHECK payloads, AUTH secrets).
  let consoleArgument: UnsafeMutableRawBufferPointer
  /// Extra status lines the owner supplies (the audit log's state), and the log reader.
  public var auditLog: (any AuditLogAccess)? = nil
  private var auditLogFaulted = false
  /// systemd: READY, STATUS and the watchdog.
  public let notifier = ServiceNotifier()
  private var statusSentState = CameraState.starting
  /// The aiming aid: renders PNG snapshots off the loop (created with the console).
  let snapshotWorker: SnapshotWorker?
  var snapshotPhase = SnapshotPhase.idle
  var snapshotClient = -1
  var snapshotText = false
  var snapshotDeadline = Instant(nanoseconds: 0)

  public init(
    engine: consuming Engine, settings: LoopSettings, console: ConsoleServer? = nil,
    openSource: @escaping () throws(CaptureError) -> Source
  ) {
    // Block the signals (signalfd) before any thread of this loop starts, so none of them can
    // take a SIGTERM with its default action.
    signalDescriptor = settings.handleSignals ? sg_signalfd_open() : -1
    self.engine = engine
    self.console = console
    self.openSource = openSource
    snapshotWorker = console == nil ? nil : SnapshotWorker(buffer: self.engine.snapshot)
    self.settings = settings
    let now = self.engine.clock.now()
    reopenAt = now
    lastFrameAt = now
    startedAt = now
    fpsWindowStart = now
    consoleArgument = .allocate(byteCount: ConsoleServer.lineBytesMax, alignment: 8)
    pollSet = .allocate(capacity: 8 + (console?.pollCapacity ?? 0))
    pollSet.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0))
    inotifyBuffer = .allocate(byteCount: 4096, alignment: 8)
    var name = ""
    if let path = settings.allowListPath {
      let slash = path.lastIndex(of: "/")
      let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
      name = slash.map { String(path[path.index(after: $0)...]) } ?? path
      if settings.watchAllowList {
        inotifyDescriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if inotifyDescriptor >= 0 {
          let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE)
          if inotify_add_watch(inotifyDescriptor, directory, mask) < 0 {
            Glibc.close(inotifyDescriptor)
            inotifyDescriptor = -1
          }
        }
      }
    }
    allowListName = name
  }

  deinit {
    if signalDescriptor >= 0 { Glibc.close(signalDescriptor) }
    if inotifyDescriptor >= 0 { Glibc.close(inotifyDescriptor) }
    pollSet.deallocate()
    inotifyBuffer.deallocate()
    consoleArgument.deallocate()
    snapshotWorker?.stop()
  }

  /// Loads the allow-list from its file. On failure the live list stays and the error is kept
  /// (and recorded as an event); returns the error.
  @discardableResult
  public mutating func reloadAllowList() -> AllowListError? {
    guard let path = settings.allowListPath else { return nil }
    let error: AllowListError?
    do {
      let bytes = try AllowListFile.read(path, maxBytes: engine.allowList.limits.fileBytesMax)
      error = engine.allowList.load(bytes, digester: engine.digester, nowUnixSeconds: engine.wall.unixSeconds())
    } catch {
      engine.allowList.recordFailure(error)
      if error.reason.hasSuffix("will retry") { allowListRetryAt = engine.clock.now().adding(milliseconds: 200) }
      engine.record(.fault, code: FaultCode.allowListRejected.rawValue)
      return error
    }
    engine.record(error == nil ? .state : .fault,
                  code: (error == nil ? FaultCode.allowListLoaded : FaultCode.allowListRejected).rawValue)
    return error
  }

  /// Asks the loop to stop after the current iteration.
  public mutating func requestStop() { stopRequested = true }

  /// Runs until a stop signal, `maxFrames`, or the end of a one-shot replay.
  public mutating func run() {
    while !stopRequested { runOnce(maximumWaitMilliseconds: 1_000) }
    finish()
  }

  /// Drives the outputs inactive and closes the camera. Runs on every way out of `run`.
  public mutating func finish() {
    notifier.stopping()
    engine.record(.state, code: FaultCode.stopping.rawValue)
    engine.releaseOutputs()
    camera = nil
  }

  /// One iteration: wait (bounded) for something to do, then do all of it.
  public mutating func runOnce(maximumWaitMilliseconds: Int) {
    let now = engine.clock.now()
    if camera == nil && now >= reopenAt { openCamera() }

    var count = 0
    var cameraSlot = -1, signalSlot = -1, inotifySlot = -1
    if signalDescriptor >= 0 {
      pollSet[count] = pollfd(fd: signalDescriptor, events: Int16(POLLIN), revents: 0); signalSlot = count; count += 1
    }
    if inotifyDescriptor >= 0 {
      pollSet[count] = pollfd(fd: inotifyDescriptor, events: Int16(POLLIN), revents: 0); inotifySlot = count; count += 1
    }
    var wait = maximumWaitMilliseconds
    var selfPacedReady = false
    if let descriptor = camera?.pollDescriptor {
      if descriptor >= 0 {
        pollSet[count] = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0); cameraSlot = count; count += 1
      } else {
        let due = camera!.millisecondsUntilReady(at: now)
        if due == 0 { selfPacedReady = true; wait = 0 } else { wait = min(wait, due) }
      }
    } else if cameraState != .finished {
      wait = min(wait, max(0, Int((reopenAt.nanoseconds &- now.nanoseconds) / 1_000_000)))
    }
    if let deadline = engine.nextDeadline() {
      wait = min(wait, deadline <= now ? 0 : Int((deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000))
    }
    if let retry = allowListRetryAt {
      wait = min(wait, retry <= now ? 0 : Int((retry.nanoseconds - now.nanoseconds) / 1_000_000) + 1)
    }
    if notifier.watchdogIntervalMilliseconds > 0 { wait = min(wait, notifier.watchdogIntervalMilliseconds) }
    if let console {
      console.registerPoll(pollSet, count: &count)
      wait = console.waitMilliseconds(cap: wait)
      if snapshotPhase == .rendering { wait = min(wait, 10) }
    }
    if camera != nil && cameraState == .streaming {
      let silence = now.milliseconds(since: lastFrameAt)
      wait = min(wait, max(0, settings.frameTimeoutMilliseconds - silence))
    }

    let ready: Int32
    do { ready = try syscall("poll", { poll(pollSet.baseAddress, nfds_t(count), Int32(wait)) }) } catch {
      ready = 0  // ENOMEM and the like: try again next iteration
    }

    if ready > 0 && signalSlot >= 0 && pollSet[signalSlot].revents != 0 { handleSignals() }
    if ready > 0 && inotifySlot >= 0 && pollSet[inotifySlot].revents != 0 { handleInotify() }
    if let retry = allowListRetryAt, engine.clock.now() >= retry {
      allowListRetryAt = nil
      reloadAllowList()
    }
    if selfPacedReady || (cameraSlot >= 0 && pollSet[cameraSlot].revents != 0) { captureFrame() }
    checkFrameTimeout()
    engine.sweepPresence()
    engine.tick()
    if let console {
      console.service(pollSet)
      console.drainLines { client, line in executeConsoleLine(console, client: client, line: line) }
      advanceSnapshot(console)
      console.broadcast(engine.events, since: startedAt, upTo: auditLog?.committedSequence)
    }
    checkAuditLog()
    updateFramesPerSecond()
    notifySystemd()
  }

  private mutating func captureFrame() {
    guard var source = camera.take() else { return }
    do throws(CaptureError) {
      let outcome: Bool? = try source.withNextFrame(timeoutMilliseconds: 0) { frame in
        engine.process(frame)
        return true
      }
      droppedFrames = source.droppedFrames
      camera = consume source
      if outcome != nil {
        lastFrameAt = engine.clock.now()
        if settings.maxFrames > 0 && engine.stats.frames >= settings.maxFrames { stopRequested = true }
      }
    } catch {
      switch error {
      case .endOfStream:
        cameraState = .finished
        camera = nil
        stopRequested = true
      default:
        cameraLost(error)
      }
    }
  }

  private mutating func checkFrameTimeout() {
    guard camera != nil, cameraState == .streaming else { return }
    if engine.clock.now().milliseconds(since: lastFrameAt) >= settings.frameTimeoutMilliseconds {
      cameraLost(.deviceLost(errno: ETIMEDOUT))
    }
  }

  private mutating func openCamera() {
    reopenAttempts &+= 1
    do throws(CaptureError) {
      let source = try openSource()
      cameraSummary = source.summary
      camera = consume source
      let wasDegraded = cameraState == .degraded
      cameraState = .streaming
      lastFrameAt = engine.clock.now()
      backoffMilliseconds = 100
      lastCameraError = nil
      engine.record(.state, code: (wasDegraded ? FaultCode.cameraRestored : FaultCode.started).rawValue)
    } catch {
      lastCameraError = error
      if cameraState != .degraded {
        cameraState = .degraded
        engine.record(.fault, code: FaultCode.cameraLost.rawValue)
        engine.play(engine.settings.actuation.faultPattern)
      }
      reopenAt = engine.clock.now().adding(milliseconds: backoffMilliseconds)
      backoffMilliseconds = min(backoffMilliseconds * 2, settings.reopenBackoffMillisecondsMax)
    }
  }

  private mutating func cameraLost(_ error: CaptureError) {
    cameraLosses &+= 1
    lastCameraError = error
    camera = nil  // releases the device (deinit: STREAMOFF, munmap, close)
    cameraState = .degraded
    engine.record(.fault, code: FaultCode.cameraLost.rawValue)
    engine.play(engine.settings.actuation.faultPattern)
    backoffMilliseconds = 100
    reopenAt = engine.clock.now().adding(milliseconds: backoffMilliseconds)
  }

  private mutating func handleSignals() {
    for _ in 0..<8 {
      let signal = sg_signalfd_read(signalDescriptor)
      if signal <= 0 { return }
      switch signal {
      case SIGTERM, SIGINT: stopRequested = true
      case SIGHUP: reloadAllowList()
      case SIGUSR1 where settings.stallOnSIGUSR1:
        // Test hook (SCANGATE_TEST_STALL=1): the loop stops turning, as a hung driver call would.
        while true { sleep(3_600) }
      default: break
      }
    }
  }

  private mutating func handleInotify() {
    var relevant = false
    for _ in 0..<16 {
      let n = Glibc.read(inotifyDescriptor, inotifyBuffer.baseAddress, inotifyBuffer.count)
      if n <= 0 { break }
      var offset = 0
      while offset + 16 <= n {
        let length = Int(inotifyBuffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        let nameStart = offset + 16
        if length > 0 && nameStart + length <= n {
          relevant = relevant || nameMatches(start: nameStart, length: length)
        }
        offset = nameStart + length
      }
    }
    if relevant { reloadAllowList() }
  }

  private func nameMatches(start: Int, length: Int) -> Bool {
    var i = 0
    for b in allowListName.utf8 {
      guard i < length, inotifyBuffer[start + i] == b else { return false }
      i += 1
    }
    return i == length || inotifyBuffer[start + i] == 0
  }

  /// READY=1 once the first camera open has been tried (the reader is up, streaming or
  /// degraded), STATUS= on every change of camera state, and the watchdog from every iteration.
  private mutating func notifySystemd() {
    guard notifier.isActive else { return }
    notifier.tick(now: engine.clock.now())
    guard cameraState != .starting, !notifier.readySent || cameraState != statusSentState else { return }
    statusSentState = cameraState
    let state = cameraState, summary = cameraSummary, entries = engine.allowList.count
    let write: (inout ByteWriter) -> Void = { w in
      w.write("camera ")
      w.write(state.name)
      w.write(" ")
      w.write(summary)
      w.write("; allow-list ")
      w.write(entries)
      w.write(" entries")
    }
    if notifier.readySent { notifier.send { w in w.write("STATUS="); write(&w) } } else { notifier.ready(status: write) }
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
    let now = engine.clock.now()
    let elapsed = now.milliseconds(since: fpsWindowStart)
    guard elapsed >= 1_000 else { return }
    let frames = engine.stats.frames - fpsWindowFrames
    framesPerSecondTimes100 = Int(frames * 100_000 / UInt64(elapsed))
    fpsWindowStart = now
    fpsWindowFrames = engine.stats.frames
  }

  /// Whether a camera (or replay) is open now.
  public var hasCamera: Bool { camera != nil }
}
