import CLinux
import Glibc
import ScanBase

/// What must be at a configured path, checked with `stat` alone, without opening anything (a FIFO at a path must not stall `check-config`, startup or a reload; a
/// directory or a device must be named as what it is, not fail later as "disk I/O error").
/// `check-config` names each path refused here (the list of paths is the service's:
/// `PathChecks+Config.swift`); the audit database's check runs before SQLite
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

  public static func typeName(_ type: mode_t) -> String {
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
