import Glibc
import ScanConsole
import ScanCore
import ScanPlatform
import Synchronization

/// Audit log settings (config.toml [log]).
extension AuditLogSettings {
  /// Where the chain key is read from (and created at first start).
  public var chainKeyPath: String { chainKeyFile.isEmpty ? AuditChainKey.defaultPath(forLog: path) : chainKeyFile }
}

/// Why the log cannot write now.
public enum AuditLogFault: UInt8, Sendable {
  case none = 0, diskFull, readOnly, ioError, corruptMovedAside, other, chainKey, logCut
  public var name: String {
    switch self {
    case .none: "ok"
    case .diskFull: "disk full"
    case .readOnly: "read-only or not writable"
    case .ioError: "I/O error"
    case .corruptMovedAside: "database was corrupt, moved aside"
    case .other: "write failed"
    case .chainKey: "chain key missing, refused or not this log's"
    case .logCut: "records lost: the log ended before its committed mark (WAL damaged, torn or deleted)"
    }
  }
}

/// The durable audit log: a writer thread drains the loop's event ring into SQLite (WAL,
/// synchronous=FULL) in group commits every `commitIntervalMilliseconds`, off the frame path —
/// the loop never waits on the disk. Each record is chained to the one before with
/// HMAC-SHA-256 under the chain key (`AuditChainKey`), and the chain's head is published
/// (`chainHead`, on STATUS) so a later `scangate log verify --head` finds a cut tail too.
///
/// The key: read from `chainKeyPath` (`SecretFile` rules). At the first start — the database
/// is new, or was moved aside — and only then, a missing key file is generated (libsodium's
/// CSPRNG, 0600). A log whose chain is keyed is never continued with another key or a new
/// one: if its key file is missing, refused or holds another key, the log faults (records wait,
/// bounded, as on a failing disk) until the right key is back. A log written before the keyed
/// chain is moved aside (`<path>.unkeyed-<time>`), never continued, and the new log's first
/// record names it and its SHA-256 head.
///
/// On a fault (disk full, read-only, I/O error) the reader keeps working; records wait (bounded)
/// and are retried every interval; what cannot be kept is counted and, on recovery, written as a
/// `records-lost` record so the log says there is a hole. A corrupt file is moved aside and a new
/// one started.
///
/// Under faults (docs/audit-log.md, "Under faults"): `quick_check`'s rows are read at every open
/// (a damaged file is a fault, moved aside, journaled and named by the new log); the committed
/// head is kept outside the database too (`AuditHeadMark`), so records lost with a damaged, torn
/// or deleted WAL are found at the next open and recorded as a cut whose sequence numbers are
/// never used again; records dropped are counted at the drop, never the fault record; intervals
/// run on the monotonic clock and record ages are judged at the clock floor (`time`).
///
/// Durability: a decision is on disk at most one commit interval (plus one fsync) after it was
/// made; the console's WATCH only shows events that are already committed.
///
/// Which log (`identity`, AuditLogIdentity.swift): each chain has a log id, in its first record.
/// A log that existed and is gone — its file deleted, moved or replaced while in use (a `stat`
/// before and after every commit, and every half second), or missing at start while the state
/// directory's `log-id` file or the fleet's state names it — is a `log-missing` fault: journal,
/// STATUS, and a record at the head of the new log (which the fleet publishes).
public final class AuditLog: AuditLogAccess, @unchecked Sendable {
  public let settings: AuditLogSettings
  private let ring: EventRing
  private let worker = WorkerThread()
  private let committed = Atomic<UInt64>(0)
  let faultRaw = Atomic<UInt8>(0)
  let writtenCount = Atomic<Int64>(0)
  let lostCount = Atomic<Int64>(0)
  let pendingCount = Atomic<Int>(0)
  let movedAsideCount = Atomic<Int>(0)
  private let retainFromSequence = Atomic<Int64>(.max)
  private let headState = Mutex<AuditChainHead>(.empty)
  private let keyProblemText = Mutex<String>("")
  /// Which log is open, and a log that went missing (set `identity.stateDirectory` before start).
  public let identity = AuditLogIdentity()
  /// The loop thread's read-only connection (console LOG).
  /// A console's LOG request (count, session) and its result, handed between the loop and the
  /// log's thread, which does the disk read.
  let recentRequest = Mutex<(query: AuditQuery, ticket: SessionTicket)?>(nil)
  let recentResult = Mutex<AuditRecentRead?>(nil)
  /// Records kept in memory at most while the disk is failing.
  public let pendingMax: Int
  /// The clock floor (`TrustedTime`) pruning judges record ages at (set before `start`); nil:
  /// nothing is pruned by age, only by count and bytes.
  public var time: TrustedTime? = nil
  /// The wall clock records-lost and cut records are stamped with (set before `start`; tests).
  public var wall: any WallClock = SystemWallClock()
  /// How often the writer prunes (monotonic; set before `start`).
  public var pruneIntervalMilliseconds = 10_000
  /// The committed mark (`AuditHeadMark`), opened with the log: the writer's thread only.
  var mark: AuditHeadMark? = nil
  /// Damage found and cuts recorded this run, for STATUS (bounded).
  let integrityNotice = Mutex<String>("")

  public init(settings: AuditLogSettings, ring: EventRing) {
    self.settings = settings
    self.ring = ring
    pendingMax = max(1_024, ring.capacity * 4)
  }

  /// Every loggable event up to this ring sequence is committed to disk.
  public var committedSequence: UInt64 { committed.load(ordering: .acquiring) }
  public var isFaulted: Bool { fault != .none }
  public var fault: AuditLogFault { AuditLogFault(rawValue: faultRaw.load(ordering: .acquiring)) ?? .other }
  public var writtenRecords: Int64 { writtenCount.load(ordering: .relaxed) }
  public var lostRecords: Int64 { lostCount.load(ordering: .relaxed) }
  /// The committed chain's end (sequence 0 until the log is open): what STATUS and the journal
  /// publish, and what `scangate log verify --head SEQ:HEX` checks a log against later.
  public var chainHead: AuditChainHead { headState.withLock { $0 } }
  /// Why the chain key cannot be used (for STATUS and the journal; names files and key
  /// fingerprints, never the key), or nil.
  public var keyProblem: String? { keyProblemText.withLock { $0.isEmpty ? nil : $0 } }

  /// The lowest log sequence whoever the log is published to has not acknowledged yet:
  /// pruning never deletes a record at or above it. `.max` (the default) holds nothing back.
  public var retainFrom: Int64 {
    get { retainFromSequence.load(ordering: .acquiring) }
    set { retainFromSequence.store(newValue, ordering: .releasing) }
  }

  public func start() {
    worker.start { [self] in body() }
  }

  /// Writes everything still in the ring, then stops the thread (SIGTERM path).
  public func stop() {
    worker.stop()
  }

  // MARK: - The writer thread

  /// The writer thread's own state (no other thread touches it).
  private struct WriterState {
    var store: AuditStore? = nil
    var key: AuditChainKey? = nil
    var run: Int64 = 0
    var cursor: UInt64 = 1
    var pending: [AuditRecord] = []
    /// Dropped and not yet written as a records-lost record (already counted in `lostRecords`).
    var lost: Int64 = 0
    /// Monotonic nanoseconds: a wall clock that jumps neither stops nor hurries these.
    var nextPrune: Int64 = 0
    var nextOpenAttempt: Int64 = 0
    var nextMarkSync: Int64 = 0
    /// A fault found once (damage at open, a cut) stays reported until then (monotonic), so the
    /// loop, which looks at least once a second, always sees it and records its fault event.
    var faultHeldUntil: Int64? = nil
  }

  /// How often the committed mark is made durable (it is written after every commit batch; a
  /// power cut can leave it this far behind the log, never ahead).
  static let markSyncNanoseconds: Int64 = 15_000_000_000

  /// How long a fault found once is reported at least.
  static let faultHoldNanoseconds: Int64 = 2_000_000_000

  private func body() {
    var w = WriterState()
    while true {
      let stopping = worker.stopRequested
      let now = wall.unixNanoseconds()
      let tick = Int64(clamping: SystemMonotonicClock().now().nanoseconds)
      if w.store == nil && tick >= w.nextOpenAttempt { open(&w, now: now, tick: tick) }
      collect(from: &w.cursor, run: w.run, into: &w.pending, lost: &w.lost)
      if w.pending.count > pendingMax { dropOldest(&w.pending, lost: &w.lost) }
      pendingCount.store(w.pending.count, ordering: .relaxed)
      if let s = w.store, logFileGone(s, urgent: !w.pending.isEmpty || w.lost > 0) { w.store = nil }  // opens a new log
      if let s = w.store, let key = w.key, !w.pending.isEmpty || w.lost > 0 {
        commit(&w, s, key: key, now: now)
      } else if w.store != nil && w.pending.isEmpty {
        committed.store(w.cursor - 1, ordering: .releasing)
      }
      if let until = w.faultHeldUntil, tick >= until {
        w.faultHeldUntil = nil
        if w.store != nil && w.pending.isEmpty && w.lost == 0 { faultRaw.store(AuditLogFault.none.rawValue, ordering: .releasing) }
      }
      if tick >= w.nextMarkSync || stopping {
        w.nextMarkSync = tick + Self.markSyncNanoseconds
        mark?.sync()
      }
      if let s = w.store, tick >= w.nextPrune {
        w.nextPrune = tick + Int64(pruneIntervalMilliseconds) * 1_000_000
        let cutoff = AuditStore.ageCutoff(wallNanoseconds: now, floorSeconds: time?.floor ?? 0, retainDays: settings.retainDays)
        _ = try? s.prune(
          AuditStore.PruneLimits(
            keepRecords: settings.retainRecords, olderThan: cutoff, maxBytes: settings.retainBytes, retainFrom: retainFrom))
      }
      serveRecent(w.store)
      if stopping && (w.pending.isEmpty || w.store == nil) && w.cursor > ring.lastSequence { break }
      usleep(UInt32(stopping ? 20_000 : settings.commitIntervalMilliseconds * 1000))
    }
  }

  /// Opens the log (retried every second on the monotonic clock while it fails), its committed
  /// mark, and records a cut the mark shows.
  private func open(_ w: inout WriterState, now: Int64, tick: Int64) {
    var notes: [AuditRecord] = []
    do throws(OpenFailure) {
      let (opened, openedKey) = try openStore(notes: &notes)
      do { w.run = try opened.beginRun() } catch { throw .database(error) }
      mark?.sync()
      mark = openMark()
      do { try recordCut(opened, key: openedKey, run: w.run, now: now) } catch { throw .database(error) }
      w.store = opened
      w.key = openedKey
      for i in w.pending.indices { w.pending[i].run = w.run }
      for i in notes.indices { notes[i].run = w.run }
      w.pending.insert(contentsOf: notes, at: 0)
      setKeyProblem("")
      headState.withLock { $0 = opened.head }
      let found = fault
      if found == .corruptMovedAside || found == .logCut { w.faultHeldUntil = tick + Self.faultHoldNanoseconds }
    } catch {
      w.store = nil
      w.key = nil
      switch error {
      case .database(let e): setFault(e)
      case .key(let problem):
        setKeyProblem(problem)
        faultRaw.store(AuditLogFault.chainKey.rawValue, ordering: .releasing)
      }
      w.nextOpenAttempt = tick + 1_000_000_000
    }
  }

  /// One group commit of everything pending (a records-lost record first when events were
  /// dropped), then the committed mark.
  private func commit(_ w: inout WriterState, _ s: AuditStore, key: AuditChainKey, now: Int64) {
    var batch = w.pending
    if w.lost > 0 {
      batch.insert(
        AuditRecord(
          sequence: 0, run: w.run, eventSequence: 0, wallNanoseconds: now, kind: .recordsLost,
          code: w.lost, detail: "events that could not be kept while the log was failing"), at: 0)
    }
    do {
      try s.append(batch, key: key)
      try confirmCommitted(s, records: batch.count)  // the file is still the log's, or the batch waits for a new log
      headState.withLock { $0 = s.head }
      markCommitted(s)
      writtenCount.wrappingAdd(Int64(batch.count), ordering: .relaxed)
      w.pending.removeAll(keepingCapacity: true)
      w.lost = 0
      pendingCount.store(0, ordering: .relaxed)
      if w.faultHeldUntil == nil { faultRaw.store(AuditLogFault.none.rawValue, ordering: .releasing) }
      committed.store(w.cursor - 1, ordering: .releasing)
    } catch {
      setFault(error)
      if error.isCorrupt || error.isIOError {
        w.store = nil  // reopen (a corrupt file is moved aside on open)
      }
    }
  }

  /// Takes what the loop added to the ring since `cursor` into `pending`, counting events the
  /// ring overwrote before they were read as lost at once.
  private func collect(from cursor: inout UInt64, run: Int64, into pending: inout [AuditRecord], lost: inout Int64) {
    var reader = EventCursor(next: cursor)
    var overwritten: Int64 = 0
    reader.read(ring) { item in
      switch item {
      case .event(let e):
        if AuditRecord.isLogged(e.kind) {
          pending.append(AuditRecord(e, sequence: 0, run: run, keepPayload: settings.rawPayloads || e.kind != .decision))
        }
      case .overwritten(let count):
        overwritten += Int64(count)
      }
    }
    cursor = reader.next
    lost += overwritten
    lostCount.wrappingAdd(overwritten, ordering: .relaxed)
  }

  /// Drops the oldest records past `pendingMax` and counts them as lost at once (STATUS says so
  /// while the disk is still failing). Fault and state records — the fault itself, a note about
  /// a moved-aside file — are kept while there are others to drop; if they alone overflow, the
  /// oldest go but never the first.
  private func dropOldest(_ pending: inout [AuditRecord], lost: inout Int64) {
    let excess = pending.count - pendingMax
    guard excess > 0 else { return }
    var toDrop = excess
    var kept = 0
    for i in pending.indices {
      if toDrop > 0 && !Self.isReserved(pending[i].kind) {
        toDrop -= 1
        continue
      }
      pending.swapAt(kept, i)
      kept += 1
    }
    pending.removeLast(pending.count - kept)
    if toDrop > 0 { pending.removeSubrange(1..<1 + toDrop) }
    lost += Int64(excess)
    lostCount.wrappingAdd(Int64(excess), ordering: .relaxed)
  }

  /// Records the bounded queue keeps over others: what says something went wrong.
  static func isReserved(_ kind: EventKind) -> Bool { kind == .fault || kind == .state || kind == .recordsLost }

  private func setKeyProblem(_ problem: String) {
    let changed = keyProblemText.withLock { text in
      defer { text = problem }
      return text != problem
    }
    if changed && !problem.isEmpty {
      writeStandardError("scangate: audit log: \(problem)\n")
    }
  }

  private func setFault(_ error: SQLiteError) {
    let fault: AuditLogFault =
      error.isDiskFull
      ? .diskFull
      : error.isReadOnly
        ? .readOnly
        : error.isCorrupt
          ? .corruptMovedAside
          : error.isIOError ? .ioError : .other
    faultRaw.store(fault.rawValue, ordering: .releasing)
  }
}
