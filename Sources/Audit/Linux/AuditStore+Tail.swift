import CSQLite
import ScanCore

/// The local signs of a log's tail (`scangate log verify`, docs/audit-log.md "What verify proves"):
/// a trigger keeps the highest sequence ever inserted in `meta` inside the same transaction as
/// the records, the run counter counts starts, and the fleet link's state file holds the
/// highest sequence a broker acknowledged. Records deleted from the end leave these ahead of
/// the last record. Whoever can rewrite the file can rewrite its marks too: only a chain head
/// published off the reader (`--head`) proves nothing was cut.
extension AuditStore {
  static let tailTrigger = """
    CREATE TRIGGER IF NOT EXISTS events_tail_mark AFTER INSERT ON events BEGIN
      INSERT INTO meta(key, value) VALUES('last_seq', NEW.seq)
        ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value);
    END;
    """

  /// What the file itself says of its tail.
  public struct TailSigns: Equatable, Sendable {
    /// The highest sequence ever inserted (nil in a file written before the mark existed).
    public var highestWritten: Int64?
    /// Starts counted; and the run of the last record (0 without records).
    public var runs: Int64
    public var lastRun: Int64
  }

  public func tailSigns() throws(SQLiteError) -> TailSigns {
    let q = try database.prepare(
      "SELECT (SELECT value FROM meta WHERE key='last_seq'), (SELECT value FROM meta WHERE key='runs'), (SELECT run FROM events ORDER BY seq DESC LIMIT 1)")
    _ = try q.step()
    return TailSigns(highestWritten: q.isNull(0) ? nil : q.int(0), runs: q.int(1), lastRun: q.int(2))
  }
}
