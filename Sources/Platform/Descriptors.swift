import CLinux
import Glibc
import ScanBase

// Read, write, poll and socket options on plain descriptors, under the errno policy (Errno.swift):
// the helpers the tools and helper threads use instead of calling Glibc and looping on EINTR.

/// Writes all of `bytes` to a blocking descriptor, continuing after short writes.
public func writeAll(
  _ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ operation: @autoclosure () -> String = "write"
) throws(SystemError) {
  var offset = 0
  while offset < bytes.count {
    offset += try syscall(operation(), { Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset) })
  }
}

/// Writes all of `text`'s UTF-8 bytes (see `writeAll(_:_:_:)`).
public func writeAll(_ fd: Int32, _ text: String, _ operation: @autoclosure () -> String = "write") throws(SystemError) {
  var text = text
  try text.withUTF8 { bytes in Result { () throws(SystemError) in try writeAll(fd, UnsafeRawBufferPointer(bytes), operation()) } }.get()
}

/// Writes `bytes[range]` (all of them by default; see `writeAll(_:_:_:)`).
public func writeAll(
  _ fd: Int32, _ bytes: [UInt8], range: Range<Int>? = nil, _ operation: @autoclosure () -> String = "write"
) throws(SystemError) {
  try bytes.withUnsafeBytes { b in
    Result { () throws(SystemError) in try writeAll(fd, UnsafeRawBufferPointer(rebasing: b[range ?? 0..<b.count]), operation()) }
  }.get()
}

/// One read(2) from a blocking descriptor into `buffer`: the byte count, 0 at end of stream.
public func readSome(
  _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ operation: @autoclosure () -> String = "read"
) throws(SystemError) -> Int {
  try syscall(operation(), { Glibc.read(fd, buffer.baseAddress, buffer.count) })
}

/// One read(2) into `buffer[offset...]`: the byte count, 0 at end of stream.
public func readSome(
  _ fd: Int32, into buffer: inout [UInt8], offset: Int = 0, _ operation: @autoclosure () -> String = "read"
) throws(SystemError) -> Int {
  try buffer.withUnsafeMutableBytes { b in
    Result { () throws(SystemError) in try readSome(fd, into: UnsafeMutableRawBufferPointer(rebasing: b[offset...]), operation()) }
  }.get()
}

/// poll(2) over `set` (EINTR retried): how many descriptors are ready, 0 on timeout.
public func pollDescriptors(
  _ set: UnsafeMutableBufferPointer<pollfd>, timeoutMilliseconds: Int, _ operation: @autoclosure () -> String = "poll"
) throws(SystemError) -> Int {
  Int(try syscall(operation(), { poll(set.baseAddress, nfds_t(set.count), Int32(clamping: timeoutMilliseconds)) }))
}

/// poll(2) over an array of descriptors (see `pollDescriptors(_:timeoutMilliseconds:_:)`).
public func pollDescriptors(
  _ set: inout [pollfd], timeoutMilliseconds: Int, _ operation: @autoclosure () -> String = "poll"
) throws(SystemError) -> Int {
  try set.withUnsafeMutableBufferPointer { s in
    Result { () throws(SystemError) in try pollDescriptors(s, timeoutMilliseconds: timeoutMilliseconds, operation()) }
  }.get()
}

/// setsockopt(2) with an integer value.
public func setSocketOption(
  _ fd: Int32, level: Int32, name: Int32, value: Int32, _ operation: @autoclosure () -> String = "setsockopt"
) throws(SystemError) {
  var value = value
  _ = try syscall(operation(), { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) })
}

/// Clears O_NONBLOCK on `fd` (a file opened without blocking so that opening it could not wait),
/// best effort: a descriptor left non-blocking reads a regular file the same.
public func clearNonBlocking(_ fd: Int32) {
  guard let flags = try? syscall("fcntl F_GETFL", { sg_fcntl_int(fd, F_GETFL, 0) }) else { return }
  _ = try? syscall("fcntl F_SETFL", { sg_fcntl_int(fd, F_SETFL, flags & ~O_NONBLOCK) })
}

/// close(2), once. Linux releases the descriptor even when close reports EINTR or EIO, so it is
/// never retried (a retry could close a descriptor another thread was just given) and its errno
/// is not acted on: what must survive was synced before (`fsync`, `fdatasync`). EBADF means a
/// descriptor closed twice, a bug: it traps in debug builds.
@inline(never)
public func closeDescriptor(_ fd: Int32) {
  guard Glibc.close(fd) == -1 else { return }
  let code = Errno.current
  assert(code != .badDescriptor, "close(\(fd)): \(code) is a bug in ScanGate (closed twice?)")
}

/// Writes `text` to standard error, best effort (nowhere is left to report a failure). Never
/// traps: standard error may be closed (a decoder worker has no descriptor 2; a service started
/// with `2>&-`), and EBADF there is not a bug in ScanGate, unlike on a descriptor it opened.
public func writeStandardError(_ text: String) {
  var text = text
  text.withUTF8 { bytes in
    var offset = 0
    while offset < bytes.count {
      let n = Glibc.write(2, bytes.baseAddress! + offset, bytes.count - offset)
      if n > 0 {
        offset += n
      } else if n < 0 && Errno.current == .interrupted {
        continue
      } else {
        return
      }
    }
  }
}
