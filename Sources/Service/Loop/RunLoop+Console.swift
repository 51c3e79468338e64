import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanLoop

/// The reader as the console's command interpreter sees it (ScanConsole.ConsoleCommands):
/// status values, recent decisions and log records, and the few actions a console may take.
/// Commands run on the loop's thread between frames.
extension RunLoop: ConsoleHost where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  public func consoleStatus() -> ReaderStatus {
    var s = ReaderStatus()
    s.version = ScanGateVersion.string
    s.decoderVersion = ZXingDecoder.engineVersion
    s.gpioVersion = "libgpiod " + GPIODOutputLine.libraryVersion
    s.cameraState = cameraState.name
    s.cameraSummary = cameraSummary
    if let error = lastCameraError { s.cameraError = Self.describe(error) }
    s.framesPerSecondTimes100 = framesPerSecondTimes100
    s.droppedFrames = droppedFrames
    s.cameraLosses = cameraLosses
    s.relayActive = engine.relayLevel == .active
    s.buzzerActive = engine.buzzerLevel == .active
    s.stats = engine.stats
    s.allowListVersion = engine.allowList.version
    s.allowListEntries = engine.allowList.count
    s.allowListLoadedAtUnixSeconds = engine.allowList.loadedAtUnixSeconds
    s.allowListError = engine.allowList.lastError
    s.pinAvailable = engine.policy.pinAvailable
    s.allowListPinRefused = engine.policy.pinAvailable ? 0 : engine.allowList.pinEntryCount
    s.decoder = decoders?.engineStats ?? engine.pipeline.decoder.engineStats
    s.decoderWorkers = decoders?.stats
    s.decoderLastCrash = decoders?.lastCrashName
    s.aim = engine.lastCodeGeometry
    s.exposure = engine.exposure
    s.codesInView = engine.presence.presentCount
    contributeParticipants(to: &s)  // the door, the clock floor, …
    if let last = engine.lastDecision {
      s.lastDecision = last.verdict
      s.lastDecisionAgeSeconds = engine.clock.now().milliseconds(since: last.monotonic) / 1000
    }
    if let console {
      s.console.tcpClients = console.connectedClients
      s.console.watching = console.watchingClients
      s.console.dropped = console.droppedClients
      s.console.rejected = console.rejectedClients
      s.console.reclaimed = console.reclaimedClients
      s.console.localPeers = console.peerOwnerLookup
      s.console.serialPath = console.settings.serialPath
      s.console.serialOpen = console.serialOpen
      s.console.secretProblem = console.secretProblem
    }
    if case .panel(let panel) = engine.outcome { s.panelLine = panel.statusLine(now: engine.clock.now()) }
    if let log = auditLog {
      s.logLine = withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        log.writeStatus(into: &w)
        return String(decoding: w.written, as: UTF8.self)
      }
    }
    if let c = engine.policy.credentials { s.credentialsLine = Self.credentialsStatus(c, now: engine.wall.unixSeconds()) }
    s.uptimeSeconds = engine.clock.now().microseconds(since: startedAt) / 1_000_000
    return s
  }

  static func describe(_ error: CaptureError) -> String {
    switch error {
    case .deviceLost(let code): "\(code)"
    case .formatRejected(let why): why
    case .endOfStream: "end of replay"
    }
  }

  public func writeLastDecisions(_ count: Int, payloads: PayloadVisibility, into w: inout ByteWriter) -> Int {
    let ring = engine.events
    // Walk back to the first of the last `count` decisions still in the ring, then forward.
    var found = 0
    var first = ring.lastSequence + 1
    var s = ring.lastSequence
    while s > 0 && found < count {
      guard case .event(let e) = ring.read(s) else { break }
      if e.kind == .decision {
        found += 1
        first = s
      }
      s -= 1
    }
    var written = 0
    var cursor = EventCursor(next: first)
    cursor.read(ring) { item in
      guard written < found, case .event(let e) = item, e.kind == .decision else { return }
      w.write("| ")
      EventText.write(e, since: startedAt, payloads: payloads, into: &w)
      w.newline()
      written += 1
    }
    return written
  }

  public mutating func startLog(_ query: AuditQuery, for session: SessionTicket) -> LogStart {
    guard let log = auditLog else { return .notConfigured }
    return log.requestRecent(query, for: session) ? .started : .busy
  }

  /// Sends a finished LOG read to the session that asked (if it is still there).
  func deliverLog(_ console: ConsoleServer<Clock>) {
    guard let read = auditLog?.takeRecent(), console.commands.isCurrent(read.ticket) else { return }
    console.send(read.ticket.slot) { w in
      read.text.withUnsafeBytes { w.write(bytes: $0) }
      w.write("OK log ")
      w.write(read.lines)
      w.write(" records\n")
    }
  }

  public func check(_ payload: UnsafeRawBufferPointer, label: UnsafeMutableRawBufferPointer) -> (Verdict, labelCount: Int) {
    let decision = engine.checkDecision(payload)
    return (decision.verdict, engine.policy.copyLabel(decision, into: label))
  }

  public mutating func open(milliseconds: Int?) -> OpenOutcome { open(milliseconds: milliseconds, by: .console) }

  /// OPEN from the console or a fleet command (`by`), capped like every pulse.
  mutating func open(milliseconds: Int?, by: UnlockReason) -> OpenOutcome {
    let a = engine.settings.actuation
    let requested = milliseconds ?? a.relayPulseMilliseconds
    let effective = min(requested, a.relayPulseMillisecondsMax, ActuationSettings.relayPulseMillisecondsCap)
    guard engine.openManually(milliseconds: effective, by: by) else {
      let rest = engine.actuator.restRemainingMilliseconds(at: engine.clock.now()) ?? ActuationSettings.relayRestMilliseconds
      return .resting(milliseconds: rest)
    }
    return .pulsed(milliseconds: effective)
  }

  public mutating func reload() -> ReloadOutcome {
    if let error = reloadAllowList() { return .rejected(error) }
    return .loaded(version: engine.allowList.version, entries: engine.allowList.count)
  }

  public mutating func selfTest() {
    let a = engine.settings.actuation
    engine.play(.sequence(.sequence(a.grantPattern, pause: 400, a.denyPattern), pause: 400, a.faultPattern))
    engine.openManually(milliseconds: 200)
  }

  public mutating func startSnapshot(for session: SessionTicket, text: Bool, redacted: Bool) -> SnapshotStart {
    guard snapshotting.phase == .idle, console?.bulkActive != true else { return .busy }
    guard hasCamera else { return .noCamera(state: cameraState.name) }
    engine.captureSnapshot = true
    snapshotting.phase = .capturing
    snapshotting.session = session
    snapshotting.text = text
    snapshotting.redacted = redacted
    snapshotting.deadline = engine.clock.now().adding(milliseconds: 3_000)
    return .started
  }

  /// Every participant's part of the status, in the order they were registered (a later one
  /// overwrites an earlier one's field).
  func contributeParticipants(to status: inout ReaderStatus) {
    let now = engine.clock.now(), unixSeconds = engine.wall.unixSeconds()
    for i in 0..<participants.count { participants[i].contribute(to: &status, now: now, unixSeconds: unixSeconds) }
  }

  /// The clock floor as its keeper reports it (nil: no participant keeps one).
  public func clockReport() -> ClockReport? {
    var status = ReaderStatus()
    contributeParticipants(to: &status)
    return status.clock
  }

  public mutating func resetClockFloor() -> (before: Int64, after: Int64)? {
    for i in 0..<participants.count {
      if case .clockFloorReset(let before, let after) = participants[i].perform(.resetClockFloor) { return (before, after) }
    }
    return nil
  }

  /// LOCKDOWN ON/OFF and TURNSTILE FORGIVE/RESET: the participant that owns it carries it out.
  public mutating func perform(_ action: ConsoleAction, who: UnsafeRawBufferPointer) -> ConsoleActionOutcome? {
    let command = OperatorCommand.action(action, authority: .console, who: Array(who))
    for i in 0..<participants.count {
      if case .action(let outcome) = participants[i].perform(command) { return outcome }
    }
    return nil
  }

  @discardableResult
  public mutating func record(_ kind: EventKind, code: UInt16, text: UnsafeRawBufferPointer) -> UInt64 {
    var e = ScanEvent(kind, code: code, at: engine.clock.now(), wall: engine.wall.unixNanoseconds())
    e.setPayload(text)
    return engine.events.append(e)
  }

  // MARK: - SNAPSHOT

  /// Moves a snapshot along: captured by the engine on the next frame, then written as text at
  /// once, or rendered to PNG on the snapshot thread and streamed in bounded steps. The reply
  /// goes only to the session that asked (not to a later client in the same slot).
  mutating func advanceSnapshot(_ console: ConsoleServer<Clock>) {
    switch snapshotting.phase {
    case .idle:
      return
    case .capturing:
      if engine.snapshotCaptured {
        engine.snapshotCaptured = false
        engine.snapshot.framesPerSecondTimes100 = framesPerSecondTimes100
        if snapshotting.redacted { engine.snapshot.redact() }
        if snapshotting.text {
          let snapshot = engine.snapshot
          sendSnapshot(console) { w in
            let start = w.count
            _ = SnapshotText.write(snapshot, into: &w)
            let lines = ConsoleLayout.fold(&w, from: start)  // its header lines; the picture fits
            w.write("OK snapshot text 78x40, ")
            w.write(lines)
            w.write(" lines\n")
          }
          snapshotting.phase = .idle
        } else {
          snapshotting.worker?.render()
          snapshotting.phase = .rendering
        }
      } else if engine.clock.now() >= snapshotting.deadline {
        engine.captureSnapshot = false
        sendSnapshot(console) { $0.write("ERR 503 no frame within 3 s\n") }
        snapshotting.phase = .idle
      }
    case .rendering:
      guard let outcome = snapshotting.worker?.take(), outcome.finished else { return }
      snapshotting.phase = .idle
      guard console.commands.isCurrent(snapshotting.session) else { return }
      guard let png = outcome.png else {
        sendSnapshot(console) { $0.write("ERR 500 the snapshot could not be encoded\n") }
        return
      }
      let s = engine.snapshot
      console.startBulk(snapshotting.session.slot, data: png, trailer: "OK snapshot png \(s.width)x\(s.height) \(png.count) bytes base64")
    }
  }

  private func sendSnapshot(_ console: ConsoleServer<Clock>, _ body: (inout ByteWriter) -> Void) {
    guard console.commands.isCurrent(snapshotting.session) else { return }
    console.send(snapshotting.session.slot, body)
  }
}

/// Where a console snapshot is.
enum SnapshotPhase {
  case idle, capturing, rendering
}

/// A snapshot under way: the console's (captured from the next frame, then drawn as text here or
/// rendered to PNG by the worker off the loop, abandoned after 3 s without a frame) or a
/// participant's (`LoopRequest.snapshot`, a fleet command).
struct Snapshotting {
  /// Renders PNG snapshots off the loop (made with the console).
  let worker: SnapshotWorker?
  var phase = SnapshotPhase.idle
  var session = SessionTicket(slot: -1, generation: 0)
  var text = false
  /// Codes blanked and payloads dropped before rendering (a session named by AS).
  var redacted = false
  var deadline = Instant(nanoseconds: 0)
  /// A participant waiting for one.
  var sink: (any SnapshotSink)? = nil
}
