import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import Synchronization
import ScanTestSupport
import Testing

/// A wall clock a test steps while the writer runs (the monotonic clock stays real).
final class SteppedWallClock: WallClock, @unchecked Sendable {
  let offset = Atomic<Int64>(0)
  func step(seconds: Int64) { offset.store(seconds * 1_000_000_000, ordering: .relaxed) }
  func unixSeconds() -> Int64 { unixNanoseconds() / 1_000_000_000 }
  func unixNanoseconds() -> Int64 { SystemWallClock().unixNanoseconds() &+ offset.load(ordering: .relaxed) }
}

/// The audit log under faults (issue 27, docs/audit-log.md "Under faults"): a damaged page, a torn
/// or deleted WAL, records dropped while the disk fails, and a wall clock that jumps.
@Suite(.serialized) struct AuditFaultTests {
  let base = AuditLogTests()
  static let year: Int64 = 366 * 86_400

  /// A writer on `dir`/a.db committing every 20 ms (not started).
  func writer(_ dir: String, ringCapacity: Int = 1_024, _ configure: (inout AuditLogSettings) -> Void = { _ in }) -> (EventRing, AuditLog) {
    let ring = EventRing(capacity: ringCapacity)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    configure(&settings)
    return (ring, AuditLog(settings: settings, ring: ring))
  }

  /// Starts a writer, logs `decisions`, waits until they are committed and stops it (a clean stop:
  /// checkpointed into the database).
  func run(_ dir: String, decisions: Int) {
    let (ring, log) = writer(dir)
    log.start()
    for _ in 0..<decisions { ring.append(base.event(.decision)) }
    #expect(base.waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
  }

  func records(_ path: String) throws -> [AuditRecord] {
    var out: [AuditRecord] = []
    try AuditStore(path: path, readOnly: true).read { out.append($0) }
    return out
  }

  func copy(_ from: String, _ to: String) throws {
    try writeFileAtomically(to, try readWholeFile(from, maxBytes: 64 << 20), mode: 0o600)
  }

  // MARK: - Item 3 and 9: damage

  @Test("a damaged page quick_check reports as a row: a fault, the file moved aside whole, journaled, and named first in the new log")
  func damagedPage() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    run(dir, decisions: 300)
    let path = dir + "/a.db"
    let oldHead = try AuditStore(path: path, readOnly: true).head
    // A page in the middle of the records, one whose damage quick_check reports as a result row
    // (damage on some pages makes it fail outright instead, which the writer treats alike): the
    // newest record (the head) stays readable.
    let db = try SQLiteDatabase(path: path, readOnly: true)
    let pages = try db.prepare("SELECT page_count, page_size FROM pragma_page_count(), pragma_page_size()")
    _ = try pages.step()
    let (count, pageSize) = (Int(pages.int(0)), Int(pages.int(1)))
    #expect(try db.quickCheck().isEmpty)
    let fd = open(path, O_RDWR)
    defer { close(fd) }
    let garbage = [UInt8](repeating: 0xA5, count: pageSize)
    var found: [String] = []
    for page in (count / 2)..<(count - 1) {
      var original = [UInt8](repeating: 0, count: pageSize)
      let offset = off_t((page - 1) * pageSize)
      #expect(original.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, offset) } == pageSize)
      #expect(garbage.withUnsafeBytes { pwrite(fd, $0.baseAddress, pageSize, offset) } == pageSize)
      // SQLite 3.40 (bookworm) words it "Page 38: …", 3.46 (trixie) "Tree 2 page 38: …".
      if let rows = try? SQLiteDatabase(path: path, readOnly: true).quickCheck(), rows.first?.lowercased().contains("page \(page):") == true {
        found = rows
        break
      }
      _ = original.withUnsafeBytes { pwrite(fd, $0.baseAddress, pageSize, offset) }
    }
    #expect(!found.isEmpty, "no page in the second half of the file whose damage quick_check reports as a row")
    let damaged = try readWholeFile(path, maxBytes: 64 << 20)

    let (ring, log) = writer(dir)
    log.start()
    ring.append(base.event(.decision))
    #expect(base.waitUntil { log.fault == .corruptMovedAside }, "the loop must see the fault")
    #expect(base.waitUntil { log.committedSequence == ring.lastSequence })
    let status = base.status(log)
    #expect(status.contains("DAMAGED: \(path) moved aside to \(path).corrupt-"), "\(status)")
    #expect(base.waitUntil { log.fault == .none }, "the fault clears once reported")
    log.stop()
    let moved = try #require(try listDirectory(dir).first { $0.hasPrefix("a.db.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
    #expect(try readWholeFile(dir + "/" + moved, maxBytes: 64 << 20) == damaged, "the damaged file is kept whole")
    let all = try records(path)
    let note = try #require(all.prefix(3).first { $0.code == Int64(FaultCode.logMovedAside.rawValue) })
    #expect(note.kind == .fault)
    #expect(note.detail.hasPrefix("log-moved-aside: corrupt log moved aside to \(dir)/\(moved) (\(path): "), "\(note.detail)")
    #expect(note.detail.contains(found.first ?? "?") && note.detail.contains("committed through record \(oldHead.sequence)"))
    #expect(note.detail.contains("(head \(oldHead.text))"), "\(note.detail)")
    #expect(try base.verification(path).firstBreak == nil)
  }

  // MARK: - Item 3: a damaged, torn or deleted WAL

  @Test("a torn or deleted WAL: the lost records are counted, recorded as a cut, never reused, and verify says so", arguments: ["torn", "deleted"])
  func walCut(_ damage: String) throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    run(dir, decisions: 50)
    // A second run writes into the WAL; an image of its files taken while it is idle is a crash.
    let crash = dir + "/crash"
    mkdir(crash, 0o700)
    let (ring, log) = writer(dir)
    log.start()
    for _ in 0..<15 {  // in several commits
      for _ in 0..<10 { ring.append(base.event(.decision)) }
      usleep(40_000)
    }
    #expect(base.waitUntil { log.committedSequence == ring.lastSequence })
    usleep(100_000)
    for name in ["a.db", "a.db-wal", "a.db.key", "a.db.committed"] { try copy(dir + "/" + name, crash + "/" + name) }
    log.stop()
    let committed = try #require(try AuditHeadMark.read(crash + "/a.db.committed"))
    #expect(committed == AuditHeadMark.Head(logID: committed.logID, sequence: log.chainHead.sequence, value: committed.value))
    let wal = crash + "/a.db-wal"
    if damage == "torn" {
      var st = stat()
      stat(wal, &st)
      #expect(truncate(wal, st.st_size / 2 + 1_000) == 0)
    } else {
      #expect(unlink(wal) == 0)
    }
    let survived = try AuditStore(path: crash + "/a.db", readOnly: true).head.sequence
    let gone = committed.sequence - survived
    #expect(gone > 0 && survived >= 50, "the damage lost nothing: \(survived) of \(committed.sequence)")
    // Before the writer opens it again, `log verify` says the log was cut (the mark, outside the database).
    let (code, before) = runCommand([scangateBinary, "log", "verify", "--db", crash + "/a.db"])
    #expect(code == 1 && before.contains("CUT") && before.contains("committed mark"), "\(before)")

    let (ring2, log2) = writer(crash)
    log2.start()
    for _ in 0..<5 { ring2.append(base.event(.decision)) }
    #expect(base.waitUntil { log2.fault == .logCut }, "the loop must see the fault")
    #expect(base.waitUntil { log2.committedSequence == ring2.lastSequence })
    #expect(log2.lostRecords == gone)
    let status = base.status(log2)
    #expect(status.contains("\(gone) lost") && status.contains("LOG CUT: records \(survived + 1)...\(committed.sequence) lost"), "\(status)")
    log2.stop()
    let all = try records(crash + "/a.db")
    #expect(!all.contains { $0.sequence > survived && $0.sequence <= committed.sequence }, "a sequence number was reused")
    let cut = try #require(all.first { $0.sequence == committed.sequence + 1 })
    #expect(cut.kind == .recordsLost && cut.code == gone && AuditStore.recordedCut(cut) == (survived + 1)...committed.sequence)
    #expect(all.last!.sequence == committed.sequence + 6 && all.last!.kind == .decision)
    let v = try base.verification(crash + "/a.db")
    #expect(v.firstBreak == nil && v.recordedCuts.map(\.sequence) == [committed.sequence + 1])
    let (ok, after) = runCommand([scangateBinary, "log", "verify", "--db", crash + "/a.db"])
    #expect(ok == 0 && after.contains("OK,") && after.contains("RECORDED LOSS at record \(committed.sequence + 1)"), "\(after)")
    // A gap nobody recorded is still a break.
    try AuditStore(path: crash + "/a.db", readOnly: false).database.execute("DELETE FROM events WHERE seq = \(committed.sequence + 1)")
    #expect(try base.verification(crash + "/a.db").firstBreak?.reason.contains("sequence gap") == true)
  }

  @Test("a cut record naming another gap, or one forged without the key, does not bridge a gap")
  func forgedCut() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let (store, key) = try base.keyedStore(dir)
    try store.append(base.records(10), key: key)
    // Records 11...20 are "lost"; the record at 21 names 12...20 (not the gap).
    let wrong = AuditStore.cutRecord(missing: 12...20, why: "test", run: 1, wallNanoseconds: 0)
    #expect(AuditStore.recordedCut(wrong) == 12...20)
    let other = [UInt8](repeating: 9, count: 32).withUnsafeBytes { AuditChainKey(bytes: $0) }
    try store.append([AuditStore.cutRecord(missing: 11...20, why: "test", run: 1, wallNanoseconds: 0)], key: other)
    // Appended at 11 (no skip): move it to 21 by hand, as someone editing the file would.
    try store.database.execute("UPDATE events SET seq = 21 WHERE seq = 11")
    let v = try base.verification(dir + "/a.db")
    #expect(v.firstBreak?.sequence == 21 && v.firstBreak?.reason.contains("chain value mismatch") == true, "\(String(describing: v.firstBreak))")
    let state = AuditRecord(sequence: 1, run: 1, eventSequence: 0, wallNanoseconds: 0, kind: .state, detail: "log-cut: records 1...2 x")
    #expect(AuditStore.recordedCut(state) == nil)
  }

  @Test("the committed mark: a torn slot falls back to the other; both damaged is said, never read as zero")
  func markSlots() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let path = dir + "/a.db.committed"
    let mark = try AuditHeadMark(path: path)
    #expect(mark.loaded == nil && mark.problem == nil)
    let h1 = AuditHeadMark.Head(logID: "00112233445566778899aabbccddeeff", sequence: 41, value: [UInt8](repeating: 1, count: 32))
    let h2 = AuditHeadMark.Head(logID: h1.logID, sequence: 42, value: [UInt8](repeating: 2, count: 32))
    #expect(mark.write(h1) && mark.write(h2))
    #expect(try AuditHeadMark.read(path) == h2 && AuditHeadMark(path: path).loaded == h2)
    var st = stat()
    stat(path, &st)
    #expect(st.st_mode & 0o777 == 0o600 && st.st_size == 2 * Int(AuditHeadMark.slotBytes))
    // h2 went to slot 0 (generation 2): tear it.
    let fd = open(path, O_WRONLY)
    #expect(pwrite(fd, "torn", 4, 30) == 4)
    #expect(try AuditHeadMark.read(path) == h1)
    #expect(pwrite(fd, "torn", 4, 96 + 30) == 4)
    close(fd)
    #expect(throws: FileError.self) { try AuditHeadMark.read(path) }
    #expect(try AuditHeadMark(path: path).problem?.contains("damaged") == true)
  }

  @Test("a mark naming a sequence no log reaches (a forged slot with a sound checksum) is damage, never a cut to record")
  func markOutOfRange() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let path = dir + "/a.db.committed"
    let mark = try AuditHeadMark(path: path)
    let sound = AuditHeadMark.Head(logID: "00112233445566778899aabbccddeeff", sequence: 7, value: [UInt8](repeating: 1, count: 32))
    let forged = AuditHeadMark.Head(logID: sound.logID, sequence: .max, value: [UInt8](repeating: 2, count: 32))
    #expect(mark.write(sound) && mark.write(forged))
    // The newer slot is out of range: the older one is the mark (Int64.max + 1 trapped the writer).
    #expect(try AuditHeadMark.read(path) == sound)
  }

  // MARK: - Item 7: lost records counted at the drop, the fault never dropped

  @Test("records dropped while the log cannot write are counted at once, and the fault record is kept")
  func lostAtDrop() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let configure: (inout AuditLogSettings) -> Void = { $0.chainKeyFile = dir + "/chain.key" }
    let (ring1, first) = writer(dir, configure)
    first.start()
    for _ in 0..<5 { ring1.append(base.event(.decision)) }
    #expect(base.waitUntil { first.committedSequence == ring1.lastSequence })
    first.stop()
    #expect(rename(dir + "/chain.key", dir + "/kept.key") == 0)  // the log cannot write until it is back
    let (ring, log) = writer(dir, ringCapacity: 256, configure)
    log.start()
    ring.append(base.event(.fault, FaultCode.logWriteFailed.rawValue))  // what the loop records first
    #expect(base.waitUntil { log.fault == .chainKey })
    let decisions = 2_000
    for _ in 0..<(decisions / 100) {
      for _ in 0..<100 { ring.append(base.event(.decision)) }
      usleep(40_000)  // the writer takes them into its bounded queue
    }
    let kept = log.pendingMax
    #expect(base.waitUntil { log.lostRecords >= Int64(decisions + 1 - kept) }, "lost: \(log.lostRecords)")
    #expect(log.fault == .chainKey && base.status(log).contains("\(log.lostRecords) lost"))
    let lost = log.lostRecords
    #expect(rename(dir + "/kept.key", dir + "/chain.key") == 0)
    #expect(base.waitUntil { log.fault == .none && log.committedSequence == ring.lastSequence })
    log.stop()
    let all = try records(dir + "/a.db").filter { $0.run == 2 }
    #expect(all.contains { $0.kind == .fault && $0.code == Int64(FaultCode.logWriteFailed.rawValue) }, "the fault record was dropped")
    let lostRecord = try #require(all.first { $0.kind == .recordsLost })
    #expect(lostRecord.code == lost && log.lostRecords == lost)
    #expect(Int64(all.filter { $0.kind == .decision }.count) + lost == Int64(decisions))
  }

  // MARK: - Item 5: a wall clock that jumps

  @Test("record ages are judged at the earlier of the clock and the floor; no floor, no pruning by age")
  func ageCutoff() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let (store, key) = try base.keyedStore(dir)
    let now = SystemWallClock().unixNanoseconds()
    var batch = base.records(100)
    for i in batch.indices { batch[i].wallNanoseconds = now - Int64(100 - i) * 1_000_000_000 }
    try store.append(batch, key: key)
    let floor = now / 1_000_000_000, year = Self.year * 1_000_000_000
    // A clock a year ahead of the floor: nothing is old.
    let ahead = AuditStore.ageCutoff(wallNanoseconds: now + year, floorSeconds: floor, retainDays: 365)
    #expect(try store.prune(.init(keepRecords: 1_000, olderThan: ahead)) == 0)
    // A clock a year behind: nothing is old either (records written then carry its times).
    let behind = AuditStore.ageCutoff(wallNanoseconds: now - year, floorSeconds: floor, retainDays: 365)
    #expect(behind < now - year - 364 * 86_400 * 1_000_000_000)
    #expect(try store.prune(.init(keepRecords: 1_000, olderThan: behind)) == 0)
    #expect(AuditStore.ageCutoff(wallNanoseconds: now, floorSeconds: 0, retainDays: 1) == .min)
    // On the true time, records older than the limit go.
    let trueCutoff = AuditStore.ageCutoff(wallNanoseconds: now, floorSeconds: floor, retainDays: 0)
    #expect(try store.prune(.init(keepRecords: 1_000, olderThan: trueCutoff - 50_000_000_000)) == 50)
  }

  @Test("a clock a year ahead prunes nothing by age; a year behind does not stop pruning by count")
  func pruneOnJumpedClock() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let (ring, log) = writer(dir, ringCapacity: 4_096) { $0.retainRecords = 100 }
    let wall = SteppedWallClock()
    log.wall = wall
    log.time = TrustedTime(floor: SystemWallClock().unixSeconds())  // a reader synchronised for a while
    log.pruneIntervalMilliseconds = 200
    log.start()
    defer { log.stop() }
    func count() -> Int64 {
      guard let q = try? SQLiteDatabase(path: dir + "/a.db", readOnly: true).prepare("SELECT COUNT(*) FROM events"), (try? q.step()) == true
      else { return -1 }
      return q.int(0)
    }
    for _ in 0..<300 { ring.append(base.event(.decision)) }
    #expect(base.waitUntil { log.committedSequence == ring.lastSequence && count() <= 101 }, "\(count())")
    wall.step(seconds: Self.year)
    for _ in 0..<50 { ring.append(base.event(.decision)) }
    #expect(base.waitUntil { log.committedSequence == ring.lastSequence })
    usleep(1_000_000)  // five prune ticks
    #expect(count() >= 100, "pruned by age on a clock a year ahead: \(count()) left")
    wall.step(seconds: -Self.year)
    usleep(300_000)
    for _ in 0..<300 { ring.append(base.event(.decision)) }
    #expect(base.waitUntil(5) { log.committedSequence == ring.lastSequence && count() <= 101 }, "pruning stopped: \(count()) records")
  }

  @Test("the reopen retry runs on the monotonic clock: a clock set back while the log fails does not stall it")
  func reopenOnJumpedClock() throws {
    let dir = temporaryDirectory("fault")
    defer { removeTree(dir) }
    let configure: (inout AuditLogSettings) -> Void = { $0.chainKeyFile = dir + "/chain.key" }
    let (ring1, first) = writer(dir, configure)
    first.start()
    ring1.append(base.event(.decision))
    #expect(base.waitUntil { first.committedSequence == ring1.lastSequence })
    first.stop()
    #expect(rename(dir + "/chain.key", dir + "/kept.key") == 0)
    let (ring, log) = writer(dir, configure)
    let wall = SteppedWallClock()
    log.wall = wall
    log.start()
    defer { log.stop() }
    ring.append(base.event(.decision))
    #expect(base.waitUntil { log.fault == .chainKey })
    wall.step(seconds: -Self.year)
    usleep(200_000)
    #expect(rename(dir + "/kept.key", dir + "/chain.key") == 0)
    #expect(base.waitUntil(5) { log.fault == .none && log.committedSequence == ring.lastSequence }, "\(base.status(log))")
  }
}
