import CGPIOD
import Glibc
import ScanConsole
import ScanCore

/// The console's commands, run on the loop's thread between frames (docs/console.md).
/// Replies are written straight into the client's fixed output buffer.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  mutating func executeConsoleLine(_ console: ConsoleServer, client: Int, line: UnsafeRawBufferPointer?) {
    guard let line else {
      reply(console, client, error: .lineTooLong)
      return
    }
    var argumentCount = 0
    guard let parsed = ConsoleRequest.parse(line, argument: consoleArgument, argumentCount: &argumentCount) else { return }
    let argument = UnsafeRawBufferPointer(rebasing: consoleArgument[0..<argumentCount])
    switch parsed {
    case .failure(let error):
      recordCommand(line, verb: nil, code: UInt16(error.code))
      reply(console, client, error: error)
    case .success(let request):
      let sequence = recordCommand(line, verb: request.verb, code: 0)
      if request.verb.needsOperator && !console.clients[client].isOperator {
        reply(console, client, error: .needsAuth)
        return
      }
      execute(request, argument: argument, sequence: sequence, console: console, client: client)
    }
  }

  /// Records the command (AUTH's secret masked) as an event; returns its sequence number.
  @discardableResult
  private mutating func recordCommand(_ line: UnsafeRawBufferPointer, verb: ConsoleVerb?, code: UInt16) -> UInt64 {
    var e = ScanEvent()
    e.kind = .command
    e.code = code
    e.monotonic = engine.clock.now()
    e.wallNanoseconds = engine.wall.unixNanoseconds()
    if verb == .auth {
      let masked: StaticString = "AUTH ****"
      e.setPayload(UnsafeRawBufferPointer(start: masked.utf8Start, count: masked.utf8CodeUnitCount))
    } else {
      e.setPayload(line)
    }
    return engine.events.append(e)
  }

  private func reply(_ console: ConsoleServer, _ client: Int, error: ConsoleError) {
    console.write(client) { w in
      w.write("ERR ")
      w.write(error.code)
      w.write(" ")
      w.write(error.message)
      w.newline()
    }
  }

  private mutating func execute(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, sequence: UInt64, console: ConsoleServer, client: Int
  ) {
    switch request.verb {
    case .help:
      console.write(client) { w in
        for verb in ConsoleVerb.allCases {
          w.write("| ")
          w.write(verb.usage)
          w.newline()
        }
        w.write("OK help ")
        w.write(ConsoleVerb.allCases.count)
        w.write(" lines\n")
      }
    case .version:
      console.write(client) { w in
        w.write("OK scangate ")
        w.write(ScanGateVersion.string)
        w.write(" decoder ")
        w.write(ZXingDecoder.engineVersion)
        w.write(" gpio libgpiod ")
        w.write(GPIODOutputLine.libraryVersion)
        w.newline()
      }
    case .status:
      writeStatus(console, client)
    case .stats:
      writeStats(console, client)
    case .last:
      writeLast(console, client, count: min(request.number ?? 5, 50))
    case .watch:
      console.clients[client].watching = request.flag
      console.write(client) { $0.write(request.flag ? "OK watching\n" : "OK not watching\n") }
    case .check:
      let digest = engine.digester.sha256(argument)
      let (verdict, entry) = engine.allowList.decide(digest, nowUnixSeconds: engine.wall.unixSeconds())
      console.write(client) { w in
        w.write("OK ")
        w.write(verdict.name)
        if let entry {
          w.write(" label=")
          withUnsafeTemporaryAllocation(byteCount: ScanEvent.labelBytesMax, alignment: 1) { buffer in
            let n = engine.allowList.copyLabel(entry, into: buffer)
            w.write(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
          }
        }
        w.write(" payload=")
        w.writeEscaped(argument)
        w.newline()
      }
    case .log:
      guard let log = auditLog else {
        console.write(client) { $0.write("ERR 503 the audit log is not configured\n") }
        return
      }
      let count = min(request.number ?? 10, 100)
      console.write(client) { w in
        let lines = log.writeRecent(count, into: &w)
        w.write("OK log ")
        w.write(lines)
        w.write(" records\n")
      }
    case .auth:
      authenticate(console, client, argument)
    case .quit:
      console.clients[client].closeWhenFlushed = true
      console.write(client) { $0.write("OK bye\n") }
    case .open:
      let requested = request.number ?? engine.settings.actuation.relayPulseMilliseconds
      let effective = min(requested, engine.settings.actuation.relayPulseMillisecondsMax, ActuationSettings.relayPulseMillisecondsCap)
      engine.openManually(milliseconds: effective)
      console.write(client) { w in
        w.write("OK #")
        w.write(sequence)
        w.write(" open ")
        w.write(effective)
        w.write(" ms\n")
      }
    case .reload:
      let error = reloadAllowList()
      console.write(client) { w in
        if let error {
          w.write("ERR 400 ")
          if error.line > 0 {
            w.write("line ")
            w.write(error.line)
            w.write(": ")
          }
          writeSanitized(error.reason, into: &w)
          w.write(" (the live list is kept)\n")
        } else {
          w.write("OK #")
          w.write(sequence)
          w.write(" allow-list version ")
          w.write(engine.allowList.version)
          w.write(", ")
          w.write(engine.allowList.count)
          w.write(" entries\n")
        }
      }
    case .selftest:
      let a = engine.settings.actuation
      engine.play(.sequence(.sequence(a.grantPattern, pause: 400, a.denyPattern), pause: 400, a.faultPattern))
      engine.openManually(milliseconds: 200)
      console.write(client) { w in
        w.write("OK #")
        w.write(sequence)
        w.write(" selftest: grant, deny and fault patterns, relay 200 ms\n")
      }
    case .snapshot:
      guard snapshotPhase == .idle, !console.bulkActive else {
        console.write(client) { $0.write("ERR 503 a snapshot is being taken; try again\n") }
        return
      }
      guard hasCamera else {
        console.write(client) { $0.write("ERR 503 no camera frames (camera ") }
        console.write(client) { w in w.write(cameraState.name); w.write(")\n") }
        return
      }
      engine.captureSnapshot = true
      snapshotPhase = .capturing
      snapshotClient = client
      snapshotText = request.flag
      snapshotDeadline = engine.clock.now().adding(milliseconds: 3_000)
    }
  }

  private mutating func authenticate(_ console: ConsoleServer, _ client: Int, _ secret: UnsafeRawBufferPointer) {
    let peer = console.clients[client].peer
    let now = engine.clock.now()
    switch console.gate.admit(peer, at: now) {
    case .lockedOut(let ms):
      console.write(client) { w in
        w.write("ERR 423 locked out after too many failures; retry in ")
        w.write((ms + 999) / 1000)
        w.write(" s\n")
      }
      return
    case .backingOff(let ms):
      console.write(client) { w in
        w.write("ERR 429 too soon after a failed AUTH; retry in ")
        w.write((ms + 999) / 1000)
        w.write(" s\n")
      }
      return
    case .allowed:
      break
    }
    if console.secretMatches(secret) {
      console.gate.recordSuccess(peer)
      console.clients[client].isOperator = true
      console.write(client) { $0.write("OK operator\n") }
      return
    }
    let failures = console.gate.recordFailure(peer, at: now)
    engine.record(.authFailure, code: UInt16(clamping: failures))
    let noSecret = console.secretProblem != nil
    console.write(client) { w in
      w.write(noSecret ? "ERR 403 no operator secret is configured\n" : "ERR 403 wrong secret\n")
    }
  }

  // MARK: - SNAPSHOT

  /// Moves a snapshot along: captured by the engine on the next frame, then written as text at
  /// once, or rendered to PNG on the snapshot thread and streamed in bounded steps.
  mutating func advanceSnapshot(_ console: ConsoleServer) {
    switch snapshotPhase {
    case .idle:
      return
    case .capturing:
      if engine.snapshotCaptured {
        engine.snapshotCaptured = false
        engine.snapshot.framesPerSecondTimes100 = framesPerSecondTimes100
        if snapshotText {
          let snapshot = engine.snapshot
          console.write(snapshotClient) { w in
            let lines = SnapshotText.write(snapshot, into: &w)
            w.write("OK snapshot text 80x40, ")
            w.write(lines)
            w.write(" lines\n")
          }
          snapshotPhase = .idle
        } else {
          snapshotWorker?.render()
          snapshotPhase = .rendering
        }
      } else if engine.clock.now() >= snapshotDeadline {
        engine.captureSnapshot = false
        console.write(snapshotClient) { $0.write("ERR 503 no frame within 3 s\n") }
        snapshotPhase = .idle
      }
    case .rendering:
      guard let outcome = snapshotWorker?.take(), outcome.finished else { return }
      snapshotPhase = .idle
      guard let png = outcome.png else {
        console.write(snapshotClient) { $0.write("ERR 500 the snapshot could not be encoded\n") }
        return
      }
      let s = engine.snapshot
      console.startBulk(snapshotClient, data: png, trailer: "OK snapshot png \(s.width)x\(s.height) \(png.count) bytes base64")
    }
  }

  // MARK: - STATUS, STATS, LAST

  private func writeStatus(_ console: ConsoleServer, _ client: Int) {
    let engineStats = engine.stats
    let decoder = engine.pipeline.decoder.engineStats
    console.write(client) { w in
      var lines = 0
      w.write("| camera ")
      w.write(cameraState.name)
      w.write(" ")
      w.write(cameraSummary)
      w.write("; fps ")
      w.writeFixed(UInt64(framesPerSecondTimes100), scale: 100, decimals: 1)
      w.write("; dropped ")
      w.write(droppedFrames)
      w.write("; losses ")
      w.write(cameraLosses)
      if let error = lastCameraError {
        w.write("; last error ")
        switch error {
        case .deviceLost(let code): w.write(SystemError.describe(code))
        case .formatRejected(let why): writeSanitized(why, into: &w)
        case .endOfStream: w.write("end of replay")
        }
      }
      w.newline()
      lines += 1
      w.write("| gpio relay ")
      w.write(engine.relayLevel == .active ? "active" : "inactive")
      w.write(", buzzer ")
      w.write(engine.buzzerLevel == .active ? "active" : "inactive")
      w.write("; errors ")
      w.write(engineStats.gpioErrors)
      w.newline()
      lines += 1
      w.write("| allow-list version ")
      w.write(engine.allowList.version)
      w.write(", ")
      w.write(engine.allowList.count)
      w.write(" entries")
      if engine.allowList.loadedAtUnixSeconds > 0 {
        w.write(", loaded ")
        w.write(RFC3339.format(engine.allowList.loadedAtUnixSeconds))
      }
      if let error = engine.allowList.lastError {
        w.write("; last load failed: ")
        if error.line > 0 {
          w.write("line ")
          w.write(error.line)
          w.write(": ")
        }
        writeSanitized(error.reason, into: &w)
      }
      w.newline()
      lines += 1
      if let d = decoder {
        w.write("| decoder ")
        w.write(ZXingDecoder.engineVersion)
        w.write("; arena high water ")
        w.write(d.arenaHighWaterBytes / 1024)
        w.write(" KiB of ")
        w.write(d.arenaCapacityBytes / 1024)
        w.write(" KiB, pinned ")
        w.write(d.arenaPinnedBytes / 1024)
        w.write(" KiB, overflows ")
        w.write(d.arenaOverflows)
        w.write(", engine errors ")
        w.write(d.engineErrors)
        w.newline()
        lines += 1
      }
      w.write("| aim last code ")
      let g = engine.lastCodeGeometry
      if g.modulePixelsTimes10 > 0 {
        w.writeFixed(UInt64(g.modulePixelsTimes10), scale: 10, decimals: 1)
        w.write(" px/module")
        w.write(g.modulePixelsTimes10 < 20 ? " (too small: move closer; 2 needed)" : " (2 needed)")
        w.write(", sharpness ")
        w.write(g.sharpnessPercent)
        w.write("%")
        if g.sharpnessPercent < 25 { w.write(" (blurred: refocus)") }
      } else {
        w.write("none yet")
      }
      w.write("; brightness ")
      w.write(engine.exposure.meanBrightness)
      w.write(", clipped ")
      w.writeFixed(UInt64(engine.exposure.clippedPerMille), scale: 10, decimals: 1)
      w.write("%")
      if engine.exposure.clippedPerMille > 100 { w.write(" (glare or too dark: adjust light or exposure)") }
      w.newline()
      lines += 1
      w.write("| presence ")
      w.write(engine.presence.presentCount)
      w.write(" code(s) in view")
      if let last = engine.lastDecision {
        w.write("; last decision ")
        w.write(last.verdict.name)
        w.write(" ")
        w.write(engine.clock.now().milliseconds(since: last.monotonic) / 1000)
        w.write(" s ago")
      }
      w.newline()
      lines += 1
      w.write("| console ")
      w.write(console.connectedClients)
      w.write(" TCP client(s), ")
      w.write(console.watchingClients)
      w.write(" watching, ")
      w.write(console.droppedClients)
      w.write(" dropped, ")
      w.write(console.rejectedClients)
      w.write(" rejected; serial ")
      if console.settings.serialPath.isEmpty { w.write("none") }
      else {
        w.write(console.settings.serialPath)
        w.write(console.serialOpen ? " open" : " closed (reopening)")
      }
      w.write("; operator secret ")
      if let problem = console.secretProblem { writeSanitized(problem, into: &w) } else { w.write("loaded") }
      w.newline()
      lines += 1
      if let log = auditLog {
        w.write("| log ")
        log.writeStatus(into: &w)
        w.newline()
        lines += 1
      }
      let up = engine.clock.now().microseconds(since: startedAt) / 1_000_000
      w.write("| uptime ")
      w.write(up / 3600)
      w.write("h ")
      w.write(up / 60 % 60)
      w.write("m ")
      w.write(up % 60)
      w.write("s\n")
      lines += 1
      w.write("OK status ")
      w.write(lines)
      w.write(" lines\n")
    }
  }

  private func writeStats(_ console: ConsoleServer, _ client: Int) {
    let s = engine.stats
    console.write(client) { w in
      w.write("| frames ")
      w.write(s.frames)
      w.write(" with-codes ")
      w.write(s.framesWithCodes)
      w.write(" symbols ")
      w.write(s.symbols)
      w.write(" truncated ")
      w.write(s.truncatedPayloads)
      w.write(" dropped ")
      w.write(droppedFrames)
      w.newline()
      w.write("| decisions granted ")
      w.write(s.grants)
      w.write(" denied ")
      w.write(s.denies)
      w.write(" manual-opens ")
      w.write(s.manualOpens)
      w.write(" gpio-errors ")
      w.write(s.gpioErrors)
      w.newline()
      writeHistogram("decode", s.decode, into: &w)
      writeHistogram("frame-to-decision", s.frameToDecision, into: &w)
      writeHistogram("frame-to-edge", s.frameToEdge, into: &w)
      w.write("| allocations per frame 0 (fixed memory; measured by HotPathAllocationTests), decoder heap fallbacks ")
      w.write(engine.pipeline.decoder.engineStats?.arenaOverflows ?? 0)
      w.newline()
      w.write("OK stats 6 lines\n")
    }
  }

  private func writeHistogram(_ name: StaticString, _ h: LatencyHistogram, into w: inout ByteWriter) {
    w.write("| ")
    w.write(name)
    w.write(" p50 ")
    w.writeFixed(h.percentile(0.5), scale: 1000, decimals: 2)
    w.write(" ms p99 ")
    w.writeFixed(h.percentile(0.99), scale: 1000, decimals: 2)
    w.write(" ms max ")
    w.writeFixed(h.maxMicroseconds, scale: 1000, decimals: 2)
    w.write(" ms n ")
    w.write(h.count)
    w.newline()
  }

  private func writeLast(_ console: ConsoleServer, _ client: Int, count: Int) {
    let ring = engine.events
    // Walk back to find the first of the last `count` decisions still in the ring.
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
    console.write(client) { w in
      var sequence = first
      var written = 0
      while written < found, case .event(let e) = ring.read(sequence) {
        if e.kind == .decision {
          w.write("| ")
          EventText.write(e, since: startedAt, into: &w)
          w.newline()
          written += 1
        }
        sequence += 1
      }
      w.write("OK last ")
      w.write(written)
      w.write(" decisions\n")
    }
  }
}

/// Writes a message that may hold file names or driver text, with control bytes escaped.
func writeSanitized(_ text: String, into w: inout ByteWriter) {
  for b in text.utf8 {
    if b < 0x20 || b == 0x7F {
      w.write("%")
      w.byte(b >> 4 < 10 ? 48 + (b >> 4) : 55 + (b >> 4))
      w.byte(b & 15 < 10 ? 48 + (b & 15) : 55 + (b & 15))
    } else {
      w.byte(b)
    }
  }
}


/// Where a console snapshot is.
enum SnapshotPhase {
  case idle, capturing, rendering
}
