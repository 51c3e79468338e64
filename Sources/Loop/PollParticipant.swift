import ScanConsole
import ScanCore
import ScanPlatform

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
