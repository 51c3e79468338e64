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

/// Reads a whole regular file, refusing directories, devices and files over `maxBytes`.
public func readWholeFile(_ path: String, maxBytes: Int) throws(FileError) -> [UInt8] {
  let fd: Int32
  do { fd = try syscall("open \(path)", { sg_open(path, O_RDONLY | O_CLOEXEC, 0) }) } catch {
    throw FileError(path: path, reason: error.code.description)
  }
  defer { close(fd) }
  var st = stat()
  do { _ = try syscall("fstat \(path)", { fstat(fd, &st) }) } catch { throw FileError(path: path, reason: error.code.description) }
  if (st.st_mode & S_IFMT) == S_IFDIR { throw FileError(path: path, reason: "is a directory") }
  if (st.st_mode & S_IFMT) != S_IFREG { throw FileError(path: path, reason: "not a regular file") }
  if Int(st.st_size) > maxBytes {
    throw FileError(path: path, reason: "file is \(st.st_size) bytes, over the \(maxBytes)-byte limit")
  }
  // Files under /proc and /sys report size 0: read those until EOF, up to maxBytes.
  let sized = st.st_size > 0
  var bytes = [UInt8](repeating: 0, count: sized ? Int(st.st_size) : min(maxBytes, 65_536))
  var filled = 0
  while filled < bytes.count {
    let n: Int
    do { n = try readSome(fd, into: &bytes, offset: filled, "read \(path)") } catch {
      throw FileError(path: path, reason: error.code.description)
    }
    if n == 0 { break }  // the file shrank while we read: keep what is there
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

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
public func writeFileAtomically(_ path: String, _ bytes: [UInt8]) throws(FileError) {
  let temporary = path + ".tmp"
  let fd: Int32
  do { fd = try syscall("open \(temporary)", { sg_open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }) } catch {
    throw FileError(path: temporary, reason: error.code.description)
  }
  do {
    try writeAll(fd, bytes, "write \(temporary)")
    _ = try syscall("fsync \(temporary)", { fsync(fd) })
  } catch {
    close(fd)
    throw FileError(path: temporary, reason: error.code.description)
  }
  close(fd)
  do { _ = try syscall("rename \(temporary)", { rename(temporary, path) }) } catch {
    throw FileError(path: path, reason: error.code.description)
  }
}
