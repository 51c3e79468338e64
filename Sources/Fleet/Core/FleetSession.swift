import ScanAudit
import ScanBase

/// The fleet link's rules as a pure state machine on the monotonic clock: which audit record to
/// publish next, when the acknowledged sequence advances (and is saved), reconnect backoff, the
/// connection's timeouts, when the reader counts as offline, the state topic's cadence and the
/// drain at stop. The link's thread owns the MQTT client and the log's file; it asks `next` what to
/// do, does it, and reports what happened. Tested on a manual clock (FleetSessionTests).
public struct FleetSession: Sendable {
  /// One turn of the link's thread at most: the network is run (or the thread sleeps) this long.
  public static let turnMilliseconds = 20
  /// Reconnect backoff: 1 s, doubling to 15 s; back to 1 s once a connection is up.
  public static let firstBackoffMilliseconds = 1_000
  public static let backoffMillisecondsMax = 15_000
  public static let connectTimeoutMillisecondsMin = 10_000
  public static let ackTimeoutMillisecondsMin = 5_000
  /// The last contact's wall time is written at most once a minute.
  public static let contactWriteMilliseconds = 60_000
  /// The state topic: every 5 s, or at most once a second when something changed.
  public static let stateMilliseconds = 5_000
  public static let stateChangedMilliseconds = 1_000
  /// At stop, what the log holds is published for at most this long.
  public static let drainMilliseconds = 2_000
  public static let logRetryMilliseconds = 1_000
  public static let logReopenMilliseconds = 100
  public static let logCheckMilliseconds = 1_000
  public static let logCheckUnresolvedMilliseconds = 200
  /// An idle log is read once a second (every 50 ms without a writer in this process), and at once
  /// when the writer wrote records or the last read filled a batch.
  public static let queryIdleMilliseconds = 1_000
  public static let queryIdleNoWriterMilliseconds = 50

  private struct InFlight: Sendable {
    var mid: Int32
    var sequence: Int64
    var acked = false
    var sentAt: Instant
  }

  private enum Phase: Equatable, Sendable { case idle, connecting(since: Instant), ready }

  public let settings: FleetSettings
  /// The log published now (valid once `logResolved`).
  public private(set) var logID: String? = nil
  public private(set) var logResolved = false
  /// The highest sequence acknowledged with nothing missing below it.
  public private(set) var acknowledgedThrough: Int64 = 0
  /// The next sequence to publish on this connection.
  public private(set) var nextToSend: Int64 = 1
  public private(set) var backoffMilliseconds = Self.firstBackoffMilliseconds
  public private(set) var isOffline = false
  private var saved: FleetAckMark
  private var pendingMark: FleetAckMark? = nil
  private var pendingSave = false
  private var logOpen = false
  private var logStale = false
  private var nextLogOpen: Instant
  private var nextLogCheck: Instant
  private var inFlight: [InFlight] = []
  private var tokens: Double
  private var lastRefill: Instant
  private var nextQuery: Instant
  private var queriedAt: Instant? = nil
  private var queryLimit = 0
  private var queryIdleMilliseconds = Self.queryIdleMilliseconds
  private var writtenSeen: Int64 = -1
  private var phase = Phase.idle
  private var nextAttempt: Instant
  private var brokerIndex = 0
  private var pendingDrop: FleetDrop? = nil
  /// Nanoseconds on the monotonic clock; negative for a contact before its origin (a previous boot).
  private var lastContact: Int64
  private var lastContactWrite: Instant? = nil
  private var lastStatePublish: Instant? = nil
  private var stateChanged = false
  private var stopDeadline: Instant? = nil
  private var drainCheckedAt: Instant? = nil
  private var drainedAt: Instant? = nil

  /// `saved`: what the state file holds. `lastContactAgeSeconds`: how long ago (wall clock) the last
  /// contact kept beside the state file was, so a restart does not lift the offline policy (nil: none;
  /// negative, a clock behind the contact: offline at once).
  public init(settings: FleetSettings, now: Instant, saved: FleetAckMark, lastContactAgeSeconds: Int64? = nil) {
    self.settings = settings
    self.saved = saved
    nextLogOpen = now
    nextLogCheck = now
    nextAttempt = now
    nextQuery = now
    lastRefill = now
    tokens = Double(settings.batchRecords)
    inFlight.reserveCapacity(settings.batchRecords)
    lastContact = Int64(truncatingIfNeeded: now.nanoseconds)
    if let age = lastContactAgeSeconds {
      // A contact "in the future": the clock came up behind it (a power cut on a board without a
      // real-time clock): how long the reader was offline is unknown, so it is offline at once.
      let seconds = age >= 0 ? min(age, 1 << 32) : Int64(settings.maxOfflineSeconds) + 1
      lastContact -= seconds * 1_000_000_000
    }
  }

  public var isConnected: Bool { phase == .ready }
  public var isStopping: Bool { stopDeadline != nil }
  /// Whether the inbox is handed what arrived (a connection that is up and not being given up).
  public var receivesMessages: Bool { phase == .ready && pendingDrop == nil }
  /// Publishes waiting for their PUBACK.
  public var unacknowledgedCount: Int { inFlight.count }

  /// Where to start publishing log `id` given what the state file holds (`saved`), and what to say
  /// about it (nil when the state file is this log's). `adoptedThrough`: for a log made before log
  /// ids, its last sequence when it was given its id.
  public static func startingPoint(_ saved: FleetAckMark, log id: String?, adoptedThrough: Int64?) -> (acked: Int64, note: String?) {
    let shown = id ?? "(made before log ids)"
    if let savedID = saved.logID {
      if savedID == id { return (saved.acked, nil) }
      return (0, "the state file acknowledged log \(savedID) through \(saved.acked); this is log \(shown): publishing it from its first record")
    }
    if saved.acked == 0 || id == nil { return (saved.acked, nil) }
    if let adoptedThrough, saved.acked <= adoptedThrough { return (saved.acked, nil) }
    return (
      0,
      "the state file (written before log ids) acknowledged \(saved.acked), but log \(shown) was made after it: publishing it from its first record"
    )
  }

  /// What to say about a log given up with records above its acknowledged sequence.
  public static func replacedNote(_ mark: FleetAckMark, newest: Int64) -> String {
    "log \(mark.logID ?? "(made before log ids)") was replaced: its records \(mark.acked + 1)...\(newest) were not acknowledged"
  }

  // MARK: - What to do

  /// The next thing to do at `now`; `.wait` when nothing more is due this turn. `writer`: the log the
  /// writer in this process has open; `written`: how many records it has written (nil: no writer here).
  public mutating func next(now: Instant, writer: WriterLog = .notHere, written: Int64? = nil) -> FleetAction {
    // An acknowledged point is saved before anything else, the stop included.
    if let mark = pendingMark {
      defer { (pendingMark, pendingSave) = (nil, false) }
      return .acknowledged(mark, save: pendingSave)
    }
    if let action = stopAction(now) { return action }
    if let action = logAction(now, writer: writer) { return action }
    if let action = connectionAction(now) { return action }
    if phase == .ready, let action = readyAction(now, written: written) { return action }
    if settings.maxOfflineSeconds > 0 && phase != .ready && !isOffline
      && Int64(truncatingIfNeeded: now.nanoseconds) - lastContact > Int64(settings.maxOfflineSeconds) * 1_000_000_000
    {
      isOffline = true
      return .offline
    }
    return .wait(until: now.adding(milliseconds: Self.turnMilliseconds))
  }

  private mutating func stopAction(_ now: Instant) -> FleetAction? {
    guard let deadline = stopDeadline else { return nil }
    let ready = phase == .ready
    if phase == .idle || now >= deadline || drainedAt == now || (ready && inFlight.isEmpty && !logOpen) {
      return .finish(sayOffline: ready)
    }
    if ready && inFlight.isEmpty && drainCheckedAt != now {
      drainCheckedAt = now
      return .checkDrained
    }
    return nil
  }

  private mutating func logAction(_ now: Instant, writer: WriterLog) -> FleetAction? {
    guard logOpen else {
      guard now >= nextLogOpen else { return nil }
      nextLogOpen = now.adding(milliseconds: Self.logRetryMilliseconds)
      return .openLog
    }
    if logResolved && writer != .notHere && writer != .open(logID ?? "") { logStale = true }
    if logStale {
      let mark = logResolved ? FleetAckMark(logID: logID, acked: acknowledgedThrough) : nil
      (logStale, logOpen, logResolved) = (false, false, false)
      nextLogOpen = now.adding(milliseconds: Self.logReopenMilliseconds)
      nextLogCheck = now
      return .closeLog(unacknowledged: mark)
    }
    guard now >= nextLogCheck else { return nil }
    nextLogCheck = now.adding(milliseconds: logResolved ? Self.logCheckMilliseconds : Self.logCheckUnresolvedMilliseconds)
    return .checkLog(identify: !logResolved)
  }

  private mutating func connectionAction(_ now: Instant) -> FleetAction? {
    switch phase {
    case .idle:
      guard stopDeadline == nil, now >= nextAttempt, !settings.brokers.isEmpty else { return nil }
      let broker = settings.brokers[brokerIndex % settings.brokers.count]
      brokerIndex &+= 1
      phase = .connecting(since: now)
      return .connect(broker: broker)
    case .connecting(let since):
      if Self.nanoseconds(now, since: since) > Self.atLeast(settings.keepaliveSeconds, Self.connectTimeoutMillisecondsMin) {
        return drop(.connectTimedOut, now)
      }
    case .ready:
      if let reason = pendingDrop { return drop(reason, now) }
      if let oldest = inFlight.first,
        Self.nanoseconds(now, since: oldest.sentAt) > Self.atLeast(settings.keepaliveSeconds, Self.ackTimeoutMillisecondsMin)
      {
        return drop(.unacknowledged(sequence: oldest.sequence), now)
      }
    }
    return nil
  }

  private mutating func drop(_ reason: FleetDrop, _ now: Instant) -> FleetAction {
    disconnected(now: now)
    return .disconnect(reason)
  }

  private mutating func readyAction(_ now: Instant, written: Int64?) -> FleetAction? {
    if lastContactWrite.map({ now.milliseconds(since: $0) >= Self.contactWriteMilliseconds }) ?? true {
      lastContactWrite = now
      return .saveContact
    }
    // Pacing: a bucket of `batch_records` tokens refilled at `events_per_second_max`.
    tokens = min(Double(settings.batchRecords), tokens + Double(now.microseconds(since: lastRefill)) / 1e6 * Double(settings.eventsPerSecondMax))
    lastRefill = now
    let room = min(settings.batchRecords - inFlight.count, Int(tokens))
    let wrote = written.map { $0 != writtenSeen } ?? false
    if room > 0 && logOpen && logResolved && queriedAt != now && (now >= nextQuery || wrote) {
      writtenSeen = written ?? -1
      queriedAt = now
      queryLimit = room
      queryIdleMilliseconds = written == nil ? Self.queryIdleNoWriterMilliseconds : Self.queryIdleMilliseconds
      nextQuery = now.adding(milliseconds: queryIdleMilliseconds)
      return .publish(from: nextToSend, limit: room)
    }
    if let last = lastStatePublish, !Self.stateDue(now, since: last, changed: stateChanged) { return nil }
    lastStatePublish = now
    stateChanged = false
    return .publishState
  }

  // MARK: - What happened

  /// The log opened (after `.openLog`).
  public mutating func logOpened() { logOpen = true }

  /// Reading the log failed: it is closed and opened again a second later (which log it is stays known).
  public mutating func logReadFailed(now: Instant) {
    logOpen = false
    nextLogOpen = now.adding(milliseconds: Self.logRetryMilliseconds)
  }

  /// The file at the log's path is not the one open (after `.checkLog`).
  public mutating func logChanged() { logStale = true }

  /// The open log's id (nil: made before log ids, or unreadable) and newest sequence (after
  /// `.checkLog(identify: true)`): publishing resumes after the acknowledged sequence when the state
  /// file is this log's, else from this log's first record. Returns what to say about a change of log.
  public mutating func logIdentified(id: String?, adoptedThrough: Int64?, newest: Int64, writer: WriterLog, now: Instant) -> String? {
    guard logOpen && !logResolved else { return nil }
    switch writer {
    case .opening: return nil
    case .open(let open) where open != id:
      logStale = true  // the file open here is not the writer's log
      return nil
    default: break
    }
    let start = Self.startingPoint(saved, log: id, adoptedThrough: adoptedThrough)
    logID = id
    logResolved = true
    acknowledgedThrough = start.acked
    inFlight.removeAll(keepingCapacity: true)
    nextToSend = start.acked.saturatingAdd(1)
    nextQuery = now
    let mark = FleetAckMark(logID: id, acked: start.acked)
    pendingMark = mark
    pendingSave = pendingSave || saved != mark
    saved = mark
    return start.note.map { $0 + (newest > 0 ? " (it holds records through \(newest) so far)" : "") }
  }

  /// The client could not be made (after `.connect`): retry after the backoff.
  public mutating func connectFailed(now: Instant) { disconnected(now: now) }

  /// The client says it is connected (every turn it does). True the first time for this client: a new
  /// connection, which publishes again from the acknowledged sequence + 1 (announce it).
  @discardableResult
  public mutating func connected(now: Instant) -> Bool {
    lastContact = Int64(truncatingIfNeeded: now.nanoseconds)
    guard case .connecting = phase else { return false }
    phase = .ready
    isOffline = false
    backoffMilliseconds = Self.firstBackoffMilliseconds
    inFlight.removeAll(keepingCapacity: true)
    nextToSend = acknowledgedThrough.saturatingAdd(1)
    nextQuery = now
    pendingDrop = nil
    return true
  }

  /// The connection is gone (refused, lost, a publish failed) or was given up: unacknowledged
  /// publishes are forgotten (the next connection sends them again); retry after the backoff, which
  /// doubles up to 15 s.
  public mutating func disconnected(now: Instant) {
    phase = .idle
    inFlight.removeAll(keepingCapacity: true)
    pendingDrop = nil
    nextAttempt = now.adding(milliseconds: backoffMilliseconds)
    backoffMilliseconds = min(backoffMilliseconds * 2, Self.backoffMillisecondsMax)
  }

  /// Records read for a `.publish` (before they are published): a full batch reads again next turn.
  public mutating func recordsRead(_ count: Int, now: Instant) {
    nextQuery = count >= queryLimit ? now : now.adding(milliseconds: queryIdleMilliseconds)
  }

  /// Record `sequence` was published as message `mid`.
  public mutating func published(sequence: Int64, mid: Int32, now: Instant) {
    inFlight.append(InFlight(mid: mid, sequence: sequence, sentAt: now))
    nextToSend = sequence.saturatingAdd(1)
    tokens -= 1
  }

  /// A PUBACK for message `mid`. Accepted, the acknowledged sequence advances through the
  /// acknowledged prefix only (a later record acknowledged first waits for the earlier ones);
  /// refused, the connection is given up. Returns whether it acknowledged a record not yet acknowledged.
  @discardableResult
  public mutating func puback(mid: Int32, accepted: Bool) -> Bool {
    guard let i = inFlight.firstIndex(where: { $0.mid == mid }), !inFlight[i].acked else { return false }
    guard accepted else {
      pendingDrop = .refused(sequence: inFlight[i].sequence)
      return false
    }
    inFlight[i].acked = true
    var advanced = false
    while let first = inFlight.first, first.acked {
      acknowledgedThrough = first.sequence
      inFlight.removeFirst()
      advanced = true
    }
    if advanced {
      saved = FleetAckMark(logID: logID, acked: acknowledgedThrough)
      pendingMark = saved
      pendingSave = true
    }
    return true
  }

  /// What the state topic shows changed (a new decision or door record).
  public mutating func stateDidChange() { stateChanged = true }

  /// Stop: publish what the log holds for at most 2 s, then finish.
  public mutating func stop(now: Instant) {
    if stopDeadline == nil { stopDeadline = now.adding(milliseconds: Self.drainMilliseconds) }
  }

  /// The log's newest sequence (after `.checkDrained`): drained when everything up to it was acknowledged.
  public mutating func logHolds(through newest: Int64, now: Instant) {
    if inFlight.isEmpty && newest < nextToSend { drainedAt = now }
  }

  private static func stateDue(_ now: Instant, since last: Instant, changed: Bool) -> Bool {
    let elapsed = nanoseconds(now, since: last)
    return elapsed > UInt64(stateMilliseconds) * 1_000_000 || (changed && elapsed > UInt64(stateChangedMilliseconds) * 1_000_000)
  }

  private static func nanoseconds(_ now: Instant, since earlier: Instant) -> UInt64 {
    now.nanoseconds > earlier.nanoseconds ? now.nanoseconds - earlier.nanoseconds : 0
  }

  /// `seconds`, or `milliseconds` when longer, in nanoseconds.
  private static func atLeast(_ seconds: Int, _ milliseconds: Int) -> UInt64 {
    UInt64(max(seconds * 1_000, milliseconds)) * 1_000_000
  }
}
