import CSQLite
import ScanCore
import ScanPlatform

/// A SQLite failure: the result code, its meaning, and SQLite's message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
  public var code: Int32
  public var message: String
  public var description: String { "sqlite: \(message) (code \(code))" }
  /// The primary result code (extended codes carry the primary one in their low byte).
  public var primary: Int32 { code & 0xFF }
  public var isDiskFull: Bool { primary == SQLITE_FULL }
  public var isReadOnly: Bool { primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM }
  public var isCorrupt: Bool { primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB }
  public var isIOError: Bool { primary == SQLITE_IOERR }
  /// What `quickCheck` found in a damaged file, as the error SQLite gives for one (SQLITE_CORRUPT).
  public static func damaged(_ problems: [String]) -> SQLiteError {
    SQLiteError(code: SQLITE_CORRUPT, message: problems.joined(separator: "; "))
  }
}

/// One SQLite connection (a thin wrapper: statements are prepared per call site and reused).
public final class SQLiteDatabase {
  let handle: OpaquePointer
  public let path: String

  /// Opens `path`; `readOnly` opens without creating or writing. A FIFO, directory or device at
  /// the path (or its -wal, -shm, -journal) is refused before SQLite sees it (`PathChecks`).
  public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
    if let problem = PathChecks.databaseProblem(path) { throw SQLiteError(code: SQLITE_CANTOPEN, message: problem) }
    var db: OpaquePointer? = nil
    let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
      if let db { sqlite3_close_v2(db) }
      throw SQLiteError(code: rc, message: "\(path): \(message)")
    }
    if !readOnly {
      do { try Self.restrictMode(path) } catch {
        sqlite3_close_v2(db)
        throw error
      }
    }
    handle = db
    self.path = path
    sqlite3_extended_result_codes(db, 1)
    sqlite3_busy_timeout(db, 2_000)
  }

  deinit { sqlite3_close_v2(handle) }

  /// The database's mode is 0600 whatever the umask of whoever started the process: set once
  /// SQLite has opened (made) it, before its -wal and -shm exist (SQLite gives them the
  /// database's mode); an existing one (and its -wal and -shm) with wider bits is narrowed.
  /// It holds labels and keyed tags: the owner only.
  static let fileMode: UInt32 = 0o600

  private static func restrictMode(_ path: String) throws(SQLiteError) {
    do { try setFileMode(path, fileMode) } catch {
      throw SQLiteError(code: SQLITE_CANTOPEN, message: "\(path): cannot set its mode to 0600 (\(error.reason))")
    }
    for suffix in ["-wal", "-shm"] { try? setFileMode(path + suffix, fileMode, ifExists: true) }
  }

  func error(_ rc: Int32) -> SQLiteError {
    SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
  }

  /// Runs SQL with no results.
  public func execute(_ sql: String) throws(SQLiteError) {
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    if rc != SQLITE_OK { throw error(rc) }
  }

  /// `PRAGMA quick_check(limit)`, its result rows read: SQLite reports damage as rows (e.g.
  /// `Page 8: btreeInitPage() returns error code 11`), not as an error, so running it without
  /// reading them finds nothing. Returns what SQLite found (at most `limit` problems, each on
  /// one line), or nothing when the file is sound (one row, `ok`). Asked for more than one
  /// problem, SQLite may report the first as a row and then fail on the same damage: the rows
  /// read are the answer then, and a check that fails as corrupt before any row is damage too.
  /// Other failures (I/O, a busy file) throw.
  public func quickCheck(limit: Int = 5) throws(SQLiteError) -> [String] {
    let q = try prepare("PRAGMA quick_check(\(max(1, limit)))")
    var rows: [String] = []
    do {
      while try q.step() {
        for line in q.text(0).split(separator: "\n") where !line.hasPrefix("*** in database") { rows.append(String(line)) }
      }
    } catch {
      guard error.isCorrupt else { throw error }
      if rows.isEmpty || rows == ["ok"] { rows = ["quick_check: \(error.message)"] }
    }
    if rows == ["ok"] { return [] }
    return rows.isEmpty ? ["quick_check returned no result"] : Array(rows.prefix(max(1, limit)))
  }

  public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
    var statement: OpaquePointer? = nil
    let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw error(rc) }
    return Statement(statement, database: self)
  }

  /// A prepared statement.
  public final class Statement {
    let handle: OpaquePointer
    let database: SQLiteDatabase
    init(_ handle: OpaquePointer, database: SQLiteDatabase) {
      self.handle = handle
      self.database = database
    }
    deinit { sqlite3_finalize(handle) }

    public func reset() {
      sqlite3_reset(handle)
      sqlite3_clear_bindings(handle)
    }
    public func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    public func bind(_ index: Int32, _ value: String) {
      var text = value
      text.withUTF8 { _ = sg_sqlite_bind_text(handle, index, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count)) }
    }
    public func bind(_ index: Int32, bytes: [UInt8]) {
      bytes.withUnsafeBytes { _ = sg_sqlite_bind_blob(handle, index, $0.baseAddress, Int32($0.count)) }
    }
    /// Steps once: true when a row is available, false when done.
    public func step() throws(SQLiteError) -> Bool {
      let rc = sqlite3_step(handle)
      if rc == SQLITE_ROW { return true }
      if rc == SQLITE_DONE { return false }
      throw database.error(rc)
    }
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func text(_ column: Int32) -> String {
      guard let p = sqlite3_column_text(handle, column) else { return "" }
      return String(cString: p)
    }
    public func bytes(_ column: Int32) -> [UInt8] {
      let n = Int(sqlite3_column_bytes(handle, column))
      guard n > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
      return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
  }
}
