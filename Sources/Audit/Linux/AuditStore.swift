import CSQLite
import Glibc
import ScanCore
import ScanPlatform

/// The audit log's SQLite file: schema, appends with the keyed chain, reads, pruning and
/// verification. Used by the log writer thread, the console's LOG and `scangate log`.
///
/// Schema: `events` holds the records (seq is the gapless log sequence; `hash` is the record's
/// chain value, HMAC-SHA-256 under the chain key of the previous value and the record); `meta`
/// holds the run counter, the chain's format (`chain` = `hmac-sha256`, and `key_id`, the key's
/// public fingerprint — never the key) and the chain's anchor (the last pruned record's
/// sequence and chain value, so a pruned log still verifies from its first kept record), and
/// the log id (`log_id`, 128 random bits made with the chain; docs/audit-log.md, "Which log"),
/// which the chain's first record repeats (`log_id_seq` is that record) so the MAC covers it.
/// A file without `chain` that holds records was written before the keyed chain ("unkeyed":
/// SHA-256 only, which anyone who can write the file can recompute).
public final class AuditStore {
  public let database: SQLiteDatabase
  private var insert: SQLiteDatabase.Statement? = nil
  /// The fleet link's batch read, prepared once (it runs several times a second).
  var batchRead: SQLiteDatabase.Statement? = nil
  /// The chain's head: the last record's sequence and chain value.
  public private(set) var lastSequence: Int64 = 0
  public private(set) var lastHash: [UInt8] = [UInt8](repeating: 0, count: 32)
  /// The file as opened (its path, device and inode): `fileCheck()` compares the path with it.
  public let filePath: String
  let fileIdentity: FileIdentity?
  /// The log id whose record the next append writes first (set when an id is given to the
  /// chain, cleared when that record commits).
  var pendingIdentity: (id: String, adoptedThrough: Int64?)? = nil
  /// The head in its published form.
  public var head: AuditChainHead {
    AuditChainHead(sequence: lastSequence, value: lastHash.withUnsafeBytes { Digest(bytes: $0) })
  }

  /// How a file's records are chained.
  public enum ChainFormat: Equatable, Sendable {
    /// Nothing written yet and no format chosen.
    case none
    /// HMAC-SHA-256 under the key with this fingerprint.
    case keyed(keyIdentifier: String)
    /// Written before the keyed chain: plain SHA-256.
    case unkeyed
  }
  static let keyedFormat = "hmac-sha256"

  /// The `digest` column holds the payload's keyed tag (`AuditRecord.tag`); logs written before
  /// tags hold its SHA-256 there. The name stays: renaming it would change every existing file.
  static let columns = "seq, run, event_seq, time_ns, kind, verdict, format, variant, digest, label, payload, code, detail, decode_us, decide_us, edge_us, hash"

  /// Each connection's page cache, KiB.
  static let cacheKiB = 256

  /// Opens (creating when writable) and reads the chain's head.
  public init(path: String, readOnly: Bool) throws(SQLiteError) {
    database = try SQLiteDatabase(path: readOnly ? "file:\(path)?mode=ro" : path, readOnly: readOnly)
    filePath = path
    fileIdentity = FileIdentity(path)
    // Memory (bench/soak-service.py): SQLite's page cache grows to its default 2 MB per
    // connection as the log's new pages are touched, a slow creep over hours; the writer and the
    // fleet link only ever need the tail and a few interior pages.
    try database.execute("PRAGMA cache_size=-\(Self.cacheKiB)")
    if !readOnly {
      // What a decision costs the card (docs/audit-log.md "What the log writes", bench/log-io.py):
      // each commit appends every page it touched to the WAL. 1 KiB pages (a new log's; an older
      // file keeps its size) and no time index cut that from 12.9 to 2.6 MB per 1,000 decisions;
      // a 256-page checkpoint keeps the WAL near 256 KiB instead of 4 MiB.
      try database.execute("PRAGMA page_size=1024")
      try database.execute("PRAGMA journal_mode=WAL")
      try database.execute("PRAGMA synchronous=FULL")
      try database.execute("PRAGMA wal_autocheckpoint=256")
      try database.execute("PRAGMA journal_size_limit=524288")
      try database.execute(
        """
        CREATE TABLE IF NOT EXISTS events (
          seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, event_seq INTEGER NOT NULL, time_ns INTEGER NOT NULL,
          kind TEXT NOT NULL, verdict TEXT NOT NULL, format TEXT NOT NULL, variant TEXT NOT NULL,
          digest TEXT NOT NULL, label TEXT NOT NULL, payload TEXT NOT NULL, code INTEGER NOT NULL,
          detail TEXT NOT NULL, decode_us INTEGER NOT NULL, decide_us INTEGER NOT NULL, edge_us INTEGER NOT NULL,
          hash BLOB NOT NULL);
        DROP INDEX IF EXISTS events_time;
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
        """)
      try database.execute(Self.tailTrigger)
    }
    let head = try database.prepare("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
    if try head.step() {
      lastSequence = head.int(0)
      lastHash = head.bytes(1)
    } else {
      let (anchorSequence, anchorHash) = try anchor()
      lastSequence = anchorSequence
      lastHash = anchorHash
    }
    if !readOnly { pendingIdentity = try unwrittenIdentity() }
  }

  /// The chain's starting point: sequence and hash of the last pruned record (0 and zeros).
  public func anchor() throws(SQLiteError) -> (Int64, [UInt8]) {
    let q = try database.prepare("SELECT (SELECT value FROM meta WHERE key='anchor_seq'), (SELECT value FROM meta WHERE key='anchor_hash')")
    guard try q.step() else { return (0, [UInt8](repeating: 0, count: 32)) }
    let hash = q.bytes(1)
    return (q.int(0), hash.count == 32 ? hash : [UInt8](repeating: 0, count: 32))
  }

  /// How this file's records are chained.
  public func chainFormat() throws(SQLiteError) -> ChainFormat {
    let q = try database.prepare(
      "SELECT (SELECT value FROM meta WHERE key='chain'), (SELECT value FROM meta WHERE key='key_id'), (SELECT COUNT(*) FROM events), (SELECT value FROM meta WHERE key='anchor_seq')"
    )
    _ = try q.step()
    if q.text(0) == Self.keyedFormat { return .keyed(keyIdentifier: q.text(1)) }
    return q.int(2) > 0 || q.int(3) > 0 ? .unkeyed : .none
  }

  /// Makes an empty file's chain keyed with `key` (records its fingerprint, never the key). With
  /// `logID`, the chain gets that log id: kept in `meta` and written as the first record by the
  /// next `append` (the service's writer always gives one; tools and benches may not).
  public func beginKeyedChain(_ key: AuditChainKey, logID: String? = nil) throws(SQLiteError) {
    guard try chainFormat() == .none else {
      throw SQLiteError(code: SQLITE_MISUSE, message: "\(database.path): the log already has a chain format")
    }
    try database.execute("BEGIN IMMEDIATE")
    do throws(SQLiteError) {
      try database.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('chain', '\(Self.keyedFormat)')")
      let id = try database.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('key_id', ?)")
      id.bind(1, key.identifier)
      _ = try id.step()
      if let logID { try setMeta("log_id", logID) }
      try database.execute("COMMIT")
    } catch {
      try? database.execute("ROLLBACK")
      throw error
    }
    if let logID { pendingIdentity = (logID, nil) }
  }

  /// Bytes the records take in the file: pages in use (freed pages are reused, so the file
  /// itself stays at its high-water mark).
  public func usedBytes() throws(SQLiteError) -> Int64 {
    let q = try database.prepare(
      "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())")
    _ = try q.step()
    return q.int(0) * q.int(1)
  }

  /// Increments and returns the run counter.
  public func beginRun() throws(SQLiteError) -> Int64 {
    try database.execute("INSERT INTO meta(key, value) VALUES('runs', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1")
    let q = try database.prepare("SELECT value FROM meta WHERE key='runs'")
    _ = try q.step()
    return q.int(0)
  }

  /// Appends records in one transaction (group commit). The chain head moves only when the
  /// transaction commits; on failure nothing was written and the head is unchanged.
  /// A chain given a log id writes its identity record first (`identityRecord`), in the same
  /// transaction, and marks it in `meta.log_id_seq`.
  public func append(_ records: [AuditRecord], key: some RecordAuthenticator) throws(SQLiteError) {
    guard !records.isEmpty else { return }
    var records = records
    if let identity = pendingIdentity {
      records.insert(Self.identityRecord(identity.id, adoptedThrough: identity.adoptedThrough, before: records[0]), at: 0)
    }
    if insert == nil {
      insert = try database.prepare("INSERT INTO events(\(Self.columns)) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    }
    try database.execute("BEGIN IMMEDIATE")
    var sequence = lastSequence, hash = lastHash
    do throws(SQLiteError) {
      for var record in records {
        sequence = sequence.saturatingAdd(1)  // a head at 2^63-1 (a damaged file) fails the insert, never traps
        record.sequence = sequence
        hash = record.chainValue(previous: hash, key: key)
        let s = insert!
        s.reset()
        s.bind(1, record.sequence); s.bind(2, record.run); s.bind(3, record.eventSequence); s.bind(4, record.wallNanoseconds)
        s.bind(5, record.kind.name); s.bind(6, record.verdict?.name ?? ""); s.bind(7, record.format); s.bind(8, record.variant)
        s.bind(9, record.tag); s.bind(10, record.label); s.bind(11, record.payload); s.bind(12, record.code)
        s.bind(13, record.detail); s.bind(14, record.decodeMicroseconds); s.bind(15, record.decideMicroseconds)
        s.bind(16, record.edgeMicroseconds); s.bind(17, bytes: hash)
        _ = try s.step()
      }
      if pendingIdentity != nil { try setMeta("log_id_seq", lastSequence.saturatingAdd(1)) }
      try database.execute("COMMIT")
    } catch {
      try? database.execute("ROLLBACK")
      insert = nil  // re-prepared after a failure (the statement may be unusable)
      throw error
    }
    lastSequence = sequence
    lastHash = hash
    pendingIdentity = nil
  }

  /// What pruning may delete. A record goes when it is beyond `keepRecords`, older than
  /// `cutoffNanoseconds`, or while the records take more than `maxBytes` — but never a record at
  /// or above `retainFrom` (the lowest sequence not yet acknowledged by whoever the log is
  /// published to; `.max` holds nothing back), and never the newest record.
  public struct PruneLimits: Sendable {
    public var keepRecords: Int64
    public var cutoffNanoseconds: Int64
    public var maxBytes: Int64 = .max
    public var retainFrom: Int64 = .max
    /// At most this many records per call (a call is one transaction).
    public var batch: Int64 = 5_000
    public init(
      keepRecords: Int64, olderThan cutoffNanoseconds: Int64, maxBytes: Int64 = .max, retainFrom: Int64 = .max,
      batch: Int64 = 5_000
    ) {
      self.keepRecords = keepRecords
      self.cutoffNanoseconds = cutoffNanoseconds
      self.maxBytes = maxBytes
      self.retainFrom = retainFrom
      self.batch = batch
    }
  }

  /// Deletes the oldest records `limits` allow, at most `batch`, moving the chain's anchor to
  /// the last deleted record (so the rest still verifies). Returns how many were deleted.
  public func prune(_ limits: PruneLimits) throws(SQLiteError) -> Int64 {
    let bounds = try database.prepare("SELECT MIN(seq), MAX(seq) FROM events")
    guard try bounds.step() else { return 0 }
    let first = bounds.int(0), last = bounds.int(1)
    guard first > 0 else { return 0 }
    var upTo = max(first - 1, last - limits.keepRecords)  // delete seq <= upTo
    // Aged: every record before the first one at or after the cut-off, in sequence order (a
    // record stamped by a clock that was set back stops the scan: it is never pruned early).
    // The scan starts at the oldest record and stops at the first young one: no time index.
    let young = try database.prepare("SELECT seq FROM events WHERE time_ns >= ? ORDER BY seq LIMIT 1")
    young.bind(1, limits.cutoffNanoseconds)
    upTo = max(upTo, try young.step() ? young.int(0) - 1 : last)
    if limits.maxBytes < .max {
      let used = try usedBytes()
      if used > limits.maxBytes {
        // Records free pages in proportion: delete the excess share (and one more).
        let perRecord = max(1, used / (last - first + 1))
        upTo = max(upTo, first.saturatingAdd((used - limits.maxBytes + perRecord - 1) / perRecord))
      }
    }
    upTo = min(upTo, first.saturatingAdd(limits.batch - 1), last - 1)  // always keep the newest record
    if limits.retainFrom < .max { upTo = min(upTo, limits.retainFrom - 1) }  // nor any not yet acknowledged
    guard upTo >= first else { return 0 }
    // The last record at or before `upTo`: a recorded cut leaves sequence numbers that were
    // never in this file, and the anchor is always a record that was.
    let hashOf = try database.prepare("SELECT seq, hash FROM events WHERE seq <= ? ORDER BY seq DESC LIMIT 1")
    hashOf.bind(1, upTo)
    guard try hashOf.step() else { return 0 }
    upTo = hashOf.int(0)
    let anchorHash = hashOf.bytes(1)
    let counted = try database.prepare("SELECT COUNT(*) FROM events WHERE seq <= ?")
    counted.bind(1, upTo)
    _ = try counted.step()
    let count = counted.int(0)
    try database.execute("BEGIN IMMEDIATE")
    do throws(SQLiteError) {
      let delete = try database.prepare("DELETE FROM events WHERE seq <= ?")
      delete.bind(1, upTo)
      _ = try delete.step()
      let setSeq = try database.prepare("INSERT INTO meta(key, value) VALUES('anchor_seq', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
      setSeq.bind(1, upTo)
      _ = try setSeq.step()
      let setHash = try database.prepare("INSERT INTO meta(key, value) VALUES('anchor_hash', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
      setHash.bind(1, bytes: anchorHash)
      _ = try setHash.step()
      try database.execute("COMMIT")
    } catch {
      try? database.execute("ROLLBACK")
      throw error
    }
    return count
  }

  /// Moves the head past sequence numbers that are not in this log (records committed and then
  /// lost with a damaged, torn or deleted WAL): the next record appended is `sequence + 1`,
  /// chained to the head as it is. That record must be the cut record naming the gap
  /// (`AuditStore.cutRecord`): `verify` accepts a gap only where such a record bridges it. After
  /// a failed append the caller drops this store (a reopen reads the head from the file again).
  func skip(to sequence: Int64) {
    precondition(sequence >= lastSequence, "the head never moves back")
    lastSequence = sequence
  }

  /// Records in sequence order, from `sinceNanoseconds`, at most `limit` (the newest when
  /// `newest`), calling `body` for each.
  public func read(
    sinceNanoseconds: Int64 = .min, limit: Int64 = .max, newest: Bool = false,
    _ body: (AuditRecord) -> Void
  ) throws(SQLiteError) {
    let sql =
      newest
      ? "SELECT * FROM (SELECT \(Self.columns) FROM events WHERE time_ns >= ? ORDER BY seq DESC LIMIT ?) ORDER BY seq"
      : "SELECT \(Self.columns) FROM events WHERE time_ns >= ? ORDER BY seq LIMIT ?"
    let q = try database.prepare(sql)
    q.bind(1, sinceNanoseconds)
    q.bind(2, limit)
    while try q.step() {
      switch Self.record(q) {
      case .success(let record): body(record)
      case .failure(let problem): throw SQLiteError(code: SQLITE_MISMATCH, message: "\(database.path): \(problem.reason)")
      }
    }
  }

  struct RecordProblem: Error { var reason: String }

  /// The record in the current row; a kind or verdict that is not one of the stable names
  /// (a damaged or edited file) is a problem naming the record.
  static func record(_ q: SQLiteDatabase.Statement) -> Result<AuditRecord, RecordProblem> {
    let kindText = q.text(4), verdictText = q.text(5)
    guard let kind = EventKind(name: kindText) else {
      return .failure(RecordProblem(reason: "record \(q.int(0)): unknown kind '\(PayloadEscaping.escaped(Array(kindText.utf8)))'"))
    }
    var verdict: Verdict? = nil
    if !verdictText.isEmpty {
      guard let v = Verdict(name: verdictText) else {
        return .failure(RecordProblem(reason: "record \(q.int(0)): unknown verdict '\(PayloadEscaping.escaped(Array(verdictText.utf8)))'"))
      }
      verdict = v
    }
    return .success(
      AuditRecord(
        sequence: q.int(0), run: q.int(1), eventSequence: q.int(2), wallNanoseconds: q.int(3), kind: kind,
        verdict: verdict, format: q.text(6), variant: q.text(7), tag: q.text(8), label: q.text(9),
        payload: q.text(10), code: q.int(11), detail: q.text(12), decodeMicroseconds: q.int(13),
        decideMicroseconds: q.int(14), edgeMicroseconds: q.int(15)))
  }

  /// Moves a damaged database (and its WAL and shared-memory files) aside, never deleting it:
  /// to `<path>.<reason>-<time>`, each rename made durable (the directory synced), so after a
  /// power cut the damaged file is at one name or the other, never gone. Returns the new name.
  public static func moveAside(_ path: String, now: Int64, reason: String = "corrupt") -> String {
    let stamp = RFC3339.format(now).replacingColons()
    var target = "\(path).\(reason)-\(stamp)"
    var n = 1
    while fileExists(target) {  // never over an earlier one moved aside in the same second
      n += 1
      target = "\(path).\(reason)-\(stamp)-\(n)"
    }
    for suffix in ["", "-wal", "-shm"] where fileExists(path + suffix) {
      try? renameDurably(path + suffix, to: target + suffix)
    }
    return target
  }
}
extension String {
  func replacingColons() -> String { String(map { $0 == ":" ? "-" : $0 }) }
}
