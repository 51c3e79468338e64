import Glibc
import ScanCore
import Synchronization

/// Audit log settings (config.toml [log]).
public struct AuditLogSettings: Sendable {
  public var path: String
  public var commitIntervalMilliseconds = 200
  public var retainRecords: Int64 = 1_000_000
  public var retainDays = 365
  public var rawPayloads = false
  public init(path: String) { self.path = path }
}

/// Why the log cannot write now.
public enum AuditLogFault: UInt8, Sendable {
  case none = 0, diskFull, readOnly, ioError, corruptMovedAside, other
  public var name: String {
    switch self {
    case .none: "ok"
    case .diskFull: "disk full"
    case .readOnly: "read-only or not writable"
    case .ioError: "I/O error"
    case .corruptMovedAside: "database was corrupt, moved aside"
    case .other: "write failed"
    }
  }
}

/// The durable audit log: a writer thread drains the loop's event ring into SQLite (WAL,
/// synchronous=FULL) in group commits every `commitIntervalMilliseconds`, off the frame path —
/// the loop never waits on the disk. Each record is hash-chained to the one before.
///
/// On a fault (disk full, read-only, I/O error) the reader keeps working; records wait (bounded)
/// and are retried every interval; what cannot be kept is counted and, on recovery, written as a
/// `records-lost` record so the log says there is a hole. A corrupt file is moved aside and a new
/// one started.
///
/// Durability: a decision is on disk at most one commit interval (plus one fsync) after it was
/// made; the console's WATCH only shows events that are already committed.
public final class AuditLog: AuditLogAccess, @unchecked Sendable {
  public let settings: AuditLogSettings
  private let ring: EventRing
  private let digester = SodiumDigester()
  private let worker = WorkerThread()
  private let committed = Atomic<UInt64>(0)
  private let faultRaw = Atomic<UInt8>(0)
  private let writtenCount = Atomic<Int64>(0)
  private let lostCount = Atomic<Int64>(0)
  private let pendingCount = Atomic<Int>(0)
  private let movedAsideCount = Atomic<Int>(0)
  /// The loop thread's read-only connection (console LOG).
  private var reader: AuditStore? = nil
  /// Records kept in memory at most while the disk is failing.
  public let pendingMax: Int

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

  public func start() {
    worker.start { [self] in body() }
  }

  /// Writes everything still in the ring, then stops the thread (SIGTERM path).
  public func stop() {
    worker.stop()
  }

  // MARK: - The writer thread

  private func body() {
    var store: AuditStore? = nil
    var run: Int64 = 0
    var cursor: UInt64 = 1
    var pending: [AuditRecord] = []
    var lost: Int64 = 0
    var lastPrune: Int64 = 0
    var nextOpenAttempt: Int64 = 0
    while true {
      let stopping = worker.stopRequested
      let now = SystemWallClock().unixNanoseconds()
      if store == nil && now >= nextOpenAttempt {
        do {
          store = try openStore()
          run = try store!.beginRun()
          for i in pending.indices { pending[i].run = run }
        } catch {
          store = nil
          setFault(error)
          nextOpenAttempt = now + 1_000_000_000
        }
      }
      // Collect what the loop added since last time.
      let head = ring.lastSequence
      while cursor <= head {
        switch ring.read(cursor) {
        case .event(let e):
          if AuditRecord.isLogged(e.kind) {
            pending.append(AuditRecord(e, sequence: 0, run: run, keepPayload: settings.rawPayloads || e.kind != .decision))
          }
        case .overwritten:
          lost += 1
        case .notYet:
          break
        }
        cursor += 1
      }
      if pending.count > pendingMax {
        lost += Int64(pending.count - pendingMax)
        pending.removeFirst(pending.count - pendingMax)
      }
      pendingCount.store(pending.count, ordering: .relaxed)
      if let s = store, !pending.isEmpty || lost > 0 {
        var batch = pending
        if lost > 0 {
          batch.insert(AuditRecord(sequence: 0, run: run, eventSequence: 0, wallNanoseconds: now, kind: "records-lost",
                                   code: lost, detail: "events that could not be kept while the log was failing"), at: 0)
        }
        do {
          try s.append(batch, digester: digester)
          writtenCount.wrappingAdd(Int64(batch.count), ordering: .relaxed)
          lostCount.wrappingAdd(lost, ordering: .relaxed)
          pending.removeAll(keepingCapacity: true)
          lost = 0
          pendingCount.store(0, ordering: .relaxed)
          faultRaw.store(AuditLogFault.none.rawValue, ordering: .releasing)
          committed.store(cursor - 1, ordering: .releasing)
        } catch {
          setFault(error)
          if error.isCorrupt || error.isIOError {
            store = nil  // reopen (a corrupt file is moved aside on open)
          }
        }
      } else if store != nil && pending.isEmpty {
        committed.store(cursor - 1, ordering: .releasing)
      }
      if let s = store, now - lastPrune > 10_000_000_000 {
        lastPrune = now
        let cutoff = now - Int64(settings.retainDays) * 86_400 * 1_000_000_000
        _ = try? s.prune(keepRecords: settings.retainRecords, olderThan: cutoff)
      }
      if stopping && (pending.isEmpty || store == nil) && cursor > ring.lastSequence { break }
      usleep(UInt32(stopping ? 20_000 : settings.commitIntervalMilliseconds * 1000))
    }
  }

  private func openStore() throws(SQLiteError) -> AuditStore {
    do {
      let s = try AuditStore(path: settings.path, readOnly: false)
      // A quick structural check: a damaged page makes this fail.
      try s.database.execute("PRAGMA quick_check(1)")
      return s
    } catch where error.isCorrupt {
      _ = AuditStore.moveAside(settings.path, now: SystemWallClock().unixSeconds())
      movedAsideCount.wrappingAdd(1, ordering: .relaxed)
      faultRaw.store(AuditLogFault.corruptMovedAside.rawValue, ordering: .releasing)
      return try AuditStore(path: settings.path, readOnly: false)
    }
  }

  private func setFault(_ error: SQLiteError) {
    let fault: AuditLogFault =
      error.isDiskFull ? .diskFull : error.isReadOnly ? .readOnly : error.isCorrupt ? .corruptMovedAside
      : error.isIOError ? .ioError : .other
    faultRaw.store(fault.rawValue, ordering: .releasing)
  }

  // MARK: - For the console (loop thread)

  public func writeStatus(into w: inout ByteWriter) {
    w.write(settings.path)
    w.write("; ")
    w.write(writtenRecords)
    w.write(" records written, committed through #")
    w.write(committedSequence)
    w.write(", ")
    w.write(pendingCount.load(ordering: .relaxed))
    w.write(" waiting, ")
    w.write(lostRecords)
    w.write(" lost; ")
    w.write(fault == .none ? "ok" : "FAULT: ")
    if fault != .none { w.write(fault.name) }
    if movedAsideCount.load(ordering: .relaxed) > 0 {
      w.write("; a corrupt file was moved aside")
    }
  }

  public func writeRecent(_ count: Int, into w: inout ByteWriter) -> Int {
    if reader == nil { reader = try? AuditStore(path: settings.path, readOnly: true) }
    guard let reader else { return 0 }
    var lines = 0
    do {
      try reader.read(limit: Int64(count), newest: true) { record in
        w.write("| ")
        writeSanitized(record.line, into: &w)
        w.newline()
        lines += 1
      }
    } catch {
      self.reader = nil
    }
    return lines
  }
}
