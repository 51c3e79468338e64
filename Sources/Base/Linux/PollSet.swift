import CLinux
import Glibc
import ScanCore

/// The loop's fixed poll table, filled anew each iteration by the participants (a class, so
/// handing it to a participant through its protocol never copies or boxes anything). Each
/// participant adds its descriptors and keeps the tokens to read `revents` after the wait.
public final class PollSet {
  /// Where one added descriptor sits.
  public struct Token: Equatable, Sendable {
    let index: Int
    public static let none = Token(index: -1)
  }

  private let entries: UnsafeMutableBufferPointer<pollfd>
  public private(set) var count = 0

  public init(capacity: Int) {
    precondition(capacity > 0)
    entries = .allocate(capacity: capacity)
    entries.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0))
  }

  deinit { entries.deallocate() }

  public var capacity: Int { entries.count }

  func reset() { count = 0 }

  /// Adds `fd` for `events`; returns `.none` when the table is full (a bug: capacity is the
  /// sum of what the participants declared).
  public func add(_ fd: Int32, events: Int16) -> Token {
    assert(count < entries.count, "poll table full: a participant added more than it declared")
    guard fd >= 0, count < entries.count else { return .none }
    entries[count] = pollfd(fd: fd, events: events, revents: 0)
    count += 1
    return Token(index: count - 1)
  }

  /// What poll reported for `token` (0 for `.none`).
  public func revents(_ token: Token) -> Int16 {
    guard token.index >= 0, token.index < count else { return 0 }
    return entries[token.index].revents
  }

  /// Waits up to `milliseconds` for any descriptor; returns how many are ready.
  func wait(milliseconds: Int) -> Int32 {
    do { return try syscall("poll", { poll(entries.baseAddress, nfds_t(count), Int32(max(0, milliseconds))) }) } catch {
      return 0  // ENOMEM and the like: the next iteration tries again
    }
  }
}

/// What a participant may ask of the loop: it runs on the loop's thread, between frames, and
/// never touches the engine itself.
public final class LoopRequests {
  public var stop = false
  public var reloadAllowList = false
  /// The door: release the strike for the exit button; lock it now (the door closed again).
  public var releaseStrikeForExit = false
  public var relockStrike = false
  /// An unlock window: renew the strike's hold (one lease), or end it.
  public var holdStrike = false
  public var endStrikeHold = false
  /// The fleet's deny-all-but-static offline policy came into force (true) or ended (false).
  public var accessStaticOnly: Bool? = nil
  /// A buzzer pattern to play (a panel's BUZ or LED command).
  public var play: BuzzerPattern? = nil
  /// Hold the buzzer sounding (true) or let it go (false) (a panel's beeper wire): patterns
  /// still play over the hold and it resumes after them.
  public var holdBuzzer: Bool? = nil
  /// A relay pulse a remote operator asked for (a signed fleet command), capped like OPEN;
  /// `openMilliseconds` nil: the configured pulse.
  public var openRequested = false
  public var openMilliseconds: Int? = nil
  /// Wants the next frame's snapshot (a fleet snapshot command): the loop captures one and
  /// hands it to the sink on its own thread, once.
  public var snapshotSink: (any SnapshotSink)? = nil
  public init() {}
}

/// Takes a captured snapshot from the loop. `deliver` runs on the loop's thread: it copies what
/// it needs into memory it owns (no allocation, no waiting) and returns; false when it cannot
/// take it now (the loop offers the next frame's).
public protocol SnapshotSink: AnyObject {
  func deliver(_ snapshot: SnapshotBuffer) -> Bool
}

/// One input of the loop: a device, a socket, a timer. The loop asks every participant for
/// its descriptors and next deadline, waits once for all of them, then services each. Adding
/// an input (a GPIO line's edge events, an MQTT socket, a panel's serial port) is a new
/// participant; the loop's body does not change.
public protocol PollParticipant: AnyObject {
  /// How many descriptors it adds at most (sizes the poll table once).
  var pollCapacity: Int { get }
  /// Adds its descriptors; returns when it next needs servicing without I/O (nil: only on I/O).
  func prepare(_ poll: PollSet, now: Instant) -> Instant?
  /// Handles what poll reported (and any deadline that passed).
  func service(_ poll: PollSet, now: Instant, requests: LoopRequests)
}

/// Milliseconds from `now` until `deadline`, rounded up (0 when it has passed).
func millisecondsUntil(_ deadline: Instant, from now: Instant) -> Int {
  deadline <= now ? 0 : Int((deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
}
