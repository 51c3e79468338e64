import CLinux
import Glibc
import ScanBase
import Synchronization

/// The state files a reader keeps in a folder, named in that folder's `state-files` (one name a
/// line, written durably whenever one is added): a state file that the list names and that is
/// missing was deleted, and is a fault, never a fresh start (docs/credentials.md, "What survives
/// a restart"). An administrator who means to start one empty removes its line too.
public enum StateFileList {
  public static let name = "state-files"
  static let bytesMax = 4_096

  /// The list beside `file`.
  public static func path(beside file: String) -> String { folder(of: file) + "/" + name }

  /// Every state file this process keeps (full paths): the list is written whole from it, so a
  /// list made again after its folder was deleted still names the files not written since.
  private static let kept = Mutex<[String]>([])

  /// Whether the list beside `file` names it. A list that is there but cannot be read names
  /// every file (a missing one is then a fault: fail-secure, never a fresh start).
  public static func names(_ file: String) -> Bool {
    let list = path(beside: file)
    let text: [UInt8]
    do { text = try readWholeFile(list, maxBytes: bytesMax) } catch { return fileExists(list) }
    let base = Array(baseName(of: file).utf8)
    return text.split(separator: 0x0A).contains { $0.elementsEqual(base) }
  }

  /// Adds `file` to the list beside it (durably), with every other file this process keeps in
  /// that folder and every name the list held; nothing written when it named them all already.
  public static func add(_ file: String) throws(FileError) {
    let list = path(beside: file)
    let folder = folder(of: file)
    let all = kept.withLock { files -> [String] in
      if !files.contains(file) { files.append(file) }
      return files.filter { Self.folder(of: $0) == folder }.map { baseName(of: $0) }
    }
    let text = (try? readWholeFile(list, maxBytes: bytesMax)) ?? []
    var names = text.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
    let before = names.count
    for name in all where !names.contains(name) { names.append(name) }
    guard names.count > before || !fileExists(list) else { return }
    try writeFileAtomically(list, Array(names.map { $0 + "\n" }.joined().utf8), mode: 0o600)
  }

  /// Why `file`, which the list names, is missing: the words every owner refuses it with.
  public static func missing(_ file: String) -> FileError {
    FileError(
      path: file,
      reason: "missing, and this reader kept it (\(path(beside: file)) names it): deleted, so what it protected is unknown; "
        + "restore it, or remove its line from \(name) to start it empty")
  }

  static func folder(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
  }

  static func baseName(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
    return String(path[path.utf8.index(after: slash)...])
  }
}

/// A state file's identity (device and inode) as it was opened: compared with what its path
/// holds after every durable write, since `fdatasync` of a file whose name was removed succeeds.
struct FileIdentity: Equatable {
  var device: UInt64
  var inode: UInt64

  init(_ st: stat) {
    device = UInt64(st.st_dev)
    inode = UInt64(st.st_ino)
  }

  /// What `path` (a C string made once: nothing allocated per call) holds now (nil: nothing, or
  /// not reachable).
  static func at(_ path: UnsafePointer<CChar>) -> FileIdentity? {
    var st = stat()
    guard (try? syscall("stat \(String(cString: path))", { stat(path, &st) })) != nil else { return nil }
    return FileIdentity(st)
  }
}
