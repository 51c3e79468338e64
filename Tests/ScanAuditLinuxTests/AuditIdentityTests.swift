import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// Which log (docs/audit-log.md, "Which log: the log id, a missing log"): the log id in meta and
/// in the chain's first record, the fleet state that belongs to another log, and a log that is
/// gone — at start, or while the writer has it open.
@Suite(.serialized) struct AuditIdentityTests {
  func event(_ kind: EventKind, _ code: UInt16 = 0) -> ScanEvent {
    var e = ScanEvent()
    e.kind = kind
    e.code = code
    e.wallNanoseconds = SystemWallClock().unixNanoseconds()
    if kind == .decision { Array("ALICE".utf8).withUnsafeBytes { e.setPayload($0) } }
    return e
  }

  func waitUntil(_ seconds: Int = 10, _ condition: () -> Bool) -> Bool {
    for _ in 0..<(seconds * 100) {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }

  /// A writer of `<dir>/a.db` whose state directory is `dir` (as the service sets it up).
  func writer(_ dir: String) -> (EventRing, AuditLog) {
    let ring = EventRing(capacity: 256)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    let log = AuditLog(settings: settings, ring: ring)
    log.identity.stateDirectory = dir
    return (ring, log)
  }

  /// Runs a writer on `dir` for `decisions` decisions and stops it.
  func run(_ dir: String, decisions: Int) -> AuditLog {
    let (ring, log) = writer(dir)
    log.start()
    for _ in 0..<decisions { ring.append(event(.decision)) }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    return log
  }

  func all(_ path: String) throws -> [AuditRecord] {
    var out: [AuditRecord] = []
    try AuditStore(path: path, readOnly: true).read { out.append($0) }
    return out
  }

  func status(_ log: AuditLog) -> String {
    withUnsafeTemporaryAllocation(byteCount: 2_048, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      log.writeStatus(into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
  }

  func metaLogID(_ path: String) throws -> String? { try AuditStore(path: path, readOnly: true).identity().id }

  @Test("a new log's first record names its log id, which meta and the log-id file keep; a restart keeps it")
  func logIDInFirstRecord() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    let first = run(dir, decisions: 5)
    let records = try all(dir + "/a.db")
    let id = try #require(try metaLogID(dir + "/a.db"))
    #expect(id.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    #expect(records.count == 6 && records[0].sequence == 1 && records[0].kind == .state)
    #expect(records[0].code == Int64(FaultCode.logIdentity.rawValue) && records[0].detail == "log-id: log \(id)", "\(records[0].detail)")
    #expect(records.dropFirst().allSatisfy { $0.kind == .decision })
    #expect(status(first).contains("a.db (log \(id))"), "\(status(first))")
    #expect(String(decoding: try readWholeFile(dir + "/log-id", maxBytes: 256), as: UTF8.self).hasPrefix("scangate-log \(id) key "))
    // A second start continues the same log: same id, no second identity record.
    _ = run(dir, decisions: 3)
    let again = try all(dir + "/a.db")
    #expect(try metaLogID(dir + "/a.db") == id)
    #expect(again.count == 9 && again.filter { $0.code == Int64(FaultCode.logIdentity.rawValue) && $0.kind == .state }.count == 1)
    let key = try AuditChainKey.load(dir + "/a.db.key")
    let v = try AuditStore(path: dir + "/a.db", readOnly: true).verify(key: key)
    #expect(v.firstBreak == nil && v.logID == id && v.identitySequence == 1 && v.missingLogs.isEmpty)
    // Two logs never share an id.
    let other = temporaryDirectory("identity")
    defer { removeTree(other) }
    _ = run(other, decisions: 1)
    #expect(try metaLogID(other + "/a.db") != id)
  }

  @Test("the log id is covered by the chain: another id in meta is found by verify")
  func logIDCovered() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    _ = run(dir, decisions: 3)
    let id = try #require(try metaLogID(dir + "/a.db"))
    let forged = String(repeating: "0", count: 32)
    let store = try AuditStore(path: dir + "/a.db", readOnly: false)
    try store.database.execute("UPDATE meta SET value = '\(forged)' WHERE key = 'log_id'")
    let v = try store.verify(key: AuditChainKey.load(dir + "/a.db.key"))
    #expect(v.firstBreak?.sequence == 1 && v.firstBreak?.reason.contains("names log \(id)") == true, "\(String(describing: v.firstBreak))")
    let (code, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db"])
    #expect(code == 1 && output.contains("BROKEN at record 1"), "\(output)")
  }

  @Test("a keyed log made before log ids is given one at its next start; the record follows its records")
  func adoptedID() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    do {
      let store = try AuditStore(path: dir + "/a.db", readOnly: false)
      let key = try AuditChainKey.generate(dir + "/a.db.key")
      try store.beginKeyedChain(key)  // no log id: as the version before log ids made it
      let r = AuditRecord(sequence: 0, run: 1, eventSequence: 1, wallNanoseconds: 1, kind: .decision, verdict: .granted)
      try store.append([r, r, r], key: key)
      #expect(try store.identity().id == nil)
    }
    _ = run(dir, decisions: 2)
    let records = try all(dir + "/a.db")
    let identity = try AuditStore(path: dir + "/a.db", readOnly: true).identity()
    let id = try #require(identity.id)
    #expect(records.count == 6 && records[3].detail.hasPrefix("log-id: log \(id); the records before it (through 3)"), "\(records.map(\.detail))")
    #expect(identity.adoptedThrough == 3 && identity.recordSequence == 4)
    #expect(try AuditStore(path: dir + "/a.db", readOnly: true).verify(key: AuditChainKey.load(dir + "/a.db.key")).firstBreak == nil)
    // A state file written before log ids is this log's (its acked is within what the log held).
    let legacy = FleetState.Entry(logID: nil, acked: 3)
    #expect(FleetLink.startingPoint(legacy, log: id, identity: identity).acked == 3)
  }

  @Test("a fleet state file about another log is not used: the link starts from this log's first record and says so")
  func fleetStateOfAnotherLog() throws {
    let this = AuditLogID.make(), other = AuditLogID.make()
    // The state file's form, old and new.
    #expect(try FleetState.parseEntry(Array("scangate-fleet log \(other) acked 175\n".utf8)) == .init(logID: other, acked: 175))
    #expect(try FleetState.parseEntry(Array("scangate-fleet acked 175\n".utf8)) == .init(logID: nil, acked: 175))
    #expect(throws: FileError.self) { try FleetState.parseEntry(Array("scangate-fleet log XYZ acked 1\n".utf8)) }
    #expect(throws: FileError.self) { try FleetState.parseEntry(Array("scangate-fleet log \(other) acked\n".utf8)) }
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    try FleetState.store(dir + "/s", acked: 42, logID: this)
    #expect(try FleetState.loadEntry(dir + "/s") == .init(logID: this, acked: 42))
    let fresh = AuditStore.Identity(id: this, recordSequence: 1, adoptedThrough: nil)
    // Its own log: resume after the acknowledged record.
    #expect(FleetLink.startingPoint(.init(logID: this, acked: 42), log: this, identity: fresh) == (42, nil))
    // Another log's sequence: from the first record, with a reason naming both logs.
    let start = FleetLink.startingPoint(.init(logID: other, acked: 175), log: this, identity: fresh)
    #expect(start.acked == 0 && start.note?.contains(other) == true && start.note?.contains(this) == true)
    // A state file from before log ids, and a log made after it: not trusted either.
    let legacy = FleetLink.startingPoint(.init(logID: nil, acked: 175), log: this, identity: fresh)
    #expect(legacy.acked == 0 && legacy.note != nil)
    // Nothing acknowledged yet: nothing to say.
    #expect(FleetLink.startingPoint(.init(logID: nil, acked: 0), log: this, identity: fresh) == (0, nil))
  }

  @Test("a database gone at start while the state directory's log-id file names it is a log-missing fault, never a quiet fresh start")
  func missingAtStart() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    _ = run(dir, decisions: 4)
    let oldID = try #require(try metaLogID(dir + "/a.db"))
    let oldKey = try AuditChainKey.load(dir + "/a.db.key").identifier
    for suffix in ["", "-wal", "-shm"] { unlink(dir + "/a.db" + suffix) }
    let (ring, log) = writer(dir)
    log.start()
    ring.append(event(.decision))
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    #expect(status(log).contains("FAULT log-missing: log \(oldID)"), "\(status(log))")
    log.stop()
    let records = try all(dir + "/a.db")
    let newID = try #require(try metaLogID(dir + "/a.db"))
    #expect(newID != oldID)
    #expect(records.count == 3 && records[0].detail == "log-id: log \(newID)")
    #expect(records[1].kind == .fault && records[1].code == Int64(FaultCode.logMissing.rawValue))
    #expect(records[1].detail.hasPrefix("log-missing: log \(oldID) is gone: there is no database at \(dir)/a.db"), "\(records[1].detail)")
    #expect(records[1].detail.contains("this is a new log, \(newID)"))
    // The key survived: the new chain is under it (no new key was made).
    #expect(try AuditChainKey.load(dir + "/a.db.key").identifier == oldKey)
    let (code, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db"])
    #expect(code == 0 && output.contains("log \(newID)") && output.contains("log-missing: log \(oldID)"), "\(output)")
    // The fleet's acknowledged sequence alone is evidence too.
    for suffix in ["", "-wal", "-shm"] { unlink(dir + "/a.db" + suffix) }
    unlink(dir + "/log-id")
    try FleetState.store(dir + "/a.db.fleet", acked: 9, logID: newID)
    _ = run(dir, decisions: 1)
    let third = try all(dir + "/a.db")
    #expect(third[1].detail.hasPrefix("log-missing: log \(newID) is gone") && third[1].detail.contains("acknowledged records through 9"))
  }

  @Test("a first start (nothing names a log) is no fault; a provisioned key alone is no evidence")
  func firstStart() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    _ = try AuditChainKey.generate(dir + "/a.db.key")
    let log = run(dir, decisions: 2)
    #expect(!status(log).contains("FAULT"), "\(status(log))")
    #expect(try all(dir + "/a.db").allSatisfy { $0.kind != .fault })
  }

  @Test("the log's directory deleted while the writer runs: the fault shows within seconds; a new log, under the same key, keeps every later record")
  func directoryDeletedWhileRunning() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    let (ring, log) = writer(dir)
    log.start()
    for _ in 0..<10 { ring.append(event(.decision)) }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    let oldID = try #require(log.identity.logID)
    let oldKey = try AuditChainKey.load(dir + "/a.db.key").identifier
    removeTree(dir)
    #expect(!isDirectory(dir))
    // Idle: found by the half-second check.
    #expect(waitUntil(5) { status(log).contains("FAULT log-missing: log \(oldID)") }, "\(status(log))")
    for _ in 0..<7 { ring.append(event(.decision)) }
    #expect(waitUntil { log.committedSequence == ring.lastSequence && log.identity.logID != nil })
    let newID = try #require(log.identity.logID)
    #expect(newID != oldID && isDirectory(dir))
    log.stop()
    let records = try all(dir + "/a.db")
    #expect(records[0].detail == "log-id: log \(newID)")
    #expect(records[1].kind == .fault && records[1].detail.contains("log \(oldID) at \(dir)/a.db was deleted with its directory"), "\(records[1].detail)")
    #expect(records.filter { $0.kind == .decision }.count == 7)
    #expect(try AuditChainKey.load(dir + "/a.db.key").identifier == oldKey)
    #expect(try AuditStore(path: dir + "/a.db", readOnly: true).verify(key: AuditChainKey.load(dir + "/a.db.key")).firstBreak == nil)
  }

  @Test("the database moved away while the writer runs, records arriving: none goes to the moved file after the move; the new log has them all")
  func movedWhileWriting() throws {
    let dir = temporaryDirectory("identity")
    defer { removeTree(dir) }
    let (ring, log) = writer(dir)
    log.start()
    ring.append(event(.decision))
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    var appended = 1
    // Keep deciding while the file is renamed underneath the writer.
    for i in 0..<200 {
      ring.append(event(.decision))
      appended += 1
      if i == 100 {
        for suffix in ["", "-wal", "-shm"] { rename(dir + "/a.db" + suffix, dir + "/moved.db" + suffix) }
      }
      usleep(2_000)
    }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let old = try all(dir + "/moved.db").filter { $0.kind == .decision }.count
    let new = try all(dir + "/a.db").filter { $0.kind == .decision }.count
    // A batch committed just as the file went may be in both files (written again to the new
    // log), never in neither.
    #expect(old + new >= appended && new >= appended - old, "\(old) + \(new) of \(appended)")
    #expect(try all(dir + "/a.db")[1].detail.contains("was deleted or moved away while in use"))
  }
}
