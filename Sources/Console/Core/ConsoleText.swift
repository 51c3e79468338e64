import ScanCore

/// The console's reply bodies, encoded from values (no I/O): HELP, VERSION, STATUS, STATS.
public enum ConsoleText {
  /// HELP: every verb's form and one-line use; HELP <verb>: that one's form and explanation.
  /// Every line fits 80 columns with its `| ` (a serial terminal's width).
  public static func writeHelp(operator isOperator: Bool, verb: ConsoleVerb? = nil, into w: inout ByteWriter) {
    var lines = 0
    func body(_ text: StaticString) {
      text.withUTF8Buffer { bytes in
        var start = 0
        for i in 0...bytes.count where i == bytes.count || bytes[i] == 0x0A {
          w.write("| ")
          w.write(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<i]))
          w.newline()
          lines += 1
          start = i + 1
        }
      }
    }
    if let verb {
      body(verb.usage)
      body(verb.explanation)
      w.write("OK help ")
      w.write(verb.name)
      w.newline()
      return
    }
    for verb in ConsoleVerb.allCases { body(verb.usage) }
    w.write(isOperator ? "OK help " : "OK help (operator commands need AUTH) ")
    w.write(lines)
    w.write(" lines\n")
  }

  public static func writeVersion(_ s: ReaderStatus, into w: inout ByteWriter) {
    w.write("OK scangate ")
    w.write(s.version)
    w.write(" decoder ")
    w.write(s.decoderVersion)
    w.write(" gpio ")
    w.write(s.gpioVersion)
    w.newline()
  }

  public static func writeRetry(_ prefix: StaticString, _ milliseconds: Int, into w: inout ByteWriter) {
    w.write(prefix)
    w.write((milliseconds + 999) / 1000)
    w.write(" s\n")
  }

  public static func writeReload(_ outcome: ReloadOutcome, sequence: UInt64, into w: inout ByteWriter) {
    switch outcome {
    case .rejected(let error):
      w.write("ERR 400 ")
      writeAllowListError(error, into: &w)
      w.write(" (the live list is kept)\n")
    case .loaded(let version, let entries):
      w.write("OK #")
      w.write(sequence)
      w.write(" allow-list version ")
      w.write(version)
      w.write(", ")
      w.write(entries)
      w.write(" entries\n")
    }
  }

  static func writeAllowListError(_ error: AllowListError, into w: inout ByteWriter) {
    if error.line > 0 {
      w.write("line ")
      w.write(error.line)
      w.write(": ")
    }
    writeSanitized(error.reason, into: &w)
  }

  /// `ERR <code> <reason>` (no newline), the reason written sanitized: a refusal the host made.
  public static func writeError(_ code: Int, _ reason: String, into w: inout ByteWriter) {
    w.write("ERR ")
    w.write(code)
    w.write(" ")
    writeSanitized(reason, into: &w)
  }

  /// Writes text that may hold file names, driver or USB strings with control bytes and
  /// non-ASCII escaped as %XX, so no device name can put an escape sequence on a terminal.
  /// `escaped`: the text's fields are escaped already (an audit record's line): its `%` are
  /// escapes, kept as they are, so nothing shows escaped twice.
  public static func writeSanitized(_ text: String, into w: inout ByteWriter, escaped: Bool = false) {
    for b in text.utf8 {
      if b < 0x20 || b >= 0x7F || (b == UInt8(ascii: "%") && !escaped) {
        w.writePercentEscaped(b)
      } else {
        w.byte(b)
      }
    }
  }

  // MARK: - STATS

  /// STATS: counters and latencies, folded as STATUS is, then `OK stats n lines`.
  public static func writeStats(_ s: ReaderStatus, console c: ConsoleCounters, into w: inout ByteWriter, width: Int = ConsoleLayout.columns) {
    let start = w.count
    let t = s.stats
    w.write("| frames ")
    w.write(t.frames)
    w.write(" with-codes ")
    w.write(t.framesWithCodes)
    w.write(" symbols ")
    w.write(t.symbols)
    w.write(" truncated ")
    w.write(t.truncatedPayloads)
    w.write(" dropped ")
    w.write(s.droppedFrames)
    writeBudget(t, into: &w)
    w.newline()
    w.write("| decisions granted ")
    w.write(t.grants)
    w.write(" denied ")
    w.write(t.denies)
    w.write(" manual-opens ")
    w.write(t.manualOpens)
    w.write(" gpio-errors ")
    w.write(t.gpioErrors)
    w.write(" relay-watchdog-trips ")
    w.write(t.relayWatchdogTrips)
    w.newline()
    writeHistogram("decode", t.decode, into: &w)
    writeHistogram("frame-to-decision", t.frameToDecision, into: &w)
    writeHistogram("frame-to-edge", t.frameToEdge, into: &w)
    w.write("| decoder heap fallbacks ")
    w.write(s.decoder?.arenaOverflows ?? 0)
    w.write(" (each one is an allocation outside the fixed arena)")
    w.newline()
    w.write("| console read-only ")
    w.write(c.readOnlyCommands)
    w.write(" bad-lines ")
    w.write(c.badLines)
    w.write(" throttled ")
    w.write(c.throttledLines)
    w.write(" checks-refused ")
    w.write(c.checksRefused)
    w.write(" serial-deauth ")
    w.write(c.serialDeauthentications)
    w.newline()
    if let workers = s.decoderWorkers {
      writeWorkersLine(workers, lastCrash: s.decoderLastCrash, into: &w)
    }
    let lines = ConsoleLayout.fold(&w, from: start, width: width)
    w.write("OK stats ")
    w.write(lines)
    w.write(" lines\n")
  }

  static func writeHistogram(_ name: StaticString, _ h: LatencyHistogram, into w: inout ByteWriter) {
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
}
