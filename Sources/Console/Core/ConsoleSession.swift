import ScanCore

/// How a console session reached the reader.
public enum ConsoleTransport: UInt8, Sendable {
  case tcp, serial
}

/// One console connection's state as the command interpreter keeps it: role, WATCH, and the
/// budgets that keep one client from flooding the loop or the audit log.
public struct ConsoleSession: Sendable {
  public var open = false
  public var generation: UInt32 = 0
  public var transport = ConsoleTransport.tcp
  public var peer = PeerKey(high: 0, low: 0)
  public var isOperator = false
  /// The name AS gave this session (records say `web:<name>`); `actorCount` 0: none.
  public var actor = InlineArray<32, UInt8>(repeating: 0)
  public var actorCount = 0
  /// An operator by its transport (`ConsoleCommands.grantOperator`), not yet recorded.
  var grantToRecord = false
  /// A TLS client whose certificate the console's client CA signed (`ConsoleCommands.certify`):
  /// like a Unix socket's peer, it may name the person it acts for (AS).
  public var certified = false
  public var watching = false
  public var lastActivity = Instant(nanoseconds: 0)
  /// Line budget (token bucket, whole lines × 1000).
  var lineTokens = 0
  var checkTokens = 0
  var refilledAt = Instant(nanoseconds: 0)
  /// Whether this session was told it is being throttled (told once per burst).
  var throttled = false

  public init() {}
}

/// What the interpreter counted rather than recorded one by one.
public struct ConsoleCounters: Equatable, Sendable {
  /// Read-only commands (HELP, STATUS, ...): counted, not each recorded.
  public var readOnlyCommands: UInt64 = 0
  /// Lines that did not parse, or were refused for want of AUTH.
  public var badLines: UInt64 = 0
  /// Lines dropped because a session exceeded its line budget.
  public var throttledLines: UInt64 = 0
  public var checksRefused: UInt64 = 0
  public var serialDeauthentications: UInt64 = 0
  public init() {}
}

extension ConsoleSession {
  /// Refills the budgets for the time since the last refill (integer arithmetic, no drift).
  mutating func refill(at now: Instant, limits: ConsoleLimits) {
    let elapsed = now.milliseconds(since: refilledAt)
    guard elapsed > 0 else { return }
    refilledAt = now
    lineTokens = min(limits.lineBurst * 1000, lineTokens + elapsed * limits.linesPerSecond)
    checkTokens = min(limits.checkBurst * 60_000, checkTokens + elapsed * limits.checksPerMinute)
  }

  /// Starts a session with full budgets.
  static func opened(
    peer: PeerKey, transport: ConsoleTransport, generation: UInt32, at now: Instant,
    limits: ConsoleLimits
  ) -> ConsoleSession {
    var s = ConsoleSession()
    s.open = true
    s.peer = peer
    s.transport = transport
    s.generation = generation
    s.lastActivity = now
    s.refilledAt = now
    s.lineTokens = limits.lineBurst * 1000
    s.checkTokens = limits.checkBurst * 60_000
    return s
  }
}
