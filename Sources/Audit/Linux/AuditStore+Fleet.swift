import ScanCore

extension AuditStore {
  /// Records with sequence `first` and above, in order, at most `limit` (the fleet link's
  /// batch read).
  public func records(from first: Int64, limit: Int) throws(SQLiteError) -> [AuditRecord] {
    if batchRead == nil { batchRead = try database.prepare("SELECT \(Self.columns) FROM events WHERE seq >= ? ORDER BY seq LIMIT ?") }
    let q = batchRead!
    q.reset()
    defer { q.reset() }  // ends the read transaction: the writer's checkpoints are not held back
    q.bind(1, first)
    q.bind(2, Int64(limit))
    var out: [AuditRecord] = []
    while try q.step() {
      switch Self.record(q) {
      case .success(let record): out.append(record)
      case .failure(let problem): throw SQLiteError(code: 20, message: "\(database.path): \(problem.reason)")  // SQLITE_MISMATCH
      }
    }
    return out
  }

  /// The newest record's sequence as the file holds it now (another connection may write).
  public func newestSequence() throws(SQLiteError) -> Int64 {
    let q = try database.prepare("SELECT COALESCE(MAX(seq), 0) FROM events")
    _ = try q.step()
    return q.int(0)
  }
}
