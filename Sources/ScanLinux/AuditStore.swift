import CSQLite
import Glibc
import ScanCore

/// The audit log's SQLite file: schema, appends with the hash chain, reads, pruning and
/// verification. Used by the log writer thread, the console's LOG and `scangate log`.
///
/// Schema: `events` holds the records (seq is the gapless log sequence); `meta` holds the run
/// counter and the chain's anchor (the last pruned record's sequence and hash, so a pruned log
/// still verifies from its first kept record).
public final class AuditStore {
  public let database: SQLiteDatabase
  private var insert: SQLiteDatabase.Statement? = nil
  /// The chain's head: the last record's sequence and hash.
  public private(set) var lastSequence: Int64 = 0
  public private(set) var lastHash: [UInt8] = [UInt8](repeating: 0, count: 32)

  static let columns = "seq, run, event_seq, time_ns, kind, verdict, format, variant, digest, label, payload, code, detail, decode_us, decide_us, edge_us, hash"

  /// Opens (creating when writable) and reads the chain's head.
  public init(path: String, readOnly: Bool) throws(SQLiteError) {
    database = try SQLiteDatabase(path: readOnly ? "file:\(path)?mode=ro" : path, readOnly: readOnly)
    if !readOnly {
      try database.execute("PRAGMA journal_mode=WAL")
      try database.execute("PRAGMA synchronous=FULL")
      try database.execute("""
        CREATE TABLE IF NOT EXISTS events (
          seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, event_seq INTEGER NOT NULL, time_ns INTEGER NOT NULL,
          kind TEXT NOT NULL, verdict TEXT NOT NULL, format TEXT NOT NULL, variant TEXT NOT NULL,
          digest TEXT NOT NULL, label TEXT NOT NULL, payload TEXT NOT NULL, code INTEGER NOT NULL,
          detail TEXT NOT NULL, decode_us INTEGER NOT NULL, decide_us INTEGER NOT NULL, edge_us INTEGER NOT NULL,
          hash BLOB NOT NULL);
        CREATE INDEX IF NOT EXISTS events_time ON events(time_ns);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
        """)
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
  }

  /// The chain's starting point: sequence and hash of the last pruned record (0 and zeros).
  public func anchor() throws(SQLiteError) -> (Int64, [UInt8]) {
    let q = try database.prepare("SELECT (SELECT value FROM meta WHERE key='anchor_seq'), (SELECT value FROM meta WHERE key='anchor_hash')")
    guard try q.step() else { return (0, [UInt8](repeating: 0, count: 32)) }
    let hash = q.bytes(1)
    return (q.int(0), hash.count == 32 ? hash : [UInt8](repeating: 0, count: 32))
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
  public func append(_ records: [AuditRecord], digester: some PayloadDigester) throws(SQLiteError) {
    guard !records.isEmpty else { return }
    if insert == nil {
      insert = try database.prepare("INSERT INTO events(\(Self.columns)) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    }
    try database.execute("BEGIN IMMEDIATE")
    var sequence = lastSequence, hash = lastHash
    do throws(SQLiteError) {
      for var record in records {
        sequence += 1
        record.sequence = sequence
        hash = record.chainedHash(previous: hash, digester: digester)
        let s = insert!
        s.reset()
        s.bind(1, record.sequence); s.bind(2, record.run); s.bind(3, record.eventSequence); s.bind(4, record.wallNanoseconds)
        s.bind(5, record.kind); s.bind(6, record.verdict); s.bind(7, record.format); s.bind(8, record.variant)
        s.bind(9, record.digest); s.bind(10, record.label); s.bind(11, record.payload); s.bind(12, record.code)
        s.bind(13, record.detail); s.bind(14, record.decodeMicroseconds); s.bind(15, record.decideMicroseconds)
        s.bind(16, record.edgeMicroseconds); s.bind(17, bytes: hash)
        _ = try s.step()
      }
      try database.execute("COMMIT")
    } catch {
      try? database.execute("ROLLBACK")
      insert = nil  // re-prepared after a failure (the statement may be unusable)
      throw error
    }
    lastSequence = sequence
    lastHash = hash
  }

  /// Deletes the oldest records beyond `keepRecords` or older than `keepNanoseconds` before
  /// `now`, at most `batch` at a time, moving the chain's anchor to the last deleted record.
  /// Returns how many were deleted.
  public func prune(keepRecords: Int64, olderThan cutoffNanoseconds: Int64, batch: Int64 = 5_000) throws(SQLiteError) -> Int64 {
    let bounds = try database.prepare("SELECT MIN(seq), MAX(seq) FROM events")
    guard try bounds.step() else { return 0 }
    let first = bounds.int(0), last = bounds.int(1)
    guard first > 0 else { return 0 }
    var upTo = max(first - 1, last - keepRecords)  // delete seq <= upTo
    let aged = try database.prepare("SELECT MAX(seq) FROM events WHERE time_ns < ?")
    aged.bind(1, cutoffNanoseconds)
    if try aged.step() { upTo = max(upTo, aged.int(0)) }
    upTo = min(upTo, first + batch - 1, last - 1)  // always keep the newest record
    guard upTo >= first else { return 0 }
    let hashOf = try database.prepare("SELECT hash FROM events WHERE seq = ?")
    hashOf.bind(1, upTo)
    guard try hashOf.step() else { return 0 }
    let anchorHash = hashOf.bytes(0)
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
    return upTo - first + 1
  }

  /// Records in sequence order, from `sinceNanoseconds`, at most `limit` (the newest when
  /// `newest`), calling `body` for each.
  public func read(sinceNanoseconds: Int64 = .min, limit: Int64 = .max, newest: Bool = false,
                   _ body: (AuditRecord) -> Void) throws(SQLiteError) {
    let sql = newest
      ? "SELECT * FROM (SELECT \(Self.columns) FROM events WHERE time_ns >= ? ORDER BY seq DESC LIMIT ?) ORDER BY seq"
      : "SELECT \(Self.columns) FROM events WHERE time_ns >= ? ORDER BY seq LIMIT ?"
    let q = try database.prepare(sql)
    q.bind(1, sinceNanoseconds)
    q.bind(2, limit)
    while try q.step() { body(Self.record(q)) }
  }

  static func record(_ q: SQLiteDatabase.Statement) -> AuditRecord {
    AuditRecord(sequence: q.int(0), run: q.int(1), eventSequence: q.int(2), wallNanoseconds: q.int(3), kind: q.text(4),
                verdict: q.text(5), format: q.text(6), variant: q.text(7), digest: q.text(8), label: q.text(9),
                payload: q.text(10), code: q.int(11), detail: q.text(12), decodeMicroseconds: q.int(13),
                decideMicroseconds: q.int(14), edgeMicroseconds: q.int(15))
  }

  /// The outcome of `verify`.
  public struct Verification: Sendable {
    public var records: Int64 = 0
    public var firstSequence: Int64 = 0
    public var lastSequence: Int64 = 0
    /// The first problem: the sequence it was found at and what is wrong.
    public var firstBreak: (sequence: Int64, reason: String)? = nil
  }

  /// Recomputes the hash chain from the anchor and checks that sequences have no gaps.
  public func verify(digester: some PayloadDigester) throws(SQLiteError) -> Verification {
    var (expectedSequence, previous) = try anchor()
    var v = Verification()
    let q = try database.prepare("SELECT \(Self.columns) FROM events ORDER BY seq")
    while try q.step() {
      let record = Self.record(q)
      let stored = q.bytes(16)
      if v.records == 0 { v.firstSequence = record.sequence }
      v.records += 1
      v.lastSequence = record.sequence
      expectedSequence += 1
      if record.sequence != expectedSequence {
        v.firstBreak = (record.sequence, "sequence gap: expected \(expectedSequence), found \(record.sequence)")
        return v
      }
      let hash = record.chainedHash(previous: previous, digester: digester)
      if hash != stored {
        v.firstBreak = (record.sequence, "hash mismatch: the record or one before it was altered")
        return v
      }
      previous = hash
    }
    return v
  }

  /// Moves a damaged database (and its WAL and shared-memory files) aside, never deleting it.
  /// Returns the new name.
  public static func moveAside(_ path: String, now: Int64) -> String {
    let stamp = RFC3339.format(now).replacingColons()
    let target = "\(path).corrupt-\(stamp)"
    for suffix in ["", "-wal", "-shm"] where fileExists(path + suffix) {
      rename(path + suffix, target + suffix)
    }
    return target
  }
}

extension String {
  func replacingColons() -> String { String(map { $0 == ":" ? "-" : $0 }) }
}
