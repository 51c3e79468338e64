import ScanCore

/// Checks an operator secret without ever holding it in clear after load.
public protocol OperatorSecretVerifier: AnyObject {
  /// Why no secret is available (nil when one is loaded).
  var problem: String? { get }
  /// Compares `candidate` with the secret in constant time.
  func matches(_ candidate: UnsafeRawBufferPointer) -> Bool
}

/// The console's command interpreter (docs/console.md): parses a line, applies the roles and
/// budgets, runs the command against a `ConsoleHost` and encodes the reply. Pure: no sockets,
/// no real time, so every command and every refusal is unit-tested on a manual clock.
///
/// Security rules kept here, in one place:
/// - an unauthenticated session sees state and counts, never a payload, a frame or a log body;
/// - no line is ever recorded as typed: commands are recorded by verb (and numeric argument),
///   a line that fails to parse by nothing but a counter, so a mistyped AUTH cannot leak;
/// - read-only commands are counted, not recorded; every session has a line budget, and CHECK
///   a slower one, so no client can flood the event ring or guess passes quickly.
public final class ConsoleCommands<Clock: MonotonicClock> {
  public let limits: ConsoleLimits
  public let clock: Clock
  public private(set) var counters = ConsoleCounters()
  public var gate: AuthGate
  private let secret: any OperatorSecretVerifier
  let sessions: UnsafeMutableBufferPointer<ConsoleSession>
  private let argument: UnsafeMutableRawBufferPointer
  private var generations: UInt32 = 0

  public static var argumentBytesMax: Int { LineFramer.lineBytesMax }

  public init(
    slots: Int, limits: ConsoleLimits, auth: AuthGate.Settings, secret: any OperatorSecretVerifier,
    clock: Clock
  ) {
    precondition(slots > 0)
    self.limits = limits
    self.clock = clock
    self.secret = secret
    gate = AuthGate(settings: auth)
    sessions = .allocate(capacity: slots)
    sessions.initialize(repeating: ConsoleSession())
    argument = .allocate(byteCount: Self.argumentBytesMax, alignment: 8)
  }

  deinit {
    sessions.deallocate()
    argument.deallocate()
  }

  public var slotCount: Int { sessions.count }
  public subscript(slot: Int) -> ConsoleSession { sessions[slot] }
  public var secretProblem: String? { secret.problem }

  // MARK: - Session lifecycle (called by the transports)

  /// A client connected in `slot`.
  public func opened(_ slot: Int, peer: PeerKey, transport: ConsoleTransport) {
    generations &+= 1
    sessions[slot] = .opened(peer: peer, transport: transport, generation: generations, at: clock.now(), limits: limits)
  }

  /// The session in `slot` is an operator without AUTH: its transport vouched for who it is (a
  /// Unix socket peer the configuration names). Recorded like an AUTH, with who, before its
  /// first command.
  public func grantOperator(_ slot: Int) {
    sessions[slot].isOperator = true
    sessions[slot].grantToRecord = true
  }

  /// The session in `slot` came over TLS with a client certificate the console's client CA
  /// signed: its host is known as a Unix socket's user is, so it may use AS (the web page on
  /// another host). Its role is untouched: an operator still AUTHs.
  public func certify(_ slot: Int) { sessions[slot].certified = true }

  /// The client in `slot` left (or was dropped, or the serial line hung up): its role ends.
  public func closed(_ slot: Int) { sessions[slot] = ConsoleSession() }

  /// The ticket of the session in `slot` now.
  public func ticket(_ slot: Int) -> SessionTicket { SessionTicket(slot: slot, generation: sessions[slot].generation) }

  /// Whether `ticket` still names the session in its slot.
  public func isCurrent(_ ticket: SessionTicket) -> Bool {
    ticket.slot >= 0 && ticket.slot < sessions.count && sessions[ticket.slot].open
      && sessions[ticket.slot].generation == ticket.generation
  }

  /// De-authenticates idle serial operators (someone else may pick up the cable). Returns the
  /// slots it changed through `body`, so the transport can tell the terminal.
  public func expireIdleOperators(_ body: (Int) -> Void) {
    guard limits.serialOperatorIdleSeconds > 0 else { return }
    let now = clock.now()
    for i in 0..<sessions.count where sessions[i].open && sessions[i].isOperator && sessions[i].transport == .serial {
      if now.milliseconds(since: sessions[i].lastActivity) >= limits.serialOperatorIdleSeconds * 1000 {
        sessions[i].isOperator = false
        counters.serialDeauthentications &+= 1
        body(i)
      }
    }
  }

  /// How each session sees payloads in event lines.
  /// A session named by AS (the web page) never sees a payload, whatever its role.
  public func payloadVisibility(_ slot: Int) -> PayloadVisibility {
    sessions[slot].isOperator && sessions[slot].actorCount == 0 ? .shown : .hidden
  }

  // MARK: - Lines

  /// Runs one line from `slot` (nil: a line longer than the framer's limit).
  public func handle<Host: ConsoleHost & ~Copyable>(
    _ slot: Int, line: UnsafeRawBufferPointer?, host: inout Host, output: some ConsoleOutput
  ) {
    guard sessions[slot].open else { return }
    let now = clock.now()
    sessions[slot].lastActivity = now
    guard admitLine(slot, at: now, output: output) else { return }
    if sessions[slot].grantToRecord {
      sessions[slot].grantToRecord = false
      withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        w.write("AUTH by the Unix socket's peer, ")
        Self.writePeer(sessions[slot].peer, into: &w)
        _ = host.record(.command, code: UInt16(ConsoleVerb.auth.rawValue), text: w.written)
      }
    }
    guard let line else {
      counters.badLines &+= 1
      reply(output, slot, error: .lineTooLong)
      return
    }
    var argumentCount = 0
    guard let parsed = ConsoleRequest.parse(line, argument: argument, argumentCount: &argumentCount) else { return }
    switch parsed {
    case .failure(let error):
      counters.badLines &+= 1
      reply(output, slot, error: error)
    case .success(let request):
      if request.needsOperator && !sessions[slot].isOperator {
        counters.badLines &+= 1
        reply(output, slot, error: .needsAuth)
        return
      }
      let arg = UnsafeRawBufferPointer(rebasing: argument[0..<argumentCount])
      let sequence = recordIfAudited(request, slot: slot, host: &host)
      run(request, argument: arg, sequence: sequence, slot: slot, host: &host, output: output)
      argument.initializeMemory(as: UInt8.self, repeating: 0)  // no secret left behind
    }
  }

  /// Spends one line of the session's budget; false (and one ERR 429 per burst) when spent.
  private func admitLine(_ slot: Int, at now: Instant, output: some ConsoleOutput) -> Bool {
    sessions[slot].refill(at: now, limits: limits)
    if sessions[slot].lineTokens >= 1000 {
      sessions[slot].lineTokens -= 1000
      sessions[slot].throttled = false
      return true
    }
    counters.throttledLines &+= 1
    if !sessions[slot].throttled {
      sessions[slot].throttled = true
      reply(output, slot, error: .throttled)
    }
    return false
  }

  /// Records what an operator did (verb and number only) and every AUTH attempt's outcome is
  /// recorded where it is decided; read-only commands are only counted.
  private func recordIfAudited<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: inout Host
  ) -> UInt64 {
    guard sessions[slot].isOperator, request.verb.isAuditedForOperator else {
      counters.readOnlyCommands &+= 1
      return 0
    }
    return withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write(request.verb.name)
      if let n = request.number {
        w.write(" ")
        w.write(n)
      }
      if request.flag {
        w.write(request.verb == .watch ? " ON" : " TEXT")
      }
      if sessions[slot].actorCount > 0 {
        // The web admin page's person (AS), with the connection's own peer.
        w.write(" by ")
        Self.writeWho(sessions[slot], into: &w)
      }
      return host.record(.command, code: UInt16(request.verb.rawValue), text: w.written)
    }
  }

  private func reply(_ output: some ConsoleOutput, _ slot: Int, error: ConsoleError) {
    output.send(slot) { w in
      w.write("ERR ")
      w.write(error.code)
      w.write(" ")
      w.write(error.message)
      w.newline()
    }
  }

  // MARK: - Commands

  /// Runs one admitted request: read-only reports, session commands and CLOCK, LOCKDOWN and
  /// TURNSTILE here; the operator's actions in `runOperator`.
  private func run<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, sequence: UInt64, slot: Int,
    host: inout Host, output: some ConsoleOutput
  ) {
    switch request.verb {
    case .help, .version, .status, .door, .stats, .last: report(request, slot: slot, host: host, output: output)
    case .lockdown, .turnstile:
      if request.action == .show {
        showLine(request, slot: slot, host: host, output: output)
      } else {
        act(request, slot: slot, host: &host, output: output)
      }
    case .clock: runClock(request, slot: slot, host: &host, output: output)
    case .watch:
      sessions[slot].watching = request.flag
      let shown = payloadVisibility(slot) == .shown
      output.send(slot) { w in
        w.write(request.flag ? "OK watching" : "OK not watching")
        if request.flag && !shown { w.write(" (payloads hidden until AUTH)") }
        w.newline()
      }
    case .check: check(argument, slot: slot, host: host, output: output)
    case .log: startLog(request, slot: slot, host: &host, output: output)
    case .auth: authenticate(argument, slot: slot, host: &host, output: output)
    case .quit:
      output.send(slot) { $0.write("OK bye\n") }
      output.closeWhenFlushed(slot)  // closes at once when the reply is already out
    case .as: nameSession(argument, asOperator: request.flag, slot: slot, host: &host, output: output)
    case .open, .reload, .selftest, .enrol, .remove, .list, .snapshot, .importList, .backup, .pin, .passes:
      runOperator(request, argument: argument, sequence: sequence, slot: slot, host: &host, output: output)
    }
  }

  /// HELP, VERSION, STATUS, DOOR, STATS and LAST: replies from the host's state, changing nothing.
  private func report<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: borrowing Host, output: some ConsoleOutput
  ) {
    switch request.verb {
    case .help:
      output.send(slot) { ConsoleText.writeHelp(operator: sessions[slot].isOperator, verb: request.helpVerb, into: &$0) }
    case .version: output.send(slot) { ConsoleText.writeVersion(host.consoleStatus(), into: &$0) }
    case .status: output.send(slot) { ConsoleText.writeStatus(host.consoleStatus(), into: &$0) }
    case .door: output.send(slot) { ConsoleText.writeDoor(host.consoleStatus().door, into: &$0) }
    case .stats: output.send(slot) { ConsoleText.writeStats(host.consoleStatus(), console: counters, into: &$0) }
    case .last: writeLast(request, slot: slot, host: host, output: output)
    case .watch, .check, .log, .auth, .quit, .open, .reload, .selftest, .snapshot, .clock, .lockdown, .turnstile, .enrol,
      .remove, .list, .as, .importList, .backup, .pin, .passes:
      // `run` dispatches these itself; a verb routed here by mistake is refused, never run.
      output.send(slot) { $0.write("ERR 500 not a report\n") }
    }
  }

  /// Bare LOCKDOWN or TURNSTILE: the emergency or turnstile line, or 404 when there is none.
  private func showLine<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: borrowing Host, output: some ConsoleOutput
  ) {
    let status = host.consoleStatus()
    let line = status.section(request.verb == .lockdown ? "emergency" : "turnstile")
    output.send(slot) { w in
      guard let line else {
        w.write(request.verb == .lockdown ? "ERR 404 no emergency inputs or state configured\n" : "ERR 404 no turnstile configured\n")
        return
      }
      w.write("| ")
      ConsoleText.writeSanitized(line, into: &w)
      w.newline()
      w.write(request.verb == .lockdown ? "OK lockdown\n" : "OK turnstile\n")
    }
  }

  /// CLOCK: the clock line (503 when the reader keeps no floor); CLOCK FLOOR RESET: the reset.
  private func runClock<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    if request.flag {
      resetClockFloor(slot: slot, host: &host, output: output)
    } else if let clock = host.clockReport() {
      output.send(slot) { w in
        ConsoleText.writeClock(clock, into: &w)
        w.write("OK clock\n")
      }
    } else {
      output.send(slot) { $0.write("ERR 503 this reader keeps no clock floor\n") }
    }
  }

  private func writeLast<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: borrowing Host, output: some ConsoleOutput
  ) {
    let visibility = payloadVisibility(slot)
    output.send(slot) { w in
      let n = host.writeLastDecisions(min(request.number ?? 5, 50), payloads: visibility, into: &w)
      w.write("OK last ")
      w.write(n)
      w.write(" decisions\n")
    }
  }

  private func startLog<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    var query = request.log
    query.payloads = payloadVisibility(slot) == .shown
    switch host.startLog(query, for: ticket(slot)) {
    case .started: break  // the host replies when the records are read
    case .busy: output.send(slot) { $0.write("ERR 503 the log is being read; try again\n") }
    case .notConfigured: output.send(slot) { $0.write("ERR 503 the audit log is not configured\n") }
    }
  }

  private func check<Host: ConsoleHost & ~Copyable>(
    _ payload: UnsafeRawBufferPointer, slot: Int, host: borrowing Host, output: some ConsoleOutput
  ) {
    guard sessions[slot].checkTokens >= 60_000 else {
      counters.checksRefused &+= 1
      output.send(slot) { $0.write("ERR 429 CHECK is rate-limited; try again later\n") }
      return
    }
    sessions[slot].checkTokens -= 60_000
    withUnsafeTemporaryAllocation(byteCount: ScanEvent.labelBytesMax, alignment: 1) { label in
      let (verdict, labelCount) = host.check(payload, label: label)
      output.send(slot) { w in
        w.write("OK ")
        w.write(verdict.name)
        if labelCount > 0 {
          w.write(" label=")
          w.writeEscaped(UnsafeRawBufferPointer(rebasing: label[0..<labelCount]))
        }
        w.newline()
      }
    }
  }

  private func authenticate<Host: ConsoleHost & ~Copyable>(
    _ candidate: UnsafeRawBufferPointer, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    let peer = sessions[slot].peer
    let now = clock.now()
    switch gate.admit(peer, at: now) {
    case .lockedOut(let ms):
      output.send(slot) { ConsoleText.writeRetry("ERR 423 locked out after too many failures; retry in ", ms, into: &$0) }
      return
    case .backingOff(let ms):
      output.send(slot) { ConsoleText.writeRetry("ERR 429 too soon after a failed AUTH; retry in ", ms, into: &$0) }
      return
    case .allowed:
      break
    }
    if secret.matches(candidate) {
      gate.recordSuccess(peer)
      sessions[slot].isOperator = true
      let ok: StaticString = "AUTH ok"
      host.record(
        .command, code: UInt16(ConsoleVerb.auth.rawValue),
        text: UnsafeRawBufferPointer(start: ok.utf8Start, count: ok.utf8CodeUnitCount))
      output.send(slot) { $0.write("OK operator\n") }
      return
    }
    let failures = gate.recordFailure(peer, at: now)
    let none: StaticString = ""
    host.record(.authFailure, code: UInt16(clamping: failures), text: UnsafeRawBufferPointer(start: none.utf8Start, count: 0))
    let noSecret = secret.problem != nil
    output.send(slot) { $0.write(noSecret ? "ERR 403 no operator secret is configured\n" : "ERR 403 wrong secret\n") }
  }
}
