import CLinux
import Glibc

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
  var st = stat()
  do { _ = try syscall("fstat \(path)", { fstat(fd, &st) }) } catch {
    close(fd)
    throw FileError(path: path, reason: error.code.description)
  }
  let type = st.st_mode & S_IFMT
  guard type == S_IFREG else {
    close(fd)
    throw FileError(path: path, reason: "\(PathChecks.typeName(type)), not a regular file: refused")
  }
  guard Int(st.st_size) <= maxBytes else {
    close(fd)
    throw FileError(path: path, reason: "file is \(st.st_size) bytes, over the \(maxBytes)-byte limit")
  }
  let flags = sg_fcntl_int(fd, F_GETFL, 0)
  if flags >= 0 { _ = sg_fcntl_int(fd, F_SETFL, flags & ~O_NONBLOCK) }
  return (fd, Int(st.st_size))
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
  var st = stat()
  guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
    close(fd)
    throw FileError(path: path, reason: "not a regular file: refused")
  }
  if created {
    do { try syncDirectory(of: path) } catch {
      close(fd)
      throw error
    }
  }
  return (fd, Int(st.st_size))
}

/// Reads a whole regular file (see `openRegularFile`), refusing anything else and files over
/// `maxBytes`. Files under /proc and /sys report size 0: those are read until EOF, up to maxBytes.
public func readWholeFile(_ path: String, maxBytes: Int) throws(FileError) -> [UInt8] {
  let (fd, size) = try openRegularFile(path, maxBytes: maxBytes)
  defer { close(fd) }
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

/// The one durable write: `bytes` to `path.tmp` (mode `mode`), fsync, rename over `path`, fsync
/// the directory. When it returns, the new content survives a power cut; until the rename, the
/// old content stays whole. Every write of state that protects a decision goes through here.
/// The temporary is opened without blocking and must be a regular file: a FIFO left at
/// `path.tmp` (no reader: ENXIO; a reader: refused by type) never stalls the caller, which is
/// often the loop.
public func writeFileAtomically(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o644) throws(FileError) {
  let temporary = path + ".tmp"
  let fd: Int32
  let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
  do {
    fd = try syscall("open \(temporary)", { sg_open(temporary, flags, mode) })
  } catch {
    throw FileError(path: temporary, reason: error.code.description)
  }
  var st = stat()
  guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
    close(fd)
    throw FileError(path: temporary, reason: "\(PathChecks.typeName(st.st_mode & S_IFMT)), not a regular file: refused")
  }
  let status = sg_fcntl_int(fd, F_GETFL, 0)
  if status >= 0 { _ = sg_fcntl_int(fd, F_SETFL, status & ~O_NONBLOCK) }
  do {
    _ = try syscall("fchmod \(temporary)", { fchmod(fd, mode_t(mode)) })
    try writeAll(fd, bytes, "write \(temporary)")
    _ = try syscall("fsync \(temporary)", { fsync(fd) })
  } catch {
    close(fd)
    unlink(temporary)
    throw FileError(path: temporary, reason: error.code.description)
  }
  close(fd)
  try renameDurably(temporary, to: path)
}

/// rename(2) then fsync of the target's directory, so the new name survives a power cut.
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
    defer { close(fd) }
    _ = try syscall("fsync \(directory)", { fsync(fd) })
  } catch {
    throw FileError(path: directory, reason: error.code.description)
  }
}
