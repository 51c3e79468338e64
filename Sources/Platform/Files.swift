import CLinux
import Glibc
import ScanBase

/// A file-level failure with a reason a person can act on.
public struct FileError: Error, Equatable, CustomStringConvertible, Sendable {
  public var path: String
  public var reason: String
  public var description: String { "\(path): \(reason)" }
  public init(path: String, reason: String) {
    self.path = path
    self.reason = reason
  }
}

/// Opens `path` for reading the way every file from outside is opened: without blocking (a FIFO
/// or a device at the path must not stall the loop or startup) and refused unless it is a regular
/// file within `maxBytes`. Symlinks are followed (sites link configs). The descriptor is blocking
/// again when returned: reads of a regular file do not wait.
public func openRegularFile(_ path: String, maxBytes: Int) throws(FileError) -> (fd: Int32, size: Int) {
  let fd: Int32
  do { fd = try syscall("open \(path)", { sg_open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0) }) } catch {
    throw FileError(path: path, reason: error.code.description)
  }
  let st: stat
  do { st = try fileStatus(fd, path) } catch {
    closeDescriptor(fd)
    throw error
  }
  let type = st.st_mode & S_IFMT
  guard type == S_IFREG else {
    closeDescriptor(fd)
    throw FileError(path: path, reason: "\(PathChecks.typeName(type)), not a regular file: refused")
  }
  guard Int(st.st_size) <= maxBytes else {
    closeDescriptor(fd)
    throw FileError(path: path, reason: "file is \(st.st_size) bytes, over the \(maxBytes)-byte limit")
  }
  clearNonBlocking(fd)
  return (fd, Int(st.st_size))
}

/// fstat(2) of an opened file; a failure names `path`.
func fileStatus(_ fd: Int32, _ path: String) throws(FileError) -> stat {
  var st = stat()
  do { _ = try syscall("fstat \(path)", { fstat(fd, &st) }) } catch { throw FileError(path: path, reason: error.code.description) }
  return st
}

/// Opens (or creates, 0600, its directory synced so the new name survives a power cut) a state
/// file the writer updates in place with `pwrite` + `fdatasync` (slot files: the credential
/// state, the audit log's committed mark). Never blocks; refused unless a regular file. Returns
/// the descriptor (read-write) and the file's size.
public func openSlotFile(_ path: String) throws(FileError) -> (fd: Int32, size: Int) {
  let created = !fileExists(path)
  let fd: Int32
  do {
    fd = try syscall("open \(path)", { sg_open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600) })
  } catch {
    throw FileError(path: path, reason: error.code.description)
  }
  do throws(FileError) {
    let st = try fileStatus(fd, path)
    guard st.st_mode & S_IFMT == S_IFREG else { throw FileError(path: path, reason: "not a regular file: refused") }
    if created { try syncDirectory(of: path) }
    return (fd, Int(st.st_size))
  } catch {
    closeDescriptor(fd)
    throw error
  }
}

/// Reads a whole regular file (see `openRegularFile`), refusing anything else and files over
/// `maxBytes`. Files under /proc and /sys report size 0: those are read until EOF, up to maxBytes.
public func readWholeFile(_ path: String, maxBytes: Int) throws(FileError) -> [UInt8] {
  let (fd, size) = try openRegularFile(path, maxBytes: maxBytes)
  defer { closeDescriptor(fd) }
  return try readOpened(fd, upTo: size > 0 ? size : min(maxBytes, 65_536), path: path)
}

/// Reads up to `count` bytes from the start of an opened file (fewer when it ends first: a file
/// that shrank while it was read keeps what is there).
public func readOpened(_ fd: Int32, upTo count: Int, path: String) throws(FileError) -> [UInt8] {
  var bytes = [UInt8](repeating: 0, count: count)
  var filled = 0
  while filled < bytes.count {
    let n: Int
    do { n = try readSome(fd, into: &bytes, offset: filled, "read \(path)") } catch {
      throw FileError(path: path, reason: error.code.description)
    }
    if n == 0 { break }
    filled += n
  }
  if filled < bytes.count { bytes.removeLast(bytes.count - filled) }
  return bytes
}

/// Names in a directory (not "." and ".."), sorted.
public func listDirectory(_ path: String) throws(FileError) -> [String] {
  guard let dir = opendir(path) else { throw FileError(path: path, reason: Errno.current.description) }
  defer { closedir(dir) }
  var names: [String] = []
  while let entry = readdir(dir) {
    let name = withUnsafePointer(to: entry.pointee.d_name) {
      $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return names.sorted()
}

/// Whether `path` is a directory.
public func isDirectory(_ path: String) -> Bool {
  var st = stat()
  return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
}

/// Whether `path` exists.
public func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// `fileExists` for a path made into a C string once (the loop's once-a-second look for its
/// state files): allocates nothing.
public func pathExists(_ cPath: UnsafePointer<CChar>) -> Bool { access(cPath, F_OK) == 0 }
/// Removes `path` when it is there; false when it could not be (a missing file is not a failure).
@discardableResult
public func removeFile(_ path: String) -> Bool {
  do { _ = try syscall("unlink \(path)", { unlink(path) }) } catch { return error.code == .noSuchFile }
  return true
}

// MARK: - The one durable write

/// How the durable write makes its temporary file.
public enum TemporaryRule: Equatable, Sendable {
  /// Opened without blocking (a FIFO left at the name never stalls the caller, often the loop),
  /// truncated when an earlier crash left one, refused unless a regular file, then given `mode`
  /// (fchmod: the umask does not narrow it).
  case mode(UInt32)
  /// A secret's: a leftover temporary is removed and a new one created (O_EXCL, never through a
  /// symlink), mode 0600, owned by the user writing it.
  case secret

  /// The temporary's mode bits.
  var permissions: mode_t {
    switch self {
    case .mode(let mode): mode_t(mode)
    case .secret: 0o600
    }
  }
}

/// A file written whole and synced under a temporary name beside its target, not yet in
/// place: the first half of the one durable write. `replace()` or `createNew()` puts it in place
/// (the directory synced); `discard()` removes it.
public struct StagedFile: Sendable {
  /// The file it becomes.
  public let path: String
  /// Where its bytes are now.
  public let temporary: String

  /// Renames the temporary over `path` and syncs the directory: `path` holds the new bytes and
  /// survives a power cut; until the rename, the old content stays whole (and the temporary is
  /// removed when the rename fails).
  public func replace() throws(FileError) {
    do { try renameDurably(temporary, to: path) } catch {
      discard()
      throw error
    }
  }

  /// Renames the temporary over `path` without syncing the directory: the new content is whole
  /// once renamed (it was synced), but a power cut may bring back the old name's content. Only
  /// for a mark that may lag (docs/audit-log.md, "What the log writes": the fleet's acknowledged
  /// point, whose stale value only means records published again).
  public func replaceMayLag() throws(FileError) {
    do { _ = try syscall("rename \(temporary)", { rename(temporary, path) }) } catch {
      discard()
      throw FileError(path: path, reason: error.code.description)
    }
  }

  /// Links the temporary to `path`, which must not exist (never overwrites: it fails with "File
  /// exists"), removes the temporary and syncs the directory.
  public func createNew() throws(FileError) {
    var failure: SystemError? = nil
    do { _ = try syscall("link \(temporary)", { link(temporary, path) }) } catch { failure = error }
    discard()
    if let failure { throw FileError(path: path, reason: failure.code.description) }
    try syncDirectory(of: path)
  }

  /// Removes the temporary (nothing was put in place).
  public func discard() { removeFile(temporary) }
}

/// Writes `bytes` to `path + suffix` under `rule` and fsyncs it: the first half of the one
/// durable write, for callers that put several files in place together (a fleet bundle).
public func stageFile(_ path: String, _ bytes: [UInt8], suffix: String = ".tmp", rule: TemporaryRule) throws(FileError) -> StagedFile {
  let staged = StagedFile(path: path, temporary: path + suffix)
  let fd = try openTemporary(staged.temporary, rule)
  do {
    _ = try syscall("fchmod \(staged.temporary)", { fchmod(fd, rule.permissions) })
    try writeAll(fd, bytes, "write \(staged.temporary)")
    _ = try syscall("fsync \(staged.temporary)", { fsync(fd) })
  } catch {
    closeDescriptor(fd)
    staged.discard()
    throw FileError(path: staged.temporary, reason: error.code.description)
  }
  closeDescriptor(fd)
  return staged
}

/// The temporary's descriptor (blocking, write-only, close-on-exec), under `rule`.
private func openTemporary(_ temporary: String, _ rule: TemporaryRule) throws(FileError) -> Int32 {
  let fd: Int32
  switch rule {
  case .mode(let mode):
    let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
    do { fd = try syscall("open \(temporary)", { sg_open(temporary, flags, mode) }) } catch {
      throw FileError(path: temporary, reason: error.code.description)
    }
    let type: mode_t
    do { type = try fileStatus(fd, temporary).st_mode & S_IFMT } catch {
      closeDescriptor(fd)
      throw error
    }
    guard type == S_IFREG else {
      closeDescriptor(fd)
      throw FileError(path: temporary, reason: "\(PathChecks.typeName(type)), not a regular file: refused")
    }
    // The mode asked for, not what the umask of whoever started the process leaves of it.
    do { _ = try syscall("fchmod \(temporary)", { fchmod(fd, mode_t(mode)) }) } catch {
      closeDescriptor(fd)
      throw FileError(path: temporary, reason: error.code.description)
    }
    clearNonBlocking(fd)
  case .secret:
    removeFile(temporary)  // a leftover of an earlier crash (never the real secret)
    let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW
    do { fd = try syscall("open \(temporary)", { sg_open(temporary, flags, 0o600) }) } catch {
      throw FileError(path: temporary, reason: error.code.description)
    }
  }
  return fd
}

/// The one durable write: `bytes` to `path.tmp` (mode `mode`), fsync, rename over `path`, fsync
/// the directory. When it returns, the new content survives a power cut; until the rename, the
/// old content stays whole. Every write of state that protects a decision goes through here (a
/// secret through `SecretFile`, a fleet bundle's files through `stageFile`: the same two halves).
public func writeFileAtomically(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o644) throws(FileError) {
  try stageFile(path, bytes, rule: .mode(mode)).replace()
}

/// `writeFileAtomically` without the directory's fsync (`StagedFile.replaceMayLag`): whole, old
/// or new, never half; after a power cut possibly the old. For a mark whose lag is harmless.
public func writeFileMayLag(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o644) throws(FileError) {
  try stageFile(path, bytes, rule: .mode(mode)).replaceMayLag()
}

/// rename(2) then fsync of the target's directory, so the new name survives a power cut (the
/// durable write's second half; also how a damaged file is moved aside).
public func renameDurably(_ from: String, to path: String) throws(FileError) {
  do { _ = try syscall("rename \(from)", { rename(from, path) }) } catch {
    throw FileError(path: path, reason: error.code.description)
  }
  try syncDirectory(of: path)
}

/// fsync of the directory holding `path` (a created, renamed or removed name is durable after it).
public func syncDirectory(of path: String) throws(FileError) {
  let directory: String
  if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
    directory = slash == path.utf8.startIndex ? "/" : String(path[..<slash])
  } else {
    directory = "."
  }
  do {
    let fd = try syscall("open \(directory)", { sg_open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) })
    defer { closeDescriptor(fd) }
    _ = try syscall("fsync \(directory)", { fsync(fd) })
  } catch {
    throw FileError(path: directory, reason: error.code.description)
  }
}

/// Sets a regular file's permission bits to `mode` (never following a link, never opening
/// anything else); `ifExists`: a missing file is no error.
public func setFileMode(_ path: String, _ mode: UInt32, ifExists: Bool = false) throws(FileError) {
  let fd: Int32
  do { fd = try syscall("open \(path)", { sg_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0) }) } catch {
    if ifExists && error.code == .noSuchFile { return }
    throw FileError(path: path, reason: error.code.description)
  }
  defer { closeDescriptor(fd) }
  let status = try fileStatus(fd, path)
  guard status.st_mode & S_IFMT == S_IFREG else {
    throw FileError(path: path, reason: "\(PathChecks.typeName(status.st_mode & S_IFMT)), not a regular file: refused")
  }
  guard status.st_mode & 0o7777 != mode_t(mode) else { return }
  do { _ = try syscall("fchmod \(path)", { fchmod(fd, mode_t(mode)) }) } catch {
    throw FileError(path: path, reason: error.code.description)
  }
}

/// The size of what `path` names (nil: nothing there, or not reachable). Follows no link.
public func fileSize(_ path: String) -> Int? {
  var st = stat()
  guard (try? syscall("lstat \(path)", { lstat(path, &st) })) != nil else { return nil }
  return Int(st.st_size)
}
