import ScanCore
import ScanPlatform

/// What a participant may ask of the loop: it runs on the loop's thread, between frames, and
/// never touches the engine itself. Each case names what the loop or the engine does for it
/// (`RunLoop.apply`, one switch); a domain that needs something new adds a case here and its
/// line in that switch, never a branch in the loop's body. Payloads are values or one class
/// reference: making or posting a request never allocates.
public enum LoopRequest {
  /// Stop after this iteration (SIGTERM, SIGINT).
  case stop
  /// A relay pulse a remote operator asked for (a signed fleet command), capped like OPEN;
  /// nil: the configured pulse. `by` says who in the door's events and the audit log.
  case open(milliseconds: Int?, by: UnlockReason = .fleet)
  /// Reload the allow-list and the credential files (SIGHUP, a file written, a fleet bundle).
  case reloadAllowList
  /// The door: release the strike for the exit button; lock it now (the door closed again).
  case releaseStrikeForExit
  case relockStrike
  /// An unlock window: renew the strike's hold (one lease), or end it.
  case holdStrike
  case endStrikeHold
  /// The fire panel's release began (true) or ended: every strike held released, past its cap.
  case fireRelease(Bool)
  /// A lockdown came into force (true: only credentials marked for it grant) or was lifted.
  case lockdown(Bool)
  /// The fleet's deny-all-but-static offline policy came into force (true) or ended (false).
  case accessStaticOnly(Bool)
  /// The grant `id` waiting for its second factor (a PIN) ends with `verdict`.
  case secondFactor(id: UInt64, verdict: Verdict)
  /// A buzzer pattern to play (a panel's BUZ or LED command).
  case play(BuzzerPattern)
  /// Hold the buzzer sounding (true) or let it go (false) (a panel's beeper wire): patterns
  /// still play over the hold and it resumes after them.
  case holdBuzzer(Bool)
  /// Capture the next frame's snapshot and hand it to the sink on the loop's thread, once.
  case snapshot(any SnapshotSink)

  /// A request's kind. Their order is the order requests apply in within an iteration, whoever
  /// posted first (participants are serviced in the order they were registered): a stop first,
  /// an OPEN before the door's exit release and relock, those before an unlock window's hold and
  /// its end, a pattern before the buzzer's hold. A new kind goes where it must apply.
  public enum Kind: Int, CaseIterable, Sendable {
    case stop, open, reloadAllowList, releaseStrikeForExit, relockStrike, holdStrike, endStrikeHold, fireRelease
    case lockdown, accessStaticOnly, secondFactor, play, holdBuzzer, snapshot
  }

  public var kind: Kind {
    switch self {
    case .stop: .stop
    case .open: .open
    case .reloadAllowList: .reloadAllowList
    case .releaseStrikeForExit: .releaseStrikeForExit
    case .relockStrike: .relockStrike
    case .holdStrike: .holdStrike
    case .endStrikeHold: .endStrikeHold
    case .fireRelease: .fireRelease
    case .lockdown: .lockdown
    case .accessStaticOnly: .accessStaticOnly
    case .secondFactor: .secondFactor
    case .play: .play
    case .holdBuzzer: .holdBuzzer
    case .snapshot: .snapshot
    }
  }
}

/// The loop's request queue: fixed storage, filled by the participants while they are serviced
/// and drained by the loop after them, every iteration. Nothing allocates after `init`.
///
/// - Order: pending requests are kept in `LoopRequest.Kind` order; `next()` takes them in it.
/// - Coalescing: a request of a kind already pending replaces it (the later value wins), so a
///   relock or a reload asked twice in one iteration happens once, and `coalesced` counts it.
/// - Full: a request that finds no room is refused, never dropped silently: `post` returns
///   false and `refused` counts it. Coalescing keeps at most one request per kind pending, so a
///   queue of the default capacity (one slot per kind; the loop's) is never full.
public final class LoopRequests {
  private var pending: [LoopRequest?]
  public private(set) var count = 0
  /// Requests that replaced a pending one of their kind.
  public private(set) var coalesced: UInt64 = 0
  /// Requests refused because the queue was full.
  public private(set) var refused: UInt64 = 0

  public init(capacity: Int = LoopRequest.Kind.allCases.count) {
    precondition(capacity > 0)
    pending = Array(repeating: nil, count: capacity)
  }

  public var capacity: Int { pending.count }

  /// Adds `request` for the loop (replacing a pending one of its kind); false when it was
  /// refused because the queue is full.
  @discardableResult
  public func post(_ request: LoopRequest) -> Bool {
    let kind = request.kind
    var at = 0
    while at < count, let k = pending[at]?.kind, k.rawValue < kind.rawValue { at += 1 }
    if at < count, pending[at]?.kind == kind {
      pending[at] = request
      coalesced &+= 1
      return true
    }
    guard count < pending.count else {
      refused &+= 1
      return false
    }
    // Element by element: `swapAt` allocates a temporary in a debug build.
    var i = count
    while i > at {
      pending[i] = pending[i - 1]
      i -= 1
    }
    pending[at] = request
    count += 1
    return true
  }

  /// Takes the first pending request (nil: none is left).
  public func next() -> LoopRequest? {
    guard count > 0 else { return nil }
    let first = pending[0]
    for i in 1..<count { pending[i - 1] = pending[i] }
    count -= 1
    pending[count] = nil
    return first
  }
}

/// Takes a captured snapshot from the loop. `deliver` runs on the loop's thread: it copies what
/// it needs into memory it owns (no allocation, no waiting) and returns; false when it cannot
/// take it now (the loop offers the next frame's).
public protocol SnapshotSink: AnyObject {
  func deliver(_ snapshot: SnapshotBuffer) -> Bool
}
