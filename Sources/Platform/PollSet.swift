import CLinux
import Glibc
import ScanBase

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

/// Milliseconds from `now` until `deadline`, rounded up (0 when it has passed).
public func millisecondsUntil(_ deadline: Instant, from now: Instant) -> Int {
  deadline <= now ? 0 : Int((deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
}
