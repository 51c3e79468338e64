import Glibc
import ScanConsole
import ScanCore
import Synchronization

/// Audit log settings (config.toml [log]).
extension AuditLogSettings {
  /// Where the chain key is read from (and created at first start).
  public var chainKeyPath: String { chainKeyFile.isEmpty ? AuditChainKey.defaultPath(forLog: path) : chainKeyFile }
}

/// Why the log cannot write now.
public enum AuditLogFault: UInt8, Sendable {
  case none = 0, diskFull, readOnly, ioError, corruptMovedAside, other, chainKey
  public var name: String {
    switch self {
    case .none: "ok"
    case .diskFull: "disk full"
    case .readOnly: "read-only or not writable"
    case .ioError: "I/O error"
    case .corruptMovedAside: "database was corrupt, moved aside"
    case .other: "write failed"
    case .chainKey: "chain key missing, refused or not this log's"
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
/// Durability: a decision is on disk at most one commit interval (plus one fsync) after it was
/// made; the console's WATCH only shows events that are already committed.
public final class AuditLog: AuditLogAccess, @unchecked Sendable {
  public let settings: AuditLogSettings
  private let ring: EventRing
  private let worker = WorkerThread()
  private let committed = Atomic<UInt64>(0)
  private let faultRaw = Atomic<UInt8>(0)
  private let writtenCount = Atomic<Int64>(0)
  private let lostCount = Atomic<Int64>(0)
  private let pendingCount = Atomic<Int>(0)
  private let movedAsideCount = Atomic<Int>(0)
  private let retainFromSequence = Atomic<Int64>(.max)
  private let headState = Mutex<AuditChainHead>(.empty)
  private let keyProblemText = Mutex<String>("")
  /// The loop thread's read-only connection (console LOG).
  /// A console's LOG request (count, session) and its result, handed between the loop and the
  /// log's thread, which does the disk read.
  private let recentRequest = Mutex<(count: Int, ticket: SessionTicket)?>(nil)
  private let recentResult = Mutex<AuditRecentRead?>(nil)
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

  private func body() {
    var store: AuditStore? = nil
    var key: AuditChainKey? = nil
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
        var notes: [AuditRecord] = []
        do throws(OpenFailure) {
          let (opened, openedKey) = try openStore(notes: &notes)
          do { run = try opened.beginRun() } catch { throw .database(error) }
          store = opened
          key = openedKey
          for i in pending.indices { pending[i].run = run }
          for i in notes.indices { notes[i].run = run }
          pending.insert(contentsOf: notes, at: 0)
          setKeyProblem("")
          headState.withLock { $0 = opened.head }
        } catch {
          store = nil
          key = nil
          switch error {
          case .database(let e): setFault(e)
          case .key(let problem):
            setKeyProblem(problem)
            faultRaw.store(AuditLogFault.chainKey.rawValue, ordering: .releasing)
          }
          nextOpenAttempt = now + 1_000_000_000
        }
      }
      collect(from: &cursor, run: run, into: &pending, lost: &lost)
      if pending.count > pendingMax {
        lost += Int64(pending.count - pendingMax)
        pending.removeFirst(pending.count - pendingMax)
      }
      pendingCount.store(pending.count, ordering: .relaxed)
      if let s = store, let key, !pending.isEmpty || lost > 0 {
        var batch = pending
        if lost > 0 {
          batch.insert(
            AuditRecord(
              sequence: 0, run: run, eventSequence: 0, wallNanoseconds: now, kind: .recordsLost,
              code: lost, detail: "events that could not be kept while the log was failing"), at: 0)
        }
        do {
          try s.append(batch, key: key)
          headState.withLock { $0 = s.head }
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
        _ = try? s.prune(
          AuditStore.PruneLimits(
            keepRecords: settings.retainRecords, olderThan: cutoff,
            maxBytes: settings.retainBytes, retainFrom: retainFrom))
      }
      serveRecent(store)
      if stopping && (pending.isEmpty || store == nil) && cursor > ring.lastSequence { break }
      usleep(UInt32(stopping ? 20_000 : settings.commitIntervalMilliseconds * 1000))
    }
  }

  /// Takes what the loop added to the ring since `cursor` into `pending` (counting events the
  /// ring overwrote before they were read).
  private func collect(from cursor: inout UInt64, run: Int64, into pending: inout [AuditRecord], lost: inout Int64) {
    var reader = EventCursor(next: cursor)
    reader.read(ring) { item in
      switch item {
      case .event(let e):
        if AuditRecord.isLogged(e.kind) {
          pending.append(AuditRecord(e, sequence: 0, run: run, keepPayload: settings.rawPayloads || e.kind != .decision))
        }
      case .overwritten(let count):
        lost += Int64(count)
      }
    }
    cursor = reader.next
  }

  private enum OpenFailure: Error {
    case database(SQLiteError)
    /// The chain key cannot be used: what to do about it (names files, never the key).
    case key(String)
  }

  /// Opens the database (moving a corrupt or unkeyed one aside, with a note for the new log)
  /// and the chain key that continues it.
  private func openStore(notes: inout [AuditRecord]) throws(OpenFailure) -> (AuditStore, AuditChainKey) {
    let now = SystemWallClock().unixNanoseconds()
    var store: AuditStore? = nil
    do throws(SQLiteError) {
      do {
        store = try AuditStore(path: settings.path, readOnly: false)
        // A quick structural check: a damaged page makes this fail.
        try store!.database.execute("PRAGMA quick_check(1)")
      } catch  where error.isCorrupt {
        store = nil
        let moved = AuditStore.moveAside(settings.path, now: now / 1_000_000_000)
        movedAsideCount.wrappingAdd(1, ordering: .relaxed)
        faultRaw.store(AuditLogFault.corruptMovedAside.rawValue, ordering: .releasing)
        notes.append(note(now, "corrupt log moved aside to \(moved)"))
        store = try AuditStore(path: settings.path, readOnly: false)
      }
      if try store!.chainFormat() == .unkeyed {
        let head = store!.head
        store = nil  // closed (and checkpointed) before it is renamed
        let moved = AuditStore.moveAside(settings.path, now: now / 1_000_000_000, reason: "unkeyed")
        movedAsideCount.wrappingAdd(1, ordering: .relaxed)
        notes.append(note(now, "log written before the keyed chain moved aside to \(moved): records 1...\(head.sequence), unkeyed SHA-256 head \(head.text)"))
        store = try AuditStore(path: settings.path, readOnly: false)
      }
    } catch {
      throw .database(error)
    }
    let s = store!
    let keyPath = settings.chainKeyPath
    let format: AuditStore.ChainFormat
    do { format = try s.chainFormat() } catch { throw .database(error) }
    let key: AuditChainKey
    do throws(FileError) {
      if case .keyed(let id) = format {
        guard fileExists(keyPath) else {
          throw FileError(
            path: keyPath, reason: "missing, and \(settings.path) is chained with key \(id): restore that key file, or move the log aside to start a new one")
        }
        key = try AuditChainKey.load(keyPath)
        guard key.identifier == id else {
          throw FileError(
            path: keyPath,
            reason:
              "holds key \(key.identifier), but \(settings.path) is chained with key \(id): restore the right key file, or move the log aside to start a new one"
          )
        }
      } else {
        // A new log: the first start, or after moving a log aside. Only now may a key be made.
        key = fileExists(keyPath) ? try AuditChainKey.load(keyPath) : try AuditChainKey.generate(keyPath)
      }
    } catch {
      throw .key("audit chain key \(error)")
    }
    if format == .none {
      do { try s.beginKeyedChain(key) } catch { throw .database(error) }
    }
    return (s, key)
  }

  private func note(_ now: Int64, _ detail: String) -> AuditRecord {
    AuditRecord(
      sequence: 0, run: 0, eventSequence: 0, wallNanoseconds: now, kind: .state,
      code: Int64(FaultCode.logMovedAside.rawValue), detail: FaultCode.logMovedAside.name + ": " + detail)
  }

  private func setKeyProblem(_ problem: String) {
    let changed = keyProblemText.withLock { text in
      defer { text = problem }
      return text != problem
    }
    if changed && !problem.isEmpty {
      var line = "scangate: audit log: \(problem)\n"
      line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
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
    if let problem = keyProblem {
      w.write(": ")
      w.write(problem)
    }
    w.write("; chain head ")
    chainHead.write(into: &w)
    if movedAsideCount.load(ordering: .relaxed) > 0 {
      w.write("; a corrupt file was moved aside")
    }
  }

  public func requestRecent(_ count: Int, for ticket: SessionTicket) -> Bool {
    recentRequest.withLock { request in
      guard request == nil else { return false }
      request = (count, ticket)
      return true
    }
  }

  public func takeRecent() -> AuditRecentRead? {
    recentResult.withLock { r in
      defer { r = nil }; return r
    }
  }

  /// On the log's thread: serves a pending LOG request from the open store (or says none).
  private func serveRecent(_ store: AuditStore?) {
    guard let (count, ticket) = recentRequest.withLock({ $0 }) else { return }
    var read = AuditRecentRead(ticket: ticket, text: [], lines: 0)
    if let store {
      var lines: [[UInt8]] = []
      try? store.read(limit: Int64(count), newest: true) { record in
        let line = withUnsafeTemporaryAllocation(byteCount: 1_024, alignment: 1) { buffer in
          var w = ByteWriter(buffer)
          w.write("| ")
          writeSanitized(record.line, into: &w)
          w.newline()
          return w.overflowed ? Array("| (record too long to show)\n".utf8) : Array(w.written)
        }
        lines.append(line)
      }
      // The newest records that fit, oldest first.
      var total = 0
      var first = lines.count
      while first > 0 && total + lines[first - 1].count <= AuditRecentRead.bytesMax {
        first -= 1
        total += lines[first].count
      }
      for line in lines[first...] { read.text += line }
      read.lines = lines.count - first
    }
    recentResult.withLock { $0 = read }
    recentRequest.withLock { $0 = nil }
  }
}
