import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The audit log on real SQLite files: the chain, tampering, pruning, faults, and crashes.
@Suite(.serialized) struct AuditLogTests {
  func records(_ n: Int, run: Int64 = 1) -> [AuditRecord] {
    var out: [AuditRecord] = []
    for i in 0..<n {
      let time: Int64 = 1_796_000_000_000_000_000 + Int64(i) * 1_000_000_000
      let granted = i % 2 == 0
      out.append(
        AuditRecord(
          sequence: 0, run: run, eventSequence: Int64(i + 1), wallNanoseconds: time,
          kind: .decision, verdict: granted ? .granted : .deniedUnknown, format: "qr",
          variant: "upright", tag: String(repeating: "ab", count: 32),
          label: granted ? "alice" : "", edgeMicroseconds: 900))
    }
    return out
  }

  /// A fixed test key (hex), written to `<dir>/a.db.key` with mode 0600.
  static let keyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

  func writeKey(_ dir: String, _ hex: String = keyHex) -> AuditChainKey {
    let path = dir + "/a.db.key"
    unlink(path)
    writeFile(path, hex + "\n")
    chmod(path, 0o600)
    return try! AuditChainKey.load(path)
  }

  /// A keyed store at `<dir>/a.db` with the test key.
  func keyedStore(_ dir: String) throws -> (AuditStore, AuditChainKey) {
    let key = writeKey(dir)
    let store = try AuditStore(path: dir + "/a.db", readOnly: false)
    try store.beginKeyedChain(key)
    return (store, key)
  }

  func verification(_ path: String, key: AuditChainKey? = nil, head: PublishedChainHead? = nil) throws -> AuditStore.Verification {
    let store = try AuditStore(path: path, readOnly: true)
    return try store.verify(key: key ?? AuditChainKey.load(AuditChainKey.defaultPath(forLog: path)), published: head)
  }

  /// Rewrites every chain value from `from` on with the unkeyed SHA-256 method (what a writer
  /// of the file without the key can do).
  func rechainUnkeyed(_ store: AuditStore, from: Int64) throws {
    var previous = [UInt8](repeating: 0, count: 32)
    if from > 1 {
      let q = try store.database.prepare("SELECT hash FROM events WHERE seq = ?")
      q.bind(1, from - 1)
      _ = try q.step()
      previous = q.bytes(0)
    }
    var rewritten: [(Int64, [UInt8])] = []
    try store.read { r in
      guard r.sequence >= from else { return }
      previous = r.unkeyedChainedHash(previous: previous, digester: SodiumDigester())
      rewritten.append((r.sequence, previous))
    }
    let update = try store.database.prepare("UPDATE events SET hash = ? WHERE seq = ?")
    for (sequence, hash) in rewritten {
      update.reset()
      update.bind(1, bytes: hash)
      update.bind(2, sequence)
      _ = try update.step()
    }
  }

  /// A database as the version before the keyed chain wrote it: SHA-256 chain, no format row.
  func makeUnkeyedLog(_ path: String, records n: Int) throws {
    let store = try AuditStore(path: path, readOnly: false)
    _ = try store.beginRun()
    let anyKey = [UInt8](repeating: 7, count: 32).withUnsafeBytes { AuditChainKey(bytes: $0) }
    try store.append(records(n), key: anyKey)
    try rechainUnkeyed(store, from: 1)
    try store.database.execute("DELETE FROM meta WHERE key IN ('chain', 'key_id')")
  }

  @Test("appended records verify; altering or removing one is found at that record")
  func chain() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(records(50), key: key)
    try store.append(records(25), key: key)
    var v = try store.verify(key: key)
    #expect(v.firstBreak == nil && v.records == 75 && v.lastSequence == 75 && !v.unkeyed)
    try store.database.execute("UPDATE events SET verdict='granted' WHERE seq=40")
    v = try store.verify(key: key)
    #expect(v.firstBreak?.sequence == 40)
    #expect(v.firstBreak?.reason.contains("chain value mismatch") == true)
    try store.database.execute("UPDATE events SET verdict='denied-unknown' WHERE seq=40")
    v = try store.verify(key: key)
    #expect(v.firstBreak == nil)
    // A kind that is not one of the stable names is named, not silently read.
    try store.database.execute("UPDATE events SET kind='decisionX' WHERE seq=45")
    v = try store.verify(key: key)
    #expect(v.firstBreak?.sequence == 45 && v.firstBreak?.reason.contains("unknown kind 'decisionX'") == true)
    #expect(throws: SQLiteError.self) { try store.read { _ in } }
    try store.database.execute("UPDATE events SET kind='decision' WHERE seq=45")
    try store.database.execute("DELETE FROM events WHERE seq=60")
    v = try store.verify(key: key)
    #expect(v.firstBreak?.sequence == 61)
    #expect(v.firstBreak?.reason.contains("gap") == true)
  }

  @Test("the chain value is HMAC-SHA-256(key, previous ‖ record), as Python's hmac module computes it")
  func independentHMAC() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(Array(records(2)), key: key)
    let q = try store.database.prepare("SELECT hex(hash) FROM events ORDER BY seq")
    var stored: [String] = []
    while try q.step() { stored.append(q.text(0).lowercased()) }
    // The canonical form, written out by hand: fields in order, space-separated, escaped.
    let first = "1 1 1 1796000000000000000 decision granted qr upright \(String(repeating: "ab", count: 32)) alice  0  0 0 900"
    let second = "2 1 2 1796000001000000000 decision denied-unknown qr upright \(String(repeating: "ab", count: 32))   0  0 0 900"
    let script = """
      import hmac, hashlib, sys
      key = bytes.fromhex(sys.argv[1]); v = bytes(32)
      for m in sys.argv[2:]:
          v = hmac.new(key, v + m.encode(), hashlib.sha256).digest(); print(v.hex())
      """
    let (status, output) = runCommand(["/usr/bin/python3", "-c", script, Self.keyHex, first, second])
    #expect(status == 0, "\(output)")
    #expect(output.split(separator: "\n").map(String.init) == stored)
    #expect(stored.count == 2)
    // The key's fingerprint is HMAC(key, "scangate audit key id"), first 8 bytes.
    let (_, id) = runCommand([
      "/usr/bin/python3", "-c",
      "import hmac,hashlib,sys; print(hmac.new(bytes.fromhex(sys.argv[1]), b'scangate audit key id', hashlib.sha256).hexdigest()[:16])", Self.keyHex,
    ])
    #expect(id.split(separator: "\n").first.map(String.init) == key.identifier)
  }

  @Test("a database re-chained with the unkeyed SHA-256 method is found; so is a stripped format")
  func rechainedUnkeyed() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(records(80), key: key)
    // Whoever can write the file alters record 40 and re-chains from there, without the key.
    try store.database.execute("UPDATE events SET verdict='granted', label='mallory' WHERE seq=40")
    try rechainUnkeyed(store, from: 40)
    var v = try store.verify(key: key)
    #expect(v.firstBreak?.sequence == 40)
    // Re-chaining everything and removing the format row makes it look like an old, unkeyed
    // log: that is reported, and never passes `scangate log verify`.
    try rechainUnkeyed(store, from: 1)
    try store.database.execute("DELETE FROM meta WHERE key IN ('chain', 'key_id')")
    v = try store.verify(key: key)
    #expect(v.unkeyed && v.firstBreak == nil)
    let (status, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db"])
    #expect(status == 1 && output.contains("UNKEYED"), "\(output)")
  }

  func chainValue(_ store: AuditStore, _ sequence: Int64) throws -> [UInt8] {
    let q = try store.database.prepare("SELECT hash FROM events WHERE seq = ?")
    q.bind(1, sequence)
    _ = try q.step()
    return q.bytes(0)
  }

  func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  @Test("a cut tail or a re-chained log (even with the key) is found against a published chain head")
  func publishedHead() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(records(90), key: key)
    let at90 = store.head.text  // published by the reader earlier
    try store.append(records(10), key: key)
    let published = store.head
    #expect(published.sequence == 100)
    #expect(published.text == "100:" + hex(Array(try chainValue(store, 100).prefix(8))))
    let head = try #require(PublishedChainHead(published.text))
    var v = try store.verify(key: key, published: head)
    #expect(v.firstBreak == nil && v.head == published)
    // A longer prefix (the whole value) is accepted too; a wrong one is not.
    #expect(try store.verify(key: key, published: PublishedChainHead("100:" + hex(try chainValue(store, 100)))).firstBreak == nil)
    var (status, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db", "--head", published.text])
    #expect(status == 0 && output.contains("OK") && output.contains("head \(published.text)"), "\(output)")
    // Cut the tail: the rest is a valid chain, only the published head shows the cut.
    try store.database.execute("DELETE FROM events WHERE seq > 95")
    v = try store.verify(key: key)
    #expect(v.firstBreak == nil && v.lastSequence == 95)
    v = try store.verify(key: key, published: head)
    #expect(v.firstBreak?.sequence == 100 && v.firstBreak?.reason.contains("96...100 were cut") == true)
    (status, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db", "--head", published.text])
    #expect(status == 1 && output.contains("BROKEN") && output.contains("were cut"), "\(output)")
    // Someone with the key rewrites record 50 and re-chains: the chain verifies, the earlier head does not match.
    #expect(try store.verify(key: key, published: PublishedChainHead(at90)).firstBreak == nil)
    try store.database.execute("UPDATE events SET label='mallory' WHERE seq=50")
    var previous = try chainValue(store, 49)
    var rewritten: [(Int64, [UInt8])] = []
    try store.read { r in
      guard r.sequence >= 50 else { return }
      previous = r.chainValue(previous: previous, key: key)
      rewritten.append((r.sequence, previous))
    }
    for (sequence, hash) in rewritten {
      let u = try store.database.prepare("UPDATE events SET hash = ? WHERE seq = ?")
      u.bind(1, bytes: hash)
      u.bind(2, sequence)
      _ = try u.step()
    }
    v = try store.verify(key: key)
    #expect(v.firstBreak == nil)
    v = try store.verify(key: key, published: PublishedChainHead(at90))
    #expect(v.firstBreak?.sequence == 90 && v.firstBreak?.reason.contains("re-chained") == true)
    (status, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db", "--head", at90])
    #expect(status == 1 && output.contains("re-chained"), "\(output)")
    // Malformed heads are refused as usage errors.
    #expect(
      PublishedChainHead("90") == nil && PublishedChainHead("90:abc") == nil && PublishedChainHead("x:" + String(repeating: "0", count: 16)) == nil
        && PublishedChainHead("90:+f" + String(repeating: "0", count: 14)) == nil)
  }

  @Test("the key file follows the secret-file rules; its content is never in an error message")
  func keyFileRules() throws {
    let dir = temporaryDirectory("key")
    defer { removeTree(dir) }
    let path = dir + "/k"
    writeFile(path, Self.keyHex + "\n")
    chmod(path, 0o640)
    var problem = ""
    do { _ = try AuditChainKey.load(path) } catch { problem = error.description }
    #expect(problem == "\(path): is readable by group or others (chmod 600 it)")
    chmod(path, 0o600)
    #expect(try AuditChainKey.load(path).identifier.count == 16)
    if geteuid() == 0 {
      chown(path, 65_534, 65_534)
      do { _ = try AuditChainKey.load(path); Issue.record("a key owned by another user was accepted") } catch {
        #expect(error.description.contains("must be owned by root or the service user"))
      }
      // Root verifying a log accepts the key of the log's owner (the service user), no other.
      #expect(try AuditChainKey.load(path, owner: 65_534).identifier.count == 16)
      #expect(throws: FileError.self) { try AuditChainKey.load(path, owner: 65_533) }
      chown(path, 0, 0)
    }
    let short = "deadbeef" + String(repeating: "z", count: 56)
    writeFile(path, short)
    chmod(path, 0o600)
    do { _ = try AuditChainKey.load(path); Issue.record("a non-hex key was accepted") } catch {
      #expect(error.description.contains("64 hex digits") && !error.description.contains("deadbeef"))
    }
    // The shared helper, as the console's secret uses it: trailing CR/LF removed.
    writeFile(path, "correct horse\r\n")
    chmod(path, 0o600)
    #expect(try SecretFile.read(path) == Array("correct horse".utf8))
    chmod(path, 0o604)
    #expect(throws: FileError.self) { try SecretFile.read(path) }
    // Generating never replaces a key.
    chmod(path, 0o600)
    #expect(throws: FileError.self) { try AuditChainKey.generate(path) }
    #expect(try SecretFile.read(path) == Array("correct horse".utf8))
  }

  @Test("pruning keeps the newest records and the chain still verifies from its anchor")
  func pruning() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(records(3_000), key: key)
    var deleted: Int64 = 0
    for _ in 0..<5 { deleted += try store.prune(.init(keepRecords: 1_000, olderThan: .min, batch: 700)) }
    #expect(deleted == 2_000)
    let v = try store.verify(key: key)
    #expect(v.firstBreak == nil && v.records == 1_000 && v.firstSequence == 2_001 && v.anchorSequence == 2_000)
    // A head published at the anchor still checks; one older than it cannot be checked.
    #expect(try store.verify(key: key, published: PublishedChainHead("2000:" + hex(Array(try store.anchor().1.prefix(8))))).firstBreak == nil)
    let pruned = try store.verify(key: key, published: PublishedChainHead("1999:" + String(repeating: "0", count: 16)))
    #expect(pruned.firstBreak?.reason.contains("pruned") == true)
    // Appending after a prune continues the same chain.
    try store.append(records(10), key: key)
    let afterAppend = try store.verify(key: key)
    #expect(afterAppend.firstBreak == nil)
    // Reopened, it picks up the head again.
    let again = try AuditStore(path: dir + "/a.db", readOnly: false)
    try again.append(records(1), key: key)
    let reopened = try again.verify(key: key)
    #expect(reopened.lastSequence == 3_011 && reopened.firstBreak == nil)
  }

  @Test("pruning by age and by size; nothing at or above the retain-from sequence is ever pruned")
  func pruningLimits() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (store, key) = try keyedStore(dir)
    try store.append(records(3_000), key: key)  // one second apart from 1_796_000_000 s
    // By age: everything before record 1_001's time goes.
    let cutoff: Int64 = 1_796_000_000_000_000_000 + 1_000 * 1_000_000_000
    var deleted = try store.prune(.init(keepRecords: 1_000_000, olderThan: cutoff))
    #expect(deleted == 1_000)
    // Held back: a fleet link has not acknowledged 1_500 and later.
    deleted = try store.prune(.init(keepRecords: 100, olderThan: .min, retainFrom: 1_500))
    #expect(deleted == 499)
    #expect(try store.prune(.init(keepRecords: 100, olderThan: .max, maxBytes: 1, retainFrom: 1_500)) == 0)
    var v = try store.verify(key: key)
    #expect(v.firstBreak == nil && v.firstSequence == 1_500 && v.anchorSequence == 1_499)
    // By size: grow past 1 MiB, then prune until the records fit.
    for _ in 0..<4 { try store.append(records(3_000), key: key) }
    let before = try store.usedBytes()
    let limit: Int64 = 1 << 20
    #expect(before > 2 * limit)
    var rounds = 0
    while try store.prune(.init(keepRecords: 100_000_000, olderThan: .min, maxBytes: limit, batch: 2_000)) > 0 { rounds += 1 }
    let after = try store.usedBytes()
    #expect(after <= limit && rounds > 1, "\(before) -> \(after) bytes in \(rounds) rounds")
    v = try store.verify(key: key)
    #expect(v.firstBreak == nil && v.lastSequence == 15_000 && v.records > 1_000)
    // Not much more than needed went: the records now take over 3/4 of the limit.
    #expect(after > limit * 3 / 4, "\(after)")
  }

  /// The writer thread on a ring, driven by hand.
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

  @Test("the writer drains the ring in group commits; edges are not logged; payloads only by request")
  func writer() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (ring, log) = writer(dir, ringCapacity: 256)
    log.start()
    for _ in 0..<20 {
      ring.append(event(.decision))
      ring.append(event(.edge, EdgeCode.relay | 1))
    }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let store = try AuditStore(path: dir + "/a.db", readOnly: true)
    var kinds: [EventKind] = []
    var payloads: [String] = []
    try store.read {
      kinds.append($0.kind); payloads.append($0.payload)
    }
    #expect(kinds == [.state] + Array(repeating: .decision, count: 20))  // record 1: the log id
    let allEmpty = payloads.allSatisfy { $0.isEmpty }
    #expect(allEmpty)
    let v = try store.verify(key: AuditChainKey.load(dir + "/a.db.key"))
    #expect(v.firstBreak == nil)
  }

  /// A log writing `dir`/a.db from a new ring, committing every 20 ms (not started).
  func writer(_ dir: String, ringCapacity: Int) -> (EventRing, AuditLog) {
    let ring = EventRing(capacity: ringCapacity)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    return (ring, AuditLog(settings: settings, ring: ring))
  }

  func status(_ log: AuditLog) -> String {
    withUnsafeTemporaryAllocation(byteCount: 2_048, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      log.writeStatus(into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
  }

  func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard haystack.count >= needle.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
      if Array(haystack[i..<i + needle.count]) == needle { return true }
    }
    return false
  }

  @Test("the first start makes a 0600 key next to the database; it is never in the database; the head is published")
  func writerKey() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let (ring, log) = writer(dir, ringCapacity: 256)
    log.start()
    for _ in 0..<30 { ring.append(event(.decision)) }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    // Published head = the database's last record and its chain value.
    let store = try AuditStore(path: dir + "/a.db", readOnly: true)
    #expect(log.chainHead == store.head && log.chainHead.sequence == 31)  // the log-id record and 30
    #expect(status(log).contains("; chain head \(store.head.text)"), "\(status(log))")
    var file = stat()
    #expect(stat(dir + "/a.db.key", &file) == 0)
    #expect(file.st_mode & 0o777 == 0o600 && file.st_uid == geteuid())
    let keyText = try readWholeFile(dir + "/a.db.key", maxBytes: 100)
    #expect(keyText.count == 65 && keyText.last == 0x0A)
    var raw: [UInt8] = []
    for i in 0..<32 { raw.append(UInt8(String(decoding: keyText[2 * i..<2 * i + 2], as: UTF8.self), radix: 16)!) }
    log.stop()
    for name in try listDirectory(dir) where name.hasPrefix("a.db") && !name.hasSuffix(".key") {
      let bytes = try readWholeFile(dir + "/" + name, maxBytes: 64 << 20)
      #expect(!contains(bytes, Array(keyText.prefix(64))) && !contains(bytes, raw), "the key is in \(name)")
    }
    #expect(try verification(dir + "/a.db").firstBreak == nil)
    // `scangate log verify` finds the key next to the database and checks the published head.
    let (code, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/a.db", "--head", store.head.text])
    #expect(code == 0 && output.contains("OK, 31 records") && !output.contains(String(decoding: keyText.prefix(64), as: UTF8.self)), "\(output)")
  }

  @Test("a keyed log is never continued without its key: no new key is made, records wait, and all are written once it is back")
  func missingKey() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let ring = EventRing(capacity: 256)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    settings.chainKeyFile = dir + "/chain.key"
    let first = AuditLog(settings: settings, ring: ring)
    first.start()
    for _ in 0..<5 { ring.append(event(.decision)) }
    #expect(waitUntil { first.committedSequence == ring.lastSequence })
    first.stop()
    #expect(rename(dir + "/chain.key", dir + "/kept.key") == 0)
    let ring2 = EventRing(capacity: 256)  // a new start: a new ring
    let second = AuditLog(settings: settings, ring: ring2)
    second.start()
    for _ in 0..<5 { ring2.append(event(.decision)) }
    #expect(waitUntil { second.fault == .chainKey })
    #expect(second.keyProblem?.contains("missing") == true && status(second).contains("FAULT"))
    usleep(100_000)
    #expect(!fileExists(dir + "/chain.key"), "a new key was made for a keyed log")
    // Another key is refused too, naming both fingerprints.
    writeFile(dir + "/chain.key", String(repeating: "5a", count: 32) + "\n")
    chmod(dir + "/chain.key", 0o600)
    #expect(waitUntil { second.keyProblem?.contains("holds key") == true })
    #expect(second.committedSequence < ring2.lastSequence)
    #expect(rename(dir + "/kept.key", dir + "/chain.key") == 0)
    #expect(waitUntil { second.fault == .none && second.committedSequence == ring2.lastSequence })
    second.stop()
    let v = try verification(dir + "/a.db", key: AuditChainKey.load(dir + "/chain.key"))
    #expect(v.firstBreak == nil && v.records == 11)  // the log-id record and 10
  }

  @Test("a log written before the keyed chain is moved aside, never continued; the new log's first record names it")
  func migration() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    try makeUnkeyedLog(dir + "/a.db", records: 40)
    let old = try AuditStore(path: dir + "/a.db", readOnly: true)
    let oldHead = old.head
    #expect(try old.chainFormat() == .unkeyed)
    let (ring, log) = writer(dir, ringCapacity: 64)
    log.start()
    ring.append(event(.decision))
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let moved = try #require(try listDirectory(dir).first { $0.hasPrefix("a.db.unkeyed-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
    var lines: [AuditRecord] = []
    try AuditStore(path: dir + "/a.db", readOnly: true).read { lines.append($0) }
    lines.removeFirst()  // the log-id record
    #expect(lines.count == 2 && lines[0].kind == .state && lines[0].code == Int64(FaultCode.logMovedAside.rawValue))
    #expect(lines[0].detail.contains(moved) && lines[0].detail.contains("unkeyed SHA-256 head \(oldHead.text)"), "\(lines[0].detail)")
    #expect(lines[1].kind == .decision)
    #expect(try verification(dir + "/a.db").firstBreak == nil)
    // The old file is intact, verifies as unkeyed only, and `log verify` does not pass it.
    let oldCheck = try AuditStore(path: dir + "/" + moved, readOnly: true).verify(key: nil)
    #expect(oldCheck.unkeyed && oldCheck.firstBreak == nil && oldCheck.records == 40 && oldCheck.head == oldHead)
    let (code, output) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/" + moved])
    #expect(code == 1 && output.contains("UNKEYED") && output.contains("through record 40"), "\(output)")
  }

  @Test("events the ring overwrote before the writer read them are one records-lost record, chained like the rest")
  func recordsLost() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let ring = EventRing(capacity: 64)
    for _ in 0..<200 { ring.append(event(.decision)) }  // most are overwritten before the writer starts
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    let log = AuditLog(settings: settings, ring: ring)
    log.start()
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    var all: [AuditRecord] = []
    try AuditStore(path: dir + "/a.db", readOnly: true).read { all.append($0) }
    all.removeFirst()  // the log-id record
    // The ring keeps its newest capacity - 1 events readable: 63 of 200 survive, 137 are lost.
    #expect(all.count == 64 && all[0].kind == .recordsLost && all[0].code == 137 && log.lostRecords == 137)
    #expect(all[0].line.contains("records-lost") && all.dropFirst().allSatisfy { $0.kind == .decision })
    #expect(try verification(dir + "/a.db").firstBreak == nil)
  }

  @Test("kind and verdict are enums with stable names; records-lost is an event kind")
  func stableNames() {
    for kind in EventKind.all { #expect(EventKind(name: kind.name) == kind) }
    #expect(EventKind(name: "records-lost") == .recordsLost && EventKind.recordsLost.name == "records-lost")
    #expect(EventKind(name: "Decision") == nil && Verdict(name: "granted") == .granted && Verdict(name: "denied-expired") == .deniedExpired)
    #expect(!AuditRecord.isLogged(.recordsLost))
    let r = AuditRecord(sequence: 3, run: 1, eventSequence: 0, wallNanoseconds: 0, kind: .recordsLost, code: 12, detail: "x")
    #expect(String(decoding: r.canonicalBytes, as: UTF8.self) == "3 1 0 0 records-lost       12 x 0 0 0")
  }

  @Test("a corrupt database is moved aside, never deleted, and a new one is started")
  func corrupt() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    writeFile(dir + "/a.db", String(repeating: "this is not a database ", count: 500))
    let (ring, log) = writer(dir, ringCapacity: 64)
    log.start()
    ring.append(event(.decision))
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let names = try listDirectory(dir)
    #expect(names.contains { $0.hasPrefix("a.db.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
    let moved = names.first { $0.hasPrefix("a.db.corrupt-") && !$0.contains("-wal") && !$0.contains("-shm") }!
    #expect(String(decoding: try readWholeFile(dir + "/" + moved, maxBytes: 1 << 20), as: UTF8.self).hasPrefix("this is not"))
    let fresh = try verification(dir + "/a.db")
    #expect(fresh.records == 3 && fresh.firstBreak == nil)  // the log-id record, the note, the decision
    var first: AuditRecord? = nil
    try AuditStore(path: dir + "/a.db", readOnly: true).read(limit: 2) { first = $0 }
    #expect(first?.detail.hasPrefix("log-moved-aside: corrupt log moved aside to \(dir)/\(moved) (") == true, "\(first?.detail ?? "")")
  }

  /// A small tmpfs, for disk-full and read-only faults (needs root, as CI runs).
  func withTmpfs(_ sizeKiB: Int, _ body: (String) throws -> Void) throws {
    guard geteuid() == 0 else { return }
    let dir = temporaryDirectory("tmpfs")
    defer { umount2(dir, Int32(MNT_DETACH)); rmdir(dir) }
    guard mount("tmpfs", dir, "tmpfs", 0, "size=\(sizeKiB)k") == 0 else {
      Issue.record("mount tmpfs: \(SystemError.describe(errno))")
      return
    }
    try body(dir)
  }

  @Test(
    "disk full: the fault is reported, records wait, and everything is written once space returns",
    .enabled(if: geteuid() == 0, "needs root to mount a small tmpfs"))
  func diskFull() throws {
    try withTmpfs(600) { dir in
      let (ring, log) = writer(dir, ringCapacity: 4096)
      log.start()
      ring.append(event(.state, FaultCode.started.rawValue))
      #expect(waitUntil { log.committedSequence == ring.lastSequence })
      // Fill the rest of the file system.
      let filler = dir + "/filler"
      let fd = open(filler, O_WRONLY | O_CREAT, 0o644)
      let block = [UInt8](repeating: 0x55, count: 4096)
      while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
      close(fd)
      for _ in 0..<500 { ring.append(event(.decision)) }
      #expect(waitUntil { log.fault == .diskFull })
      #expect(log.committedSequence < ring.lastSequence)
      unlink(filler)
      #expect(waitUntil { log.fault == .none && log.committedSequence == ring.lastSequence })
      log.stop()
      let v = try verification(dir + "/a.db")
      #expect(v.firstBreak == nil && v.records == 502)  // the log-id record and 501
    }
  }

  @Test(
    "read-only file system: reported, records wait, and all are written when it is writable again",
    .enabled(if: geteuid() == 0, "needs root to remount a tmpfs read-only"))
  func readOnly() throws {
    try withTmpfs(4096) { dir in
      #expect(mount("tmpfs", dir, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0)
      let (ring, log) = writer(dir, ringCapacity: 1024)
      log.start()
      for _ in 0..<10 { ring.append(event(.decision)) }
      #expect(waitUntil { log.fault == .readOnly })
      #expect(log.committedSequence == 0)
      #expect(mount("tmpfs", dir, "tmpfs", UInt(MS_REMOUNT), nil) == 0)
      #expect(waitUntil { log.fault == .none && log.committedSequence == ring.lastSequence })
      log.stop()
      let v = try verification(dir + "/a.db")
      #expect(v.records == 11 && v.firstBreak == nil)  // the log-id record and 10
    }
  }

  @Test("kill -9 at random moments: the chain always verifies and every decision a console saw is logged")
  func crashes() throws {
    // 80 in the suite (1.4 s each: this test is the suite's longest path); set more for a soak.
    // The fault stage adds 40 random and 25 targeted kills (inside chosen pwrites) on the real binary.
    let iterations = Int(String(cString: getenv("SCANGATE_CRASH_ITERATIONS") ?? strdup("80"))) ?? 80
    let dir = temporaryDirectory("crash")
    defer { removeTree(dir) }
    // Two codes taking turns with empty frames: a decision every few frames.
    mkdir(dir + "/frames", 0o755)
    _ = writePNG(path: dir + "/frames/1.png", pixels: qrFrame("ALICE").pixels, width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/2.png", pixels: [UInt8](repeating: 200, count: 640 * 480), width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/3.png", pixels: qrFrame("MALLORY").pixels, width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/4.png", pixels: [UInt8](repeating: 200, count: 640 * 480), width: 640, height: 480, components: 1)
    writeFile(dir + "/allow-list.txt", "text:ALICE\n")
    writeFile(
      dir + "/config.toml",
      """
      [camera]
      source = "replay"
      replay_path = "\(dir)/frames"
      replay_fps = 50
      [presence]
      leave_after_ms = 50
      cooldown_ms = 0
      [allow_list]
      path = "\(dir)/allow-list.txt"
      [gpio]
      backend = "sim"
      relay_pulse_ms = 50
      [log]
      path = "\(dir)/audit.db"
      commit_interval_ms = 20
      [decoder]
      isolation = "inline"
      [console]
      listen = ["127.0.0.1:0"]
      """)
    var rng = SplitMix(seed: 42)
    var acknowledgedTotal = 0
    for iteration in 0..<iterations {
      let child = Child.start([scangateBinary, "run", "--config", dir + "/config.toml", "--quiet-edges"])
      guard child.waitForOutput("console listening on 127.0.0.1:", timeoutSeconds: 20) else {
        Issue.record("iteration \(iteration): no console: \(child.output)")
        kill(child.pid, SIGKILL); _ = child.wait(); break
      }
      let port = child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }!
        .split(separator: ":").last.flatMap { UInt16($0) }!
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var sa = sockaddr_in()
      sa.sin_family = sa_family_t(AF_INET)
      sa.sin_port = port.bigEndian
      sa.sin_addr.s_addr = inet_addr("127.0.0.1")
      _ = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
      _ = "WATCH ON\n".withCString { write(fd, $0, 9) }
      // Listen for a random while, then kill -9 with no warning.
      let end = SystemMonotonicClock().now().adding(milliseconds: 30 + Int(rng.next() % 400))
      var received: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while SystemMonotonicClock().now() < end {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 5) > 0 {
          let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
          if n > 0 { received += buffer[0..<n] }
        }
      }
      kill(child.pid, SIGKILL)
      _ = child.wait()
      close(fd)
      // Only whole lines count: a line cut by the kill was not acknowledged.
      let text = String(decoding: received, as: UTF8.self)
      let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
      let acknowledged = lines.compactMap { line -> Int64? in
        guard line.hasPrefix("! #"), line.contains(" decision ") else { return nil }
        return Int64(line.dropFirst(3).prefix { $0.isNumber })
      }
      acknowledgedTotal += acknowledged.count
      let store = try AuditStore(path: dir + "/audit.db", readOnly: true)
      let v = try store.verify(key: AuditChainKey.load(dir + "/audit.db.key"))
      #expect(v.firstBreak == nil, "iteration \(iteration): \(String(describing: v.firstBreak))")
      var logged: Set<Int64> = []
      var lastRun: Int64 = 0
      try store.read { r in
        if r.run > lastRun { lastRun = r.run; logged = [] }
        if r.kind == .decision { logged.insert(r.eventSequence) }
      }
      let missing = acknowledged.filter { !logged.contains($0) }
      #expect(missing.isEmpty, "iteration \(iteration): decisions \(missing) were shown on the console but are not in the log")
      if !missing.isEmpty || v.firstBreak != nil { break }
    }
    #expect(acknowledgedTotal > iterations / 2, "too few decisions were seen to make the test meaningful")
  }
}
