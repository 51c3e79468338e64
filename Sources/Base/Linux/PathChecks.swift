import CLinux
import Glibc
import ScanCore

/// Every path a reader's configuration names, and what must be there: checked with `stat` alone,
/// without opening anything (a FIFO at a path must not stall `check-config`, startup or a reload; a
/// directory or a device must be named as what it is, not fail later as "disk I/O error").
/// `check-config` names each path refused here; the audit database's check runs before SQLite
/// is handed the path (SQLite opens a read-only database blocking: a FIFO there would hang
/// `scangate log`, `log verify` and the fleet link's reader).
public enum PathChecks {
  /// What a configured path must be.
  public enum Kind: Equatable, Sendable {
    /// A regular file of at most `maxBytes` (read whole, or written in place by the reader).
    case file(maxBytes: Int)
    /// A directory (the state directory).
    case directory
    /// A SQLite database: a regular file or nothing yet, and so its `-wal`, `-shm` and `-journal`.
    case database
    /// The replay source: a folder of images (each a regular file) or one raw file.
    case replay
  }

  /// One configured path: the configuration key (or what the reader calls the file) and the path.
  public struct Entry: Equatable, Sendable {
    public var role: String
    public var path: String
    public var kind: Kind
    public init(role: String, path: String, kind: Kind) {
      self.role = role
      self.path = path
      self.kind = kind
    }
  }

  /// Why `path` is not a regular file of at most `maxBytes`; nil when it is, or when nothing is
  /// there (a missing file is reported where it is used). Only `stat` (following links, as the
  /// reader opens it): nothing is opened, so a FIFO cannot stall the check and a file this user
  /// may not read (`check-config` run by someone other than the service) is not refused for that.
  /// The words are `openRegularFile`'s, which refuses the same files when the reader opens them.
  public static func fileProblem(_ path: String, maxBytes: Int) -> String? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    let type = st.st_mode & S_IFMT
    guard type == S_IFREG else { return "\(typeName(type)), not a regular file: refused" }
    guard Int(st.st_size) <= maxBytes else { return "file is \(st.st_size) bytes, over the \(maxBytes)-byte limit" }
    return nil
  }

  /// Why SQLite must not be handed `name` (a path, or a `file:` URI as `AuditStore` passes a
  /// read-only one): the database, its `-wal`, `-shm` or `-journal` is there and is not a regular
  /// file. nil when each is a regular file or absent (SQLite creates them). Only `stat`: nothing
  /// is opened.
  public static func databaseProblem(_ name: String) -> String? {
    guard let path = databasePath(name) else { return nil }
    for suffix in ["", "-wal", "-shm", "-journal"] {
      let file = path + suffix
      var st = stat()
      guard stat(file, &st) == 0 else { continue }
      let type = st.st_mode & S_IFMT
      guard type != S_IFREG else { continue }
      return "\(file) \(typeName(type)), not a regular file: refused (SQLite is never handed it)"
    }
    return nil
  }

  /// Why `path` is not a directory; nil when it is or when nothing is there.
  public static func directoryProblem(_ path: String) -> String? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    let type = st.st_mode & S_IFMT
    return type == S_IFDIR ? nil : "\(typeName(type)), not a directory: refused"
  }

  /// Why the replay source at `path` would be refused: a folder's images must each be a regular
  /// file; anything else at `path` must be a regular (raw) file.
  public static func replayProblem(_ path: String) -> String? {
    guard isDirectory(path) else { return fileProblem(path, maxBytes: ReplayFrameSource.rawBytesMax) }
    let names: [String]
    do { names = try listDirectory(path) } catch { return error.reason }
    let maxBytes = ImageFileReader().maxFileBytes
    for name in names where ReplayFrameSource.isImageName(name) {
      if let problem = fileProblem(path + "/" + name, maxBytes: maxBytes) { return "\(path)/\(name): \(problem)" }
    }
    return nil
  }

  /// Why `entry` is refused, or nil.
  public static func problem(_ entry: Entry) -> String? {
    switch entry.kind {
    case .file(let maxBytes): fileProblem(entry.path, maxBytes: maxBytes)
    case .directory: directoryProblem(entry.path)
    case .database: databaseProblem(entry.path)
    case .replay: replayProblem(entry.path)
    }
  }

  /// Every path `config` makes the reader read or write (the allow-list first), with what must be there.
  public static func entries(_ config: ScanConfig) -> [Entry] {
    var list: [Entry] = []
    func file(_ role: String, _ path: String?, _ maxBytes: Int = Int.max) {
      if let path, !path.isEmpty { list.append(Entry(role: role, path: path, kind: .file(maxBytes: maxBytes))) }
    }
    file("allow_list.path", config.allowListPath, config.engine.allowList.fileBytesMax)
    file("schedule.path", config.door.schedulePath, ScheduleSet.fileBytesMax)
    if config.cameraSource == .replay && !config.replayPath.isEmpty {
      list.append(Entry(role: "camera.replay_path", path: config.replayPath, kind: .replay))
    }
    if config.cameraSource == .replay && !config.cameraSecond.isEmpty {
      list.append(Entry(role: "camera.second", path: config.cameraSecond, kind: .replay))
    }
    if let directory = config.stateDirectory { list.append(Entry(role: "state.directory", path: directory, kind: .directory)) }
    let c = config.credentials
    file("credentials.trust_file", c.trustFile, CredentialFiles.trustBytesMax)
    file("credentials.revocation_file", c.revocationFile, CredentialFiles.revocationBytesMax)
    file("credentials.site_key_file", c.siteKeyFile, SecretFile.bytesMax)
    file("credentials.clock_floor_file", c.clockFloorFile ?? config.statePath("clock-floor"), 256)
    if c.enabled {
      file("credentials.used_file", c.usedFile ?? config.statePath("used-passes"))
      file("state: rotating steps", config.statePath("replay-steps"))
      file("state: revocation version", config.statePath("revocation-version"))
    }
    let log = config.log
    if !log.path.isEmpty {
      list.append(Entry(role: "log.path", path: log.path, kind: .database))
      file("log.chain_key_file", log.chainKeyPath, SecretFile.bytesMax)
      file("log: tag key", TagKey.defaultPath(forLog: log.path), SecretFile.bytesMax)
    }
    if config.fleet.isEnabled {
      let f = config.fleet
      let state = f.stateFile.isEmpty ? log.path + ".fleet" : f.stateFile
      file("fleet.state_file", state, 256)
      file("fleet: used command nonces", state + "-nonces", 1 << 20)
      file("fleet: bundle version", state + "-bundle-version", 256)
      file("fleet.tls_ca_file", f.tlsCAFile, MQTTClient.tlsFileBytesMax)
      file("fleet.tls_cert_file", f.tlsCertFile, MQTTClient.tlsFileBytesMax)
      file("fleet.tls_key_file", f.tlsKeyFile, MQTTClient.tlsFileBytesMax)
      file("fleet.password_file", f.passwordFile, SecretFile.bytesMax)
    }
    file("console.secret_file", config.consoleSecretFile, SecretFile.bytesMax)
    file("console.tls_cert_file", config.consoleTLSCertFile, ConsoleTLS.pemBytesMax)
    file("console.tls_key_file", config.consoleTLSKeyFile, ConsoleTLS.keyBytesMax)
    file("console.tls_client_ca_file", config.consoleTLSClientCAFile, ConsoleTLS.pemBytesMax)
    file("panel.scbk_file", config.panel.scbkFile, SecretFile.bytesMax)
    file("panel.com_file", config.panel.comFile, 256)
    if config.keypad.enabled { file("keypad.pin_key_file", config.keypad.pinKeyFile, SecretFile.bytesMax) }
    return list
  }

  /// Each configured path that is refused, with why.
  public static func problems(_ config: ScanConfig) -> [(entry: Entry, problem: String)] {
    entries(config).compactMap { entry in problem(entry).map { (entry, $0) } }
  }

  // MARK: - Helpers

  /// The file SQLite would open for `name`: a path, or the path of a `file:` URI; nil for an
  /// in-memory or temporary database.
  static func databasePath(_ name: String) -> String? {
    guard !name.isEmpty, name != ":memory:" else { return nil }
    guard name.hasPrefix("file:") else { return name }
    var rest = Substring(name.dropFirst(5))
    if rest.hasPrefix("//") {
      rest = rest.dropFirst(2)
      guard let slash = rest.firstIndex(of: "/") else { return nil }
      rest = rest[slash...]
    }
    if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
    return rest.isEmpty || rest == ":memory:" ? nil : String(rest)
  }

  static func typeName(_ type: mode_t) -> String {
    switch type {
    case S_IFDIR: "is a directory"
    case S_IFIFO: "is a FIFO (named pipe)"
    case S_IFCHR, S_IFBLK: "is a device"
    case S_IFSOCK: "is a socket"
    case S_IFREG: "is a regular file"
    default: "is not a regular file"
    }
  }
}
