import CLinux
import CSQLite
import Glibc
import ScanCore
import ScanPlatform
import Synchronization

/// Which log a record belongs to (docs/audit-log.md, "Which log: the log id, a missing log").
///
/// A log id is 128 random bits (libsodium's CSPRNG), made when a chain is created and never
/// changed. It is kept in the database's `meta.log_id` and in the chain's first record (kind
/// `state`, detail `log-id: log <id>`), so the MAC chain covers it; `meta.log_id_seq` names that
/// record. A keyed log made before log ids gets one at its next start (an "adopted" id, marked
/// `meta.log_id_adopted` with the last sequence it had then) and the record goes after its
/// existing records. Sequences are per log: (log, seq) names a record, seq alone does not.
public enum AuditLogID {
  public static let hexDigits = 32

  /// A new log id: 32 lowercase hex digits.
  public static func make() -> String {
    precondition(sg_sodium_init() == 0, "libsodium could not start")
    var raw = [UInt8](repeating: 0, count: hexDigits / 2)
    raw.withUnsafeMutableBufferPointer { sg_random_bytes($0.baseAddress, $0.count) }
    return String(decoding: raw.flatMap { [Hex.digit($0 >> 4), Hex.digit($0)] }, as: UTF8.self)
  }

  public static func isValid(_ text: some StringProtocol) -> Bool {
    text.utf8.count == hexDigits && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
  }
}

/// A file as `stat` names it: device and inode.
struct FileIdentity: Equatable, Sendable {
  var device: UInt64
  var inode: UInt64

  init(device: UInt64, inode: UInt64) {
    self.device = device
    self.inode = inode
  }

  /// `path`'s identity now, or nil when it cannot be looked at.
  init?(_ path: String) {
    var st = stat()
    guard (try? syscall("stat \(path)", { stat(path, &st) })) != nil else { return nil }
    device = UInt64(st.st_dev)
    inode = UInt64(st.st_ino)
  }
}

/// The folder holding `path` ("." for a bare name).
func parentFolder(_ path: String) -> String {
  guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
  return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
}

/// Where a log's path stands against the file a connection opened.
public enum AuditFileCheck: Equatable, Sendable {
  case same
  /// Nothing at the path: the file was deleted or moved away.
  case removed
  /// The folder that held it is gone too.
  case directoryRemoved
  /// Another file is at the path.
  case replaced
  /// The path could not be looked at (permissions, I/O): not taken as a change.
  case unknown(String)

  /// How the log's file went away, for the journal and the log; nil while it is in place.
  public var goneReason: String? {
    switch self {
    case .same, .unknown: nil
    case .removed: "was deleted or moved away"
    case .directoryRemoved: "was deleted with its directory"
    case .replaced: "was replaced by another file"
    }
  }
}

/// The `log-id` file in the state directory (`ScanConfig.statePath("log-id")`): which log this
/// reader writes, kept beside its other state so a log that is gone is noticed at the next
/// start. One line: `scangate-log <log id> key <key id>`.
public enum AuditLogIDFile {
  public static let name = "log-id"
  static let magic = "scangate-log "

  public struct Entry: Equatable, Sendable {
    public var logID: String
    public var keyID: String
    public init(logID: String, keyID: String) {
      self.logID = logID
      self.keyID = keyID
    }
  }

  /// The entry in `path`; nil when there is no file.
  public static func load(_ path: String) throws(FileError) -> Entry? {
    guard fileExists(path) else { return nil }
    return try parse(try readWholeFile(path, maxBytes: 256), path: path)
  }

  public static func parse(_ bytes: [UInt8], path: String = "log-id") throws(FileError) -> Entry {
    var text = String(decoding: bytes, as: UTF8.self)
    if text.hasSuffix("\n") { text.removeLast() }
    let parts = text.split(separator: " ", omittingEmptySubsequences: false)
    guard text.hasPrefix(magic), parts.count == 4, parts[2] == "key", AuditLogID.isValid(parts[1]), parts[3].utf8.count <= 64,
      parts[3].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    else {
      throw FileError(path: path, reason: "not a log-id file ('\(magic)<log id> key <key id>')")
    }
    return Entry(logID: String(parts[1]), keyID: String(parts[3]))
  }

  public static func store(_ path: String, _ entry: Entry) throws(FileError) {
    try writeFileAtomically(path, Array("\(magic)\(entry.logID) key \(entry.keyID)\n".utf8), mode: 0o600)
  }
}

/// The writer's knowledge of which log it writes: the log id it opened, the state directory
/// (where the `log-id` file lives, and which it makes again when it is deleted), and a log that
/// went missing. Set up before `AuditLog.start`; then touched by the writer's thread, except the
/// locked texts STATUS and the fleet link read.
public final class AuditLogIdentity: @unchecked Sendable {
  /// `ScanConfig.stateDirectory`.
  public var stateDirectory: String? = nil
  /// The fleet link's state file, when the reader has a link (`<log>.fleet` is looked at too).
  public var fleetStatePath: String? = nil
  private let current = Mutex<String>("")
  private let missingStatus = Mutex<String>("")
  // The writer's thread only.
  /// Why the file of the log last open went away (set when found, used by the next open).
  var vanished: String? = nil
  var lastCheck: Int64 = 0
  /// The key of the log last open: written back to its file when a new log starts after the
  /// key file went away while the service ran (a new chain under the same key).
  var heldKey: AuditChainKey? = nil
  var keyNote = ""
  var directoryMode: mode_t = 0o750
  var idFileProblem = ""

  public init() {}

  /// The id of the log open now (nil before the first open, and while a log is missing).
  public var logID: String? { current.withLock { $0.isEmpty ? nil : $0 } }
  /// A log that went missing this run (the short form STATUS shows), or nil.
  public var missing: String? { missingStatus.withLock { $0.isEmpty ? nil : $0 } }

  func setCurrent(_ id: String) { current.withLock { $0 = id } }
  func setMissing(_ text: String) { missingStatus.withLock { $0 = text } }

  var idFilePath: String? { stateDirectory.map { $0 + "/" + AuditLogIDFile.name } }

  func journal(_ line: String) {
    writeStandardError("scangate: audit log: \(line)\n")
  }
}

extension AuditLog {
  /// Whether the open log's file went away (deleted, moved, replaced, or its directory
  /// deleted): a `stat` of the path against the file opened, before every commit (`urgent`)
  /// and every half second otherwise. When it did, the writer drops the connection and opens a
  /// new log (`openStore`), whose first records say which log went missing.
  func logFileGone(_ store: AuditStore, urgent: Bool) -> Bool {
    let now = Int64(SystemMonotonicClock().now().nanoseconds)
    guard urgent || now - identity.lastCheck >= 500_000_000 else { return false }
    identity.lastCheck = now
    guard let reason = store.fileCheck().goneReason else { return false }
    logWentMissing(store, reason, rewritten: 0)
    return true
  }

  /// After a commit: when the file went away meanwhile, the batch went into a file nobody will
  /// read; this throws (an I/O error), so the batch stays queued and goes to the new log.
  func confirmCommitted(_ store: AuditStore, records: Int) throws(SQLiteError) {
    guard let reason = store.fileCheck().goneReason else { return }
    logWentMissing(store, reason, rewritten: records)
    throw SQLiteError(code: SQLITE_IOERR, message: "\(settings.path) \(reason) while in use")
  }

  private func logWentMissing(_ store: AuditStore, _ reason: String, rewritten: Int) {
    store.keepWALOnClose()
    let id = identity.logID ?? "(made before log ids)"
    var text = "log \(id) at \(settings.path) \(reason) while in use; its records through \(store.lastSequence) are not in the new log"
    if rewritten > 0 {
      text += " (the last \(rewritten), committed after the file went, are written again to the new log)"
    }
    identity.vanished = text
    identity.setCurrent("")
    identity.setMissing("log \(id) \(reason)")
    identity.journal("FAULT \(FaultCode.logMissing.name): \(text)")
  }

  /// Before opening: the log's folder is made again when it is the state directory and was
  /// deleted (with the mode it had), and a WAL left without its database is moved aside (it
  /// must never be replayed into a new one).
  func prepareLogFolder(now: Int64) {
    let folder = parentFolder(settings.path)
    if !isDirectory(folder), let state = identity.stateDirectory, trimmed(state) == trimmed(folder) {
      if (try? syscall("mkdir \(folder)", { mkdir(folder, identity.directoryMode) })) != nil {
        identity.journal("made the state directory \(folder) again (it was deleted)")
        identity.vanished? += "; the state directory \(folder) was made again"
      }
    }
    // A database of 0 bytes beside a WAL is no database (a truncation, an emptied copy): SQLite
    // would start a new log over it and empty the WAL, losing the records it holds. Both are
    // moved aside, as when the database is missing.
    let empty = fileExists(settings.path) && fileSize(settings.path) == 0
    if (!fileExists(settings.path) || empty) && (fileExists(settings.path + "-wal") || fileExists(settings.path + "-shm")) {
      let moved = AuditStore.moveAside(settings.path, now: now / 1_000_000_000, reason: empty ? "empty" : "orphan")
      identity.journal("a WAL without its database\(empty ? " (an empty file of 0 bytes)" : "") was moved aside to \(moved)")
    }
  }

  private func trimmed(_ path: String) -> String {
    var p = path
    while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
    return p
  }

  /// The key for a new log when the key file is missing: the key of the log this writer had
  /// open (written back to its file: a new chain under the same key), else a new one.
  func newLogKey(_ path: String) throws(FileError) -> AuditChainKey {
    if let held = identity.heldKey {
      try held.write(to: path)
      identity.keyNote = "; the chain key file was gone and is written again from memory (key \(held.identifier))"
      identity.journal("chain key \(path) was gone: written again from memory (key \(held.identifier))")
      return held
    }
    let key = try AuditChainKey.generate(path)
    identity.keyNote = "; a new chain key \(key.identifier) was made"
    return key
  }

  /// After the chain is open: gives it its log id (a new chain: a new id; a keyed log made
  /// before ids: an adopted one), decides whether a log went missing (the file of the log open
  /// before went away; or, for a new chain, the state directory's `log-id` file or the fleet's
  /// state names a log that is not here), keeps the `log-id` file, and returns the
  /// `log-missing` record for the new log, if any.
  func settleIdentity(
    _ store: AuditStore, format: AuditStore.ChainFormat, key: AuditChainKey, movedAside: Bool, now: Int64
  ) throws(SQLiteError) -> AuditRecord? {
    var named: AuditLogIDFile.Entry? = nil
    var namedProblem: String? = nil
    if let path = identity.idFilePath {
      do { named = try AuditLogIDFile.load(path) } catch { namedProblem = error.reason }
    }
    var missing = identity.vanished
    let whileRunning = missing != nil
    var gone = named?.logID
    let id: String
    switch format {
    case .none:
      id = AuditLogID.make()
      if missing == nil && !movedAside, let evidence = startEvidence(named: named, namedProblem: namedProblem) {
        missing = evidence.text
        gone = evidence.gone
      }
      try store.beginKeyedChain(key, logID: id)
    default:
      if let existing = try store.identity().id {
        id = existing
      } else {
        id = AuditLogID.make()
        try store.adoptLogID(id)
      }
      if missing == nil, !movedAside, let named, named.logID != id {
        missing = "log \(named.logID), which \(identity.idFilePath ?? "log-id") names, is not the log at \(settings.path) (log \(id))"
      }
    }
    identity.vanished = nil
    identity.heldKey = key
    identity.setCurrent(id)
    let folder = parentFolder(settings.path)
    var st = stat()
    if (try? syscall("stat \(folder)", { stat(folder, &st) })) != nil { identity.directoryMode = st.st_mode & 0o7777 }
    keepIDFile(AuditLogIDFile.Entry(logID: id, keyID: key.identifier), named: named)
    let keyNote = identity.keyNote
    identity.keyNote = ""
    guard let missing else { return nil }
    let created = format == .none
    let detail = missing + (created ? "; this is a new log, \(id)" : "") + keyNote
    let here = created ? "new log \(id)" : "log \(id) is there"
    identity.setMissing(
      whileRunning ? "\(identity.missing ?? "log ?"); \(here)" : "log \(gone ?? "(id unknown)") is not at \(settings.path); \(here)")
    identity.journal("FAULT \(FaultCode.logMissing.name): \(detail)")
    return AuditRecord(
      sequence: 0, run: 0, eventSequence: 0, wallNanoseconds: now, kind: .fault, code: Int64(FaultCode.logMissing.rawValue),
      detail: FaultCode.logMissing.name + ": " + detail)
  }

  /// Evidence that a log existed where a new chain is being started, or nil: the `log-id`
  /// file, and the fleet link's acknowledged sequence. (The chain key alone is not: it may be
  /// provisioned before the first start.)
  private func startEvidence(named: AuditLogIDFile.Entry?, namedProblem: String?) -> (text: String, gone: String?)? {
    var found: [String] = []
    var gone = named?.logID
    if let named, let path = identity.idFilePath {
      found.append("\(path) names log \(named.logID) (key \(named.keyID))")
    } else if let namedProblem, let path = identity.idFilePath {
      found.append("\(path) exists (\(namedProblem))")
    }
    var fleetPaths = [settings.path + ".fleet"]
    if let p = identity.fleetStatePath, p != fleetPaths[0] { fleetPaths.append(p) }
    for path in fleetPaths where fileExists(path) {
      do {
        let entry = try FleetState.loadEntry(path)
        guard entry.acked > 0 || entry.logID != nil else { continue }
        found.append("the fleet's broker acknowledged records through \(entry.acked)\(entry.logID.map { " of log \($0)" } ?? "") (\(path))")
        if gone == nil { gone = entry.logID }
      } catch {
        found.append("the fleet state \(error)")
      }
    }
    guard !found.isEmpty else { return nil }
    return (
      "log \(gone ?? "(id unknown)") is gone: there is no database at \(settings.path), but \(found.joined(separator: "; and "))", gone
    )
  }

  /// Why the log at the path must not be continued, or nil: the fleet's broker acknowledged a
  /// record of this log that the file no longer holds (an older copy put back under newer fleet
  /// state). Continued, the writer would reuse those sequence numbers for other records and the
  /// link would never publish them; the log is moved aside instead and a new one begun.
  func behindAcknowledgement(_ store: AuditStore) -> (id: String, newest: Int64, acked: Int64, path: String)? {
    guard let id = try? store.identity().id, let newest = try? store.newestSequence() else { return nil }
    var fleetPaths = [settings.path + ".fleet"]
    if let p = identity.fleetStatePath, p != fleetPaths[0] { fleetPaths.append(p) }
    for path in fleetPaths where fileExists(path) {
      guard let entry = try? FleetState.loadEntry(path), entry.logID == id, entry.acked > newest else { continue }
      return (id, newest, entry.acked, path)
    }
    return nil
  }

  /// Writes the `log-id` file when it does not name this log (a problem is said once).
  private func keepIDFile(_ entry: AuditLogIDFile.Entry, named: AuditLogIDFile.Entry?) {
    guard let path = identity.idFilePath, named != entry else { return }
    do {
      try AuditLogIDFile.store(path, entry)
      identity.idFileProblem = ""
    } catch {
      let problem = "cannot keep the log id in \(error)"
      if problem != identity.idFileProblem { identity.journal(problem) }
      identity.idFileProblem = problem
    }
  }

  /// The id of the log open now: what the fleet link publishes with every record.
  public var writerLog: WriterLog { identity.logID.map { .open($0) } ?? .opening }
}
