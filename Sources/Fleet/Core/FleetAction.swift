import ScanAudit
import ScanBase

/// What the fleet link and its session (`FleetSession`) say to each other.

/// Which log the writer in this process has open (the fleet link publishes that one).
public enum WriterLog: Equatable, Sendable {
  /// No writer in this process: the link takes the log id the file holds.
  case notHere
  /// The writer has not opened a log yet (or is opening a new one).
  case opening
  case open(String)
}

/// What the fleet link's state file holds: the log it publishes (nil for a log made before log
/// ids) and the highest sequence of that log the broker acknowledged with nothing missing below.
public struct FleetAckMark: Equatable, Sendable {
  public var logID: String?
  public var acked: Int64
  public init(logID: String?, acked: Int64) {
    self.logID = logID
    self.acked = acked
  }
}

/// Why the session gives up a connection.
public enum FleetDrop: Equatable, Sendable {
  /// No CONNACK within the keepalive (at least 10 s).
  case connectTimedOut
  /// The oldest publish waited for its PUBACK longer than the keepalive (at least 5 s).
  case unacknowledged(sequence: Int64)
  /// The broker refused a publish (MQTT 5 reason code 128 or above).
  case refused(sequence: Int64)

  /// The journal's and STATUS's words for it.
  public func text(broker: String, settings: FleetSettings) -> String {
    switch self {
    case .connectTimedOut: "\(broker): connection timed out"
    case .unacknowledged(let sequence): "\(broker): record \(sequence) unacknowledged for \(settings.keepaliveSeconds) s"
    case .refused(let sequence):
      "\(broker): the broker refused record \(sequence) (not authorised for \(FleetTopics(prefix: settings.topicPrefix, readerID: settings.readerID).events)?)"
    }
  }
}

/// What the session asks the link to do next (`FleetSession.next`).
public enum FleetAction: Equatable, Sendable {
  /// Open the audit log read-only; report `logOpened()` when it opened (asked again a second later when it did not).
  case openLog
  /// Say `logChanged()` if the file at the log's path is no longer the one open; with `identify`, else read
  /// its id and newest sequence and report `logIdentified`.
  case checkLog(identify: Bool)
  /// Close the log (the writer or the file moved to another). `unacknowledged`: the log that was being
  /// published; say which of its records were never acknowledged (`replacedNote`).
  case closeLog(unacknowledged: FleetAckMark?)
  /// Start a new clean-session client for `broker`; report `connectFailed` when it cannot start.
  case connect(broker: String)
  /// Destroy the client: the session already counts it as gone.
  case disconnect(FleetDrop)
  /// `mark` is the acknowledged point now: show it and let the log prune below it; with `save`, write it to
  /// the state file (durably) before anything else.
  case acknowledged(FleetAckMark, save: Bool)
  /// Read at most `limit` records from sequence `from` on and report `recordsRead`, then publish each (QoS 1)
  /// and report `published(sequence:mid:now:)`.
  case publish(from: Int64, limit: Int)
  /// Publish the state topic (retained).
  case publishState
  /// Keep the wall time of this contact with the broker beside the state file.
  case saveContact
  /// No broker for longer than `max_offline_s`: the offline policy is in force.
  case offline
  /// Stopping: report the log's newest sequence (`logHolds(through:now:)`).
  case checkDrained
  /// Stop: when `sayOffline`, publish `offline` on the status topic and disconnect cleanly.
  case finish(sayOffline: Bool)
  /// Nothing more now: run the network (or sleep) until then, and report what happened.
  case wait(until: Instant)
}
