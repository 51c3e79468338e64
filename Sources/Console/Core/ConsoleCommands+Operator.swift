import ScanCore

// MARK: - Operator actions

/// The commands that act on the reader or change what it keeps (OPEN, RELOAD, SELFTEST, LIST,
/// SNAPSHOT, ENROL, REMOVE, LOCKDOWN and TURNSTILE actions, CLOCK FLOOR RESET), and how their
/// records name who asked.
extension ConsoleCommands {
  /// Runs OPEN, RELOAD, SELFTEST, ENROL, REMOVE, LIST and SNAPSHOT (operator; AUTH was checked).
  func runOperator<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, sequence: UInt64, slot: Int,
    host: inout Host, output: some ConsoleOutput
  ) {
    switch request.verb {
    case .open: open(request, sequence: sequence, slot: slot, host: &host, output: output)
    case .reload:
      let outcome = host.reload()
      output.send(slot) { ConsoleText.writeReload(outcome, sequence: sequence, into: &$0) }
    case .selftest:
      host.selfTest()
      output.send(slot) { w in
        w.write("OK #")
        w.write(sequence)
        w.write(" selftest: grant, deny and fault patterns, relay 200 ms\n")
      }
    case .enrol, .remove: changeAllowList(request, argument: argument, slot: slot, host: &host, output: output)
    case .importList: importPeople(request, argument: argument, slot: slot, host: &host, output: output)
    case .backup: backup(request, argument: argument, slot: slot, host: &host, output: output)
    case .pin: setPin(request, argument: argument, slot: slot, host: &host, output: output)
    case .passes:
      output.send(slot) { w in
        let (shown, total) = host.writePasses(min(request.number ?? 50, 200), into: &w)
        w.write("OK passes ")
        w.write(shown)
        w.write(" of ")
        w.write(total)
        w.newline()
      }
    case .list:
      output.send(slot) { w in
        let (shown, total, next) = host.writeEntries(request.entries, into: &w)
        w.write("OK list ")
        w.write(shown)
        w.write(" of ")
        w.write(total)
        w.write(" entries")
        if let next {
          w.write(" next from=")
          w.write(next)
        }
        w.newline()
      }
    case .snapshot:
      // A session named by AS (the web page) gets the picture with every code blanked and no
      // payload in its labels, as it gets no payload anywhere else.
      switch host.startSnapshot(for: ticket(slot), text: request.flag, redacted: payloadVisibility(slot) == .hidden) {
      case .started: break  // the host replies when the frame is in
      case .busy: output.send(slot) { $0.write("ERR 503 a snapshot is being taken; try again\n") }
      case .noCamera(let state):
        output.send(slot) { w in
          w.write("ERR 503 no camera frames (camera ")
          w.write(state)
          w.write(")\n")
        }
      }
    case .help, .version, .status, .stats, .last, .watch, .check, .log, .auth, .quit, .door, .clock, .lockdown, .turnstile, .as:
      // `run` dispatches these itself; a verb routed here by mistake is refused, never run.
      output.send(slot) { $0.write("ERR 500 not an operator action\n") }
    }
  }

  /// OPEN (operator): pulses the relay, or says why it rests.
  private func open<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, sequence: UInt64, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    switch host.open(milliseconds: request.number) {
    case .pulsed(let ms):
      output.send(slot) { w in
        w.write("OK #")
        w.write(sequence)
        w.write(" open ")
        w.write(ms)
        w.write(" ms\n")
      }
    case .resting(let ms):
      output.send(slot) { w in
        w.write("ERR 409 the relay is resting after its maximum on-time; no pulse for ")
        w.write((ms + 999) / 1000)
        w.write(" s\n")
      }
    }
  }

  /// CLOCK FLOOR RESET (operator): the floor becomes the clock. Recorded once done, with the
  /// floor before and after and who asked (`CLOCK FLOOR RESET <before>-><after> by <peer>`, Unix
  /// seconds: the record's 64 bytes), and answered with both.
  func resetClockFloor<Host: ConsoleHost & ~Copyable>(slot: Int, host: inout Host, output: some ConsoleOutput) {
    guard let (before, after) = host.resetClockFloor() else {
      output.send(slot) { $0.write("ERR 503 this reader keeps no clock floor\n") }
      return
    }
    let peer = self[slot]
    let sequence = withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write("CLOCK FLOOR RESET ")
      w.write(before)
      w.write("->")
      w.write(after)
      w.write(" by ")
      Self.writeWho(peer, into: &w)
      return host.record(.command, code: UInt16(ConsoleVerb.clock.rawValue), text: w.written)
    }
    let clock = host.clockReport()
    output.send(slot) { w in
      // The warning is a body line: the status line stays within 80 columns.
      if let clock, !clock.synchronized { w.write("| the clock is not synchronised: check it is right\n") }
      w.write("OK #")
      w.write(sequence)
      w.write(" clock floor reset from ")
      w.write(RFC3339.format(before))
      w.write(" to ")
      w.write(RFC3339.format(after))
      w.newline()
    }
  }

  /// LOCKDOWN ON/OFF, TURNSTILE FORGIVE/RESET (operator): carried out by its owner, then
  /// recorded with who asked (`LOCKDOWN ON by uid 0`) when it changed something.
  func act<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    let peer = self[slot]
    let outcome = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      Self.writeWho(peer, into: &w)
      return host.perform(request.action, who: w.written)
    }
    guard let outcome else {
      output.send(slot) {
        $0.write(request.verb == .lockdown ? "ERR 404 no lockdown on this reader\n" : "ERR 404 no turnstile configured\n")
      }
      return
    }
    var sequence: UInt64 = 0
    switch outcome {
    case .latched, .cleared, .forgiven, .occupancyReset:
      sequence = withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        switch request.action {
        case .lockdownOn: w.write("LOCKDOWN ON")
        case .lockdownOff: w.write("LOCKDOWN OFF")
        case .forgiveLast: w.write("TURNSTILE FORGIVE LAST")
        case .forgiveTag(let tag):
          w.write("TURNSTILE FORGIVE ")
          withUnsafeBytes(of: tag.bigEndian) { w.writeHex($0) }
        case .resetOccupancy: w.write("TURNSTILE RESET")
        case .show: break
        }
        w.write(" by ")
        Self.writeWho(peer, into: &w)
        return host.record(.command, code: UInt16(request.verb.rawValue), text: w.written)
      }
    default: break
    }
    output.send(slot) { w in
      switch outcome {
      case .latched, .cleared, .forgiven:
        w.write("OK #")
        w.write(sequence)
        w.write(outcome == .latched ? " lockdown on" : outcome == .cleared ? " lockdown off" : " forgiven")
      case .occupancyReset(let before):
        w.write("OK #")
        w.write(sequence)
        w.write(" occupancy reset (was ")
        w.write(before)
        w.write(")")
      case .alreadyLatched(let by):
        w.write("OK lockdown already on (by ")
        w.write(by.name)
        w.write(")")
      case .notLatched: w.write("OK no lockdown in force")
      case .heldBy(let by):
        w.write("ERR 409 the lockdown was latched by ")
        w.write(by.name)
        w.write(": only it lifts it")
      case .unknownCredential: w.write("ERR 404 no anti-passback record for that credential")
      case .notDurable: w.write("ERR 503 could not be written durably: nothing changed")
      }
      w.newline()
    }
  }

  /// ENROL CANDIDATES lists; ENROL LAST / <tag> and REMOVE (operator): the host edits the file,
  /// reloads and records who did it.
  private func changeAllowList<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    if request.verb == .enrol && request.flag {
      // It shows payloads, as LAST does for an operator: recorded as typed.
      let listing = StaticString("ENROL CANDIDATES")
      _ = host.record(
        .command, code: UInt16(ConsoleVerb.enrol.rawValue), text: UnsafeRawBufferPointer(start: listing.utf8Start, count: listing.utf8CodeUnitCount))
      output.send(slot) { w in
        let n = host.writeEnrolCandidates(payloads: payloadVisibility(slot), into: &w)
        w.write("OK ")
        w.write(n)
        w.write(" candidates (newest first; ENROL <tag> label=<label> puts one on the list)")
        w.newline()
      }
      return
    }
    let peer = self[slot]
    let label = UnsafeRawBufferPointer(rebasing: argument[0..<request.labelCount])
    let schedule = UnsafeRawBufferPointer(rebasing: argument[request.labelCount...])
    let change = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      Self.writeWho(peer, into: &w)
      return request.verb == .enrol
        ? host.enrol(tag: request.enrolTag, label: label, schedule: schedule, who: w.written)
        : host.removeEntry(label: label, who: w.written)
    }
    output.send(slot) { w in
      switch change {
      case .enrolled(let tag, let version, let sequence), .removed(let tag, let version, let sequence):
        w.write("OK #")
        w.write(sequence)
        w.write(request.verb == .enrol ? " enrolled " : " removed ")
        w.write(bytes: label)
        w.write(" tag=")
        w.write(tag)
        w.write(" allow-list version ")
        w.write(version)
      case .refused(let code, let reason): ConsoleText.writeError(code, reason, into: &w)
      case .pinChanged: w.write("ERR 500 not an enrolment")
      }
      w.newline()
    }
  }

  /// Who a session is, as records name it: its peer, after the name it gave itself with AS
  /// (`web:alice (uid 998)`).
  static func writeWho(_ session: ConsoleSession, into w: inout ByteWriter) {
    guard session.actorCount > 0 else {
      writePeer(session.peer, into: &w)
      return
    }
    w.write("web:")
    withUnsafeBytes(of: session.actor) { w.write(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<session.actorCount])) }
    w.write(" (")
    writePeer(session.peer, into: &w)
    w.write(")")
  }

  /// Who a session is, as records name it: `serial`, `uid <n>` (a local user), `local` (a local
  /// client whose owner is unknown), an IPv4 address, or an IPv6 /64.
  static func writePeer(_ peer: PeerKey, into w: inout ByteWriter) {
    if peer == .serial {
      w.write("serial")
    } else if let uid = peer.localUID {
      w.write("uid ")
      w.write(uid)
    } else if peer == .loopback {
      w.write("local")
    } else if peer.high == 0 && peer.low >> 32 == 0xFFFF {
      for k in 0..<4 {
        if k > 0 { w.write(".") }
        w.write(UInt8(truncatingIfNeeded: peer.low >> (24 - 8 * UInt64(k))))
      }
    } else {
      withUnsafeBytes(of: peer.high.bigEndian) { bytes in
        for k in 0..<4 {
          if k > 0 { w.write(":") }
          w.writeHex(UnsafeRawBufferPointer(rebasing: bytes[(2 * k)..<(2 * k + 2)]))
        }
      }
      w.write("::/64")
    }
  }
}
