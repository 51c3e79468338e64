/// Whether an event line may show the payload itself. A static payload is a working credential:
/// it is shown only to an operator, or in the journal when `log.raw_payloads` says so; everyone
/// else sees the label and the payload's keyed tag (`PayloadTagger`), never a digest of it: an
/// unkeyed digest would let anyone test guessed payloads offline.
public enum PayloadVisibility: Sendable {
  case shown, hidden
}

/// Event lines for logs, the demo and the console. Payloads and labels are always
/// percent-escaped, so a scanned code never puts a control character on a terminal.
public enum EventText {
  /// Writes `#12 +3.456s decision granted qr label=alice payload=ALICE-0001 ...` (no newline)
  /// into `w` without allocating; with `.hidden` the `payload=` field is left out.
  public static func write(
    _ e: ScanEvent, since start: Instant, payloads: PayloadVisibility, into w: inout ByteWriter
  ) {
    let t = e.monotonic.microseconds(since: start)
    w.write("#")
    w.write(e.sequence)
    w.write(" +")
    w.writeFixed(t, scale: 1_000_000, decimals: 3)
    w.write("s ")
    w.write(e.kind.name)
    switch e.kind {
    case .decision:
      writeDecision(e, payloads: payloads, into: &w)
    case .left:
      writeTag(e, into: &w)
    case .edge:
      w.write(" ")
      w.write(EdgeCode.lineName(e.code))
      w.write(e.code & 1 == 1 ? " active" : " inactive")
    case .fault, .state:
      w.write(" ")
      if let code = FaultCode(rawValue: e.code) { w.write(code.name) } else { w.write("code-"); w.write(e.code) }
    case .manualOpen:
      w.write(" relay ")
      w.write(e.code)
      w.write("ms")
      if e.labelCount > 0 {
        w.write(" by ")
        e.withLabel { w.writeEscaped($0) }
      }
    case .command, .authFailure:
      w.write(" ")
      e.withPayload { w.writeText($0) }
    case .recordsLost:
      w.write(" ")
      w.write(e.code)
    case .doorUnlocked, .doorOpened, .doorClosed, .doorHeldOpen, .doorForced, .doorLocked, .exitRequest, .tamper, .unlockWindow:
      DoorText.writeDetail(e.kind, code: e.code, into: &w)
    case .turnstileUnlocked, .passage, .grantedNotPassed, .turnstileForced, .turnstileLocked, .passbackForgiven,
      .occupancyReset, .fireAlarm, .lockdown:
      PassageText.writeDetail(e, into: &w)
    case .panelLink, .panelSecure, .panelCard, .panelCommand, .panelKey:
      w.write(" ")
      w.write(e.code)
      if e.payloadCount > 0 {
        w.write(" ")
        e.withPayload { w.writeEscaped($0) }
      }
    }
  }

  /// A decision's fields: verdict, format, view, label, the payload when `.shown`, its tag,
  /// decode and edge times, and which rule decided.
  static func writeDecision(_ e: ScanEvent, payloads: PayloadVisibility, into w: inout ByteWriter) {
    w.write(" ")
    w.write(e.verdict.name)
    w.write(" ")
    w.write(e.format.name)
    if e.variant != .upright {
      w.write(" [")
      w.write(e.variant.name)
      w.write("]")
    }
    if e.labelCount > 0 {
      w.write(" label=")
      e.withLabel { w.writeEscaped($0) }
    }
    if payloads == .shown {
      w.write(" payload=")
      e.withPayload { w.writeEscaped($0) }
      if e.payloadTruncated { w.write("...") }
    }
    writeTag(e, into: &w)
    w.write(" decode=")
    w.writeFixed(UInt64(e.decodeMicroseconds), scale: 1000, decimals: 2)
    w.write("ms")
    if e.edgeMicroseconds > 0 {
      w.write(" edge=")
      w.writeFixed(UInt64(e.edgeMicroseconds), scale: 1000, decimals: 2)
      w.write("ms")
    }
    // Which rule decided: the allow-list or a signed credential.
    if let source = DecisionSource(rawValue: UInt8(truncatingIfNeeded: e.code)), source != .none {
      w.write(" by=")
      w.write(source.name)
    }
  }

  /// ` tag=<16 hex digits>` when the event carries a tag.
  static func writeTag(_ e: ScanEvent, into w: inout ByteWriter) {
    guard e.tag != .zero else { return }
    w.write(" tag=")
    w.writeHex(e.tag, bytes: PayloadTag.shownBytes)
  }

  /// The same line as a String (allocates: for the event printer thread and tests).
  public static func line(_ e: ScanEvent, since start: Instant, payloads: PayloadVisibility) -> String {
    withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      write(e, since: start, payloads: payloads, into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
  }

  /// The first 8 bytes of a digest in hex.
  public static func digestPrefix(_ d: Digest) -> String {
    withUnsafeTemporaryAllocation(byteCount: 16, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.writeHex(d, bytes: 8)
      return String(decoding: w.written, as: UTF8.self)
    }
  }
}
