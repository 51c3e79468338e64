import CSQLite
import ScanCore

/// The console's LOG with filters (docs/console.md, "LOG"): the newest records that match, read
/// by SQLite's primary key from the newest down, so a page of 100 out of a million records
/// reads no more than the rows it must look at. Every value is bound, never spliced into SQL.
extension AuditStore {
  public func read(_ query: AuditQuery, _ body: (AuditRecord) -> Void) throws(SQLiteError) {
    var conditions: [String] = []
    var binds: [(Int32, AuditStore.Bound)] = []
    func add(_ condition: String, _ value: AuditStore.Bound) {
      conditions.append(condition)
      binds.append((Int32(binds.count + 1), value))
    }
    if let before = query.before { add("seq < ?", .int(before)) }
    if let since = query.since { add("time_ns >= ?", .int(Self.nanoseconds(since))) }
    if let until = query.until { add("time_ns < ?", .int(Self.nanoseconds(until))) }
    if let verdict = query.verdict { add("verdict = ?", .text(verdict.name)) }
    if let kind = query.kind { add("kind = ?", .text(kind.name)) }
    if let label = query.labelText { add("label = ?", .text(label)) }
    let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
    let q = try database.prepare(
      "SELECT * FROM (SELECT \(Self.columns) FROM events \(filter) ORDER BY seq DESC LIMIT ?) ORDER BY seq")
    for (index, value) in binds {
      switch value {
      case .int(let n): q.bind(index, n)
      case .text(let t): q.bind(index, t)
      }
    }
    q.bind(Int32(binds.count + 1), Int64(max(0, min(query.count, AuditQuery.countMax))))
    while try q.step() {
      switch Self.record(q) {
      case .success(let record): body(record)
      case .failure(let problem): throw SQLiteError(code: SQLITE_MISMATCH, message: "\(database.path): \(problem.reason)")
      }
    }
  }

  enum Bound {
    case int(Int64)
    case text(String)
  }

  /// Unix seconds as the log's nanoseconds, saturating (a filter far in the future is not a trap).
  static func nanoseconds(_ seconds: Int64) -> Int64 {
    let (n, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    return overflow ? .max : n
  }
}
