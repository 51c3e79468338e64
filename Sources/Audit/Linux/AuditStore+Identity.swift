import CLinux
import CSQLite
import Glibc
import ScanCore
import ScanPlatform

/// The log id in the file: `meta.log_id`, its record, and whether the file at the path is still
/// the one opened (AuditLogIdentity.swift, docs/audit-log.md "Which log").
extension AuditStore {
  /// Whether the file at `filePath` is still the one this connection opened: one `stat` (the
  /// writer calls it before and after every commit and every half second when idle).
  public func fileCheck() -> AuditFileCheck {
    guard let opened = fileIdentity else { return .same }
    var st = stat()
    do { _ = try syscall("stat \(filePath)", { stat(filePath, &st) }) } catch {
      guard error.code == .noSuchFile || error.code == Errno(ENOTDIR) else { return .unknown(error.description) }
      return isDirectory(parentFolder(filePath)) ? .removed : .directoryRemoved
    }
    return opened == FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)) ? .same : .replaced
  }

  /// Keeps SQLite from deleting `<path>-wal` by name when this connection closes (persistent WAL
  /// mode): once the file at the path is not the one this connection opened, that name may be
  /// another log's WAL.
  func keepWALOnClose() {
    var on: Int32 = 1
    _ = sqlite3_file_control(database.handle, "main", SQLITE_FCNTL_PERSIST_WAL, &on)
  }

  /// What the file says of its log id.
  public struct Identity: Equatable, Sendable {
    /// `meta.log_id`: nil for a log made before log ids (until its writer adopts one).
    public var id: String?
    /// The identity record's sequence: nil until it is written.
    public var recordSequence: Int64?
    /// For an adopted id: the log's last sequence when the id was given (records up to it were
    /// written before log ids).
    public var adoptedThrough: Int64?
    public init(id: String?, recordSequence: Int64?, adoptedThrough: Int64?) {
      self.id = id
      self.recordSequence = recordSequence
      self.adoptedThrough = adoptedThrough
    }
  }

  public func identity() throws(SQLiteError) -> Identity {
    let q = try database.prepare(
      "SELECT (SELECT value FROM meta WHERE key='log_id'), (SELECT value FROM meta WHERE key='log_id_seq'), (SELECT value FROM meta WHERE key='log_id_adopted')"
    )
    _ = try q.step()
    let id = q.isNull(0) ? nil : q.text(0)
    return Identity(
      id: id.flatMap { $0.isEmpty ? nil : $0 }, recordSequence: q.isNull(1) ? nil : q.int(1),
      adoptedThrough: q.isNull(2) ? nil : q.int(2))
  }

  /// The id whose record is still to be written (given, and no `log_id_seq` yet).
  func unwrittenIdentity() throws(SQLiteError) -> (id: String, adoptedThrough: Int64?)? {
    let i = try identity()
    guard let id = i.id, i.recordSequence == nil else { return nil }
    return (id, i.adoptedThrough)
  }

  /// Gives a keyed log made before log ids the id `id`; its record follows the existing ones.
  public func adoptLogID(_ id: String) throws(SQLiteError) {
    try database.execute("BEGIN IMMEDIATE")
    do throws(SQLiteError) {
      try setMeta("log_id", id)
      try setMeta("log_id_adopted", lastSequence)
      try database.execute("COMMIT")
    } catch {
      try? database.execute("ROLLBACK")
      throw error
    }
    pendingIdentity = (id, lastSequence)
  }

  func setMeta(_ key: String, _ value: String) throws(SQLiteError) {
    let q = try database.prepare("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
    q.bind(1, key)
    q.bind(2, value)
    _ = try q.step()
  }

  func setMeta(_ key: String, _ value: Int64) throws(SQLiteError) {
    let q = try database.prepare("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
    q.bind(1, key)
    q.bind(2, value)
    _ = try q.step()
  }

  static let identityPrefix = FaultCode.logIdentity.name + ": log "

  /// The identity record, written before `first` (its run and time).
  static func identityRecord(_ id: String, adoptedThrough: Int64?, before first: AuditRecord) -> AuditRecord {
    var detail = identityPrefix + id
    if let adoptedThrough, adoptedThrough > 0 {
      detail += "; the records before it (through \(adoptedThrough)) were written before log ids"
    }
    return AuditRecord(
      sequence: 0, run: first.run, eventSequence: 0, wallNanoseconds: first.wallNanoseconds, kind: .state,
      code: Int64(FaultCode.logIdentity.rawValue), detail: detail)
  }

  /// The log id an identity record names, or nil for any other record.
  public static func loggedID(_ record: AuditRecord) -> String? {
    guard record.kind == .state, record.code == Int64(FaultCode.logIdentity.rawValue), record.detail.hasPrefix(identityPrefix)
    else { return nil }
    let id = record.detail.dropFirst(identityPrefix.count).prefix(AuditLogID.hexDigits)
    return AuditLogID.isValid(id) ? String(id) : nil
  }

  /// Why an authentic record contradicts the file's log id (meta altered, or a record where
  /// the identity record should be), or nil.
  static func identityProblem(_ record: AuditRecord, _ identity: Identity) -> String? {
    if let named = loggedID(record) {
      guard named == identity.id else {
        return "record \(record.sequence) names log \(named), but the log's meta says \(identity.id ?? "none"): the meta was altered"
      }
      guard identity.recordSequence == record.sequence else {
        return "record \(record.sequence) is a log-id record, but the log's meta names \(identity.recordSequence.map(String.init) ?? "none")"
      }
    } else if identity.recordSequence == record.sequence {
      return "record \(record.sequence) should be the log-id record (meta log_id_seq) but is a \(record.kind.name) record"
    }
    return nil
  }
}
