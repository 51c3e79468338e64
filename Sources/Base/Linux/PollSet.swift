import CLinux
import Glibc
import ScanConsole
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

  public func reset() { count = 0 }

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
  public func wait(milliseconds: Int) -> Int32 {
    do { return try syscall("poll", { poll(entries.baseAddress, nfds_t(count), Int32(max(0, milliseconds))) }) } catch {
      return 0  // ENOMEM and the like: the next iteration tries again
    }
  }
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
  /// Handles what poll reported (and any deadline that passed); asks the loop for what it needs
  /// by posting to `requests`.
  func service(_ poll: PollSet, now: Instant, requests: LoopRequests)
  /// Adds what it knows to the reader's status (STATUS, DOOR, CLOCK): its own fields only. The
  /// loop asks every participant, in the order they were registered, without knowing its type.
  /// The default adds nothing.
  func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64)
  /// Carries out an operator's command if it is the one that owns it; nil (the default): not its
  /// command. The loop hands the command to each participant in turn until one replies.
  func perform(_ command: OperatorCommand) -> OperatorReply?
}

extension PollParticipant {
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {}
  public func perform(_ command: OperatorCommand) -> OperatorReply? { nil }
}

/// A console command a participant carries out (not the loop).
public enum OperatorCommand: Sendable {
  /// CLOCK FLOOR RESET: the clock floor becomes the clock's reading now, written durably.
  case resetClockFloor
  /// LOCKDOWN ON/OFF, TURNSTILE FORGIVE/RESET, from the console (`who`: the session) or the fleet.
  case action(ConsoleAction, authority: EmergencyAuthority, who: [UInt8])
}

/// What a participant did for an `OperatorCommand`.
public enum OperatorReply: Equatable, Sendable {
  /// The floor before and after the reset (Unix seconds).
  case clockFloorReset(before: Int64, after: Int64)
  case action(ConsoleActionOutcome)
}

/// Milliseconds from `now` until `deadline`, rounded up (0 when it has passed).
public func millisecondsUntil(_ deadline: Instant, from now: Instant) -> Int {
  deadline <= now ? 0 : Int((deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
}
