import ScanCore

/// STATUS and the lines it is made of (CLOCK and STATS reuse some).
extension ConsoleText {
  /// STATUS: one `| ` line per part of the reader, folded to the console's width (ConsoleLayout:
  /// a field per line, continuation lines indented), then `OK status n lines` counting the
  /// lines sent.
  public static func writeStatus(_ s: ReaderStatus, into w: inout ByteWriter, width: Int = ConsoleLayout.columns) {
    let start = w.count
    writeCameraLine(s, into: &w)
    writeGPIOLine(s, into: &w)
    writeAllowListLine(s, into: &w)
    if let d = s.decoder {
      writeDecoderLine(s.decoderVersion, d, budget: s.stats, into: &w)
    }
    if let workers = s.decoderWorkers {
      writeWorkersLine(workers, lastCrash: s.decoderLastCrash, into: &w)
    }
    writeAimLine(s, into: &w)
    writePresenceLine(s, into: &w)
    writeConsoleLine(s.console, into: &w)
    writeOptionalLines(s, into: &w)
    let up = s.uptimeSeconds
    w.write("| uptime ")
    w.write(up / 3600)
    w.write("h ")
    w.write(up / 60 % 60)
    w.write("m ")
    w.write(up % 60)
    w.write("s\n")
    let lines = ConsoleLayout.fold(&w, from: start, width: width)
    w.write("OK status ")
    w.write(lines)
    w.write(" lines\n")
  }

  /// `| gpio relay active|inactive, buzzer active|inactive; errors <n>`.
  static func writeGPIOLine(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("| gpio relay ")
    w.write(s.relayActive ? "active" : "inactive")
    w.write(", buzzer ")
    w.write(s.buzzerActive ? "active" : "inactive")
    w.write("; errors ")
    w.write(s.stats.gpioErrors)
    w.newline()
  }

  /// `| presence <n> code(s) in view[; last decision <verdict> <age> s ago]`.
  static func writePresenceLine(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("| presence ")
    w.write(s.codesInView)
    w.write(" code(s) in view")
    if let last = s.lastDecision {
      w.write("; last decision ")
      w.write(last.name)
      w.write(" ")
      w.write(s.lastDecisionAgeSeconds)
      w.write(" s ago")
    }
    w.newline()
  }

  /// STATUS's lines for the parts a reader may not have (log, door, each domain's own section
  /// in the order its participant was registered, credentials, panel, clock).
  static func writeOptionalLines(_ s: ReaderStatus, into w: inout ByteWriter) {
    if let log = s.logLine {
      w.write("| log ")
      w.write(log)
      w.newline()
    }
    if let door = s.door {
      w.write("| ")
      door.write(into: &w)
      w.newline()
    }
    for i in s.sections.indices {
      w.write("| ")
      w.write(s.sections[i].name)
      w.write(" ")
      writeSanitized(s.sections[i].line, into: &w)
      w.newline()
    }
    writeSanitizedLine("| credentials ", s.credentialsLine, into: &w)
    if let panel = s.panelLine {
      w.write("| ")
      w.write(panel)
      w.newline()
    }
    if let clock = s.clock {
      writeClock(clock, into: &w)
    }
  }

  /// `<prefix><text>` with the text sanitized, then a newline, when there is a text.
  static func writeSanitizedLine(_ prefix: StaticString, _ text: String?, into w: inout ByteWriter) {
    guard let text else { return }
    w.write(prefix)
    writeSanitized(text, into: &w)
    w.newline()
  }

  /// `| clock <now> floor <floor> synchronised|unsynchronised[, BEHIND its floor by <n> s][; floor file <problem>]`.
  public static func writeClock(_ c: ClockReport, into w: inout ByteWriter) {
    w.write("| clock ")
    w.write(RFC3339.format(c.wall))
    w.write(" floor ")
    w.write(c.floor > 0 ? RFC3339.format(c.floor) : "none")
    w.write(c.synchronized ? " synchronised" : " unsynchronised")
    if c.isBehind {
      w.write(", BEHIND its floor by ")
      w.write(c.floor - c.wall)
      w.write(" s (expiry is judged at the floor; CLOCK FLOOR RESET if the floor is wrong)")
    }
    if let problem = c.problem {
      w.write("; floor file ")
      writeSanitized(problem, into: &w)
    }
    w.newline()
  }

  static func writeCameraLine(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("| camera ")
    w.write(s.cameraState)
    w.write(" ")
    writeSanitized(s.cameraSummary, into: &w)
    w.write("; fps ")
    w.writeFixed(UInt64(s.framesPerSecondTimes100), scale: 100, decimals: 1)
    w.write("; dropped ")
    w.write(s.droppedFrames)
    w.write("; losses ")
    w.write(s.cameraLosses)
    if let error = s.cameraError {
      w.write("; last error ")
      writeSanitized(error, into: &w)
    }
    w.newline()
  }

  static func writeAllowListLine(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("| allow-list version ")
    w.write(s.allowListVersion)
    w.write(", ")
    w.write(s.allowListEntries)
    w.write(" entries")
    if s.allowListLoadedAtUnixSeconds > 0 {
      w.write(", loaded ")
      w.write(RFC3339.format(s.allowListLoadedAtUnixSeconds))
    }
    if s.allowListPinRefused > 0 {
      // A PIN that cannot be asked for is never skipped: those entries are refused (docs/admin.md).
      w.write("; ")
      w.write(s.allowListPinRefused)
      w.write(" need a PIN and no keypad asks here: denied-pin-unavailable")
    }
    if let error = s.allowListError {
      w.write("; last load failed: ")
      writeAllowListError(error, into: &w)
    }
    w.newline()
  }

  /// The decode strategy's budget: configured, used per frame on average, frames that spent it.
  static func writeBudget(_ t: ScanStats, into w: inout ByteWriter) {
    w.write(" decode-attempts ")
    w.write(t.decodeAttempts)
    w.write(" budget ")
    if t.decodeBudgetMicroseconds == 0 { w.write("none") } else { w.writeFixed(t.decodeBudgetMicroseconds, scale: 1000, decimals: 2) }
    w.write(" ms used ")
    w.writeFixed(t.frames == 0 ? 0 : t.decodeStrategyMicroseconds / t.frames, scale: 1000, decimals: 2)
    w.write(" ms/frame over-budget ")
    w.write(t.framesOverBudget)
    w.write(" quiet ")
    w.write(t.framesQuiet)
  }

  static func writeDecoderLine(_ version: String, _ d: DecoderStats, budget: ScanStats? = nil, into w: inout ByteWriter) {
    w.write("| decoder ")
    w.write(version)
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
    if let t = budget {
      w.write(";")
      writeBudget(t, into: &w)
    }
    w.newline()
  }

  /// The decoder worker processes: their state (a fault is named first) and counters.
  static func writeWorkersLine(_ d: DecoderIsolationStats, lastCrash: String?, into w: inout ByteWriter) {
    w.write("| decoder-workers ")
    if !d.decoding {
      w.write("FAULT (no worker can decode: starting or failing to start), ")
    } else {
      w.write(d.faulted ? "FAULT (frames abandoned or a worker crashed lately), " : "ok, ")
    }
    w.write(d.ready)
    w.write(" ready; deadline ")
    w.write(d.deadlineMilliseconds)
    w.write(" ms; restarts ")
    w.write(d.restarts)
    w.write(" abandoned ")
    w.write(d.abandoned)
    w.write(" starved ")
    w.write(d.starved)
    w.write(" crashed ")
    w.write(d.crashed)
    w.write(" skipped ")
    w.write(d.skipped)
    w.write(" start-failures ")
    w.write(d.startFailures)
    w.write(" longest ")
    w.writeFixed(d.longestMicroseconds, scale: 1000, decimals: 2)
    w.write(" ms")
    if let lastCrash {
      w.write("; last crash ")
      writeSanitized(lastCrash, into: &w)
    }
    if let m = d.masked {
      // A pattern that stops the decoder, masked: where, so that a technician can take it down.
      w.write("; PATTERN MASKED at x ")
      w.write(m.x)
      w.write(" y ")
      w.write(m.y)
      w.write(" ")
      w.write(m.width)
      w.write("x")
      w.write(m.height)
      w.write(" (")
      w.write(m.tiles)
      w.write(" of 16 tiles; the rest is read)")
    }
    w.newline()
  }

  static func writeAimLine(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("| aim last code ")
    let g = s.aim
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
    w.write(s.exposure.meanBrightness)
    w.write(", clipped ")
    w.writeFixed(UInt64(s.exposure.clippedPerMille), scale: 10, decimals: 1)
    w.write("%")
    if s.exposure.clippedPerMille > 100 { w.write(" (glare or too dark: adjust light or exposure)") }
    w.newline()
  }

  static func writeConsoleLine(_ c: ReaderStatus.Console, into w: inout ByteWriter) {
    w.write("| console ")
    w.write(c.tcpClients)
    w.write(" TCP client(s), ")
    w.write(c.watching)
    w.write(" watching, ")
    w.write(c.dropped)
    w.write(" dropped, ")
    w.write(c.rejected)
    w.write(" rejected, ")
    w.write(c.reclaimed)
    w.write(" reclaimed")
    if !c.localPeers.isEmpty {
      w.write("; local peers ")
      writeSanitized(c.localPeers, into: &w)
    }
    w.write("; serial ")
    if c.serialPath.isEmpty {
      w.write("none")
    } else {
      writeSanitized(c.serialPath, into: &w)
      w.write(c.serialOpen ? " open" : " closed (reopening)")
    }
    w.write("; operator secret ")
    if let problem = c.secretProblem { writeSanitized(problem, into: &w) } else { w.write("loaded") }
    w.newline()
  }
}
