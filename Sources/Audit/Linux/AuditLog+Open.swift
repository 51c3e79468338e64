import Glibc
import ScanCore
import ScanPlatform
import Synchronization

/// Opening the log: the database (a damaged or unkeyed one moved aside), its chain key, the
/// committed mark beside it, and a cut that mark shows (docs/audit-log.md, "Under faults").
/// The writer's thread only.
extension AuditLog {
  // MARK: - Damage, cuts and the committed mark (docs/audit-log.md, "Under faults")

  /// The committed mark beside the log, opened again with every open of the log (a log folder
  /// made again gets a new one). One that cannot be opened or read is said in the journal; the
  /// log writes on without it.
  func openMark() -> AuditHeadMark? {
    let path = AuditHeadMark.path(forLog: settings.path)
    do {
      let opened = try AuditHeadMark(path: path)
      if let problem = opened.problem { identity.journal("committed mark \(path): \(problem)") }
      return opened
    } catch {
      identity.journal("committed mark \(error): records lost with a damaged WAL cannot be found this run")
      return nil
    }
  }

  /// After a commit: the new head becomes the mark (a pwrite per commit batch; the writer syncs
  /// it every `markSyncNanoseconds` and at the stop, `sync: true` at once).
  func markCommitted(_ store: AuditStore, sync: Bool = false) {
    mark?.write(AuditHeadMark.Head(logID: identity.logID ?? "", sequence: store.lastSequence, value: store.lastHash), sync: sync)
  }

  /// At open: a log that ends before its committed mark lost records N+1...M after they were
  /// committed (a damaged, torn or deleted WAL; SQLite opens what is left without a word). Those
  /// numbers were shown, published and acknowledged, so they are never used again: record M+1,
  /// chained to record N, says they are not in this log; the loss is counted, journaled and on
  /// STATUS (a fault held long enough for the loop's fault event), and the log goes on from M+2.
  func recordCut(_ store: AuditStore, key: AuditChainKey, run: Int64, now: Int64) throws(SQLiteError) {
    guard let mark, let head = mark.loaded, head.logID == identity.logID ?? "", store.pendingIdentity == nil else { return }
    let last = store.lastSequence
    guard head.sequence > last else {
      let q = try store.database.prepare("SELECT hash FROM events WHERE seq = ?")
      q.bind(1, head.sequence)
      if try q.step(), q.bytes(0) != head.value {
        let text = "record \(head.sequence) is not the one the committed mark (\(mark.path)) names: the file was replaced or re-chained"
        addNotice("; MARK MISMATCH: " + text)
        identity.journal(text)
      }
      return
    }
    let missing = (last + 1)...head.sequence
    let why =
      "the log ended at record \(last), but its committed mark (\(mark.path)) says record \(head.sequence) was committed: the WAL was damaged, torn or deleted"
    try store.appendCut(AuditStore.cutRecord(missing: missing, why: why, run: run, wallNanoseconds: now), missing: missing, key: key)
    markCommitted(store, sync: true)
    lostCount.wrappingAdd(head.sequence - last, ordering: .relaxed)
    writtenCount.wrappingAdd(1, ordering: .relaxed)
    faultRaw.store(AuditLogFault.logCut.rawValue, ordering: .releasing)
    let range = "records \(missing.lowerBound)...\(missing.upperBound)"
    addNotice("; LOG CUT: \(range) lost, recorded as record \(head.sequence + 1)")
    identity.journal(
      "FAULT log-cut: \(range) lost (\(head.sequence - last)): \(why); record \(head.sequence + 1) says so and the log goes on after it")
  }

  /// A damaged log moved aside: the journal line (both paths, what SQLite found, how far the old
  /// log had committed by its mark), the STATUS notice, and the fault record that starts the new log.
  private func damagedMovedAside(_ moved: String, damage: String, previous: AuditHeadMark.Head?, now: Int64) -> AuditRecord {
    var detail = "corrupt log moved aside to \(moved) (\(settings.path): \(damage))"
    if let previous, previous.sequence > 0 {
      let head = AuditChainHead(sequence: previous.sequence, value: previous.value.withUnsafeBytes { Digest(bytes: $0) })
      detail += "; it had committed through record \(previous.sequence)"
      detail += (previous.logID.isEmpty ? "" : " of log \(previous.logID)") + " (head \(head.text))"
    }
    addNotice("; DAMAGED: \(settings.path) moved aside to \(moved)")
    identity.journal("FAULT log-damaged: \(detail); the file is kept, never deleted, and a new log is started")
    return AuditRecord(
      sequence: 0, run: 0, eventSequence: 0, wallNanoseconds: now, kind: .fault,
      code: Int64(FaultCode.logMovedAside.rawValue), detail: FaultCode.logMovedAside.name + ": " + detail)
  }

  /// Adds to what STATUS says about damage and cuts this run (the newest kept when it grows long).
  private func addNotice(_ text: String) {
    integrityNotice.withLock { notice in
      notice = notice.utf8.count + text.utf8.count > 600 ? "; (earlier notices in the journal)" + text : notice + text
    }
  }

  // MARK: - The database and its chain key

  enum OpenFailure: Error {
    case database(SQLiteError)
    /// The chain key cannot be used: what to do about it (names files, never the key).
    case key(String)
  }

  /// A log behind its acknowledgement (`behindAcknowledgement`): a recorded fault and a new log
  /// identity, never reuse of its sequence numbers. `store` is closed, the file moved aside, and
  /// a new one opened.
  func moveAsideIfBehind(_ store: inout AuditStore?, now: Int64) throws(SQLiteError) {
    // No binding of the open store outlives the check: `store = nil` closes the file before it is
    // renamed (SQLite removes its -wal and -shm by name when the connection closes).
    guard let behind = store.flatMap({ behindAcknowledgement($0) }) else { return }
    store = nil
    let moved = AuditStore.moveAside(settings.path, now: now / 1_000_000_000, reason: "behind")
    movedAsideCount.wrappingAdd(1, ordering: .relaxed)
    identity.vanished =
      "log \(behind.id) at \(settings.path) ends at record \(behind.newest), but the fleet's broker acknowledged record "
      + "\(behind.acked) of it (\(behind.path)): an older copy was put back; moved aside to \(moved), never continued "
      + "(records \(behind.newest + 1)...\(behind.acked) were published once and are not in it)"
    store = try AuditStore(path: settings.path, readOnly: false)
  }

  /// Opens the database (moving a corrupt or unkeyed one aside, with a note for the new log)
  /// and the chain key that continues it.
  func openStore(notes: inout [AuditRecord]) throws(OpenFailure) -> (AuditStore, AuditChainKey) {
    let now = SystemWallClock().unixNanoseconds()
    prepareLogFolder(now: now)
    let movedBefore = movedAsideCount.load(ordering: .relaxed)
    var store: AuditStore? = nil
    do throws(SQLiteError) {
      do throws(SQLiteError) {
        store = try AuditStore(path: settings.path, readOnly: false)
        // A structural check whose result rows are read: SQLite reports damage as rows.
        let damage = try store!.database.quickCheck()
        if !damage.isEmpty { throw SQLiteError.damaged(damage) }
      } catch  where error.isCorrupt {
        store = nil
        let previous = try? AuditHeadMark.read(AuditHeadMark.path(forLog: settings.path))
        let moved = AuditStore.moveAside(settings.path, now: now / 1_000_000_000)
        movedAsideCount.wrappingAdd(1, ordering: .relaxed)
        faultRaw.store(AuditLogFault.corruptMovedAside.rawValue, ordering: .releasing)
        notes.append(damagedMovedAside(moved, damage: error.message, previous: previous ?? nil, now: now))
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
      try moveAsideIfBehind(&store, now: now)
    } catch {
      throw .database(error)
    }
    let s = store!
    let keyPath = settings.chainKeyPath
    let format: AuditStore.ChainFormat
    do { format = try s.chainFormat() } catch { throw .database(error) }
    if case .keyed = format, let id = try? s.identity().id { identity.setCurrent(id) }  // known before its key is
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
        // A new log: the first start, or after moving a log aside. Only now may a key be made
        // (or the key of the log this writer had open, whose key file went with it, put back).
        key = fileExists(keyPath) ? try AuditChainKey.load(keyPath) : try newLogKey(keyPath)
      }
    } catch {
      throw .key("audit chain key \(error)")
    }
    do {
      let movedAside = movedAsideCount.load(ordering: .relaxed) != movedBefore
      if let missing = try settleIdentity(s, format: format, key: key, movedAside: movedAside, now: now) {
        notes.append(missing)
      }
    } catch {
      throw .database(error)
    }
    return (s, key)
  }

  private func note(_ now: Int64, _ detail: String) -> AuditRecord {
    AuditRecord(
      sequence: 0, run: 0, eventSequence: 0, wallNanoseconds: now, kind: .state,
      code: Int64(FaultCode.logMovedAside.rawValue), detail: FaultCode.logMovedAside.name + ": " + detail)
  }
}
