import CLinux
import Glibc
import ScanBase

/// Secret bytes in memory, for the executable's tools (which import no C library): libsodium's
/// random bytes and its wipe, which the compiler cannot drop.
public enum SecretBytes {
  /// `count` bytes from the kernel's CSPRNG (libsodium's randombytes_buf).
  public static func random(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBufferPointer { sg_random_bytes($0.baseAddress, $0.count) }
    return bytes
  }

  /// Zeroes `bytes` in place (sodium_memzero): a key or seed no longer needed.
  public static func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) }
  }

  /// Zeroes the bytes `buffer` points at.
  public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) { sg_memzero(buffer.baseAddress, buffer.count) }
}

/// A pseudo-terminal pair (the demo's simulated panel): the master descriptor, and the path a
/// serial port opens.
public func openPseudoTerminal() throws(FileError) -> (master: Int32, path: String) {
  var name = [CChar](repeating: 0, count: 128)
  let master: Int32
  do { master = try syscall("open a pty", { sg_open_pty(&name, name.count) }) } catch {
    throw FileError(path: "/dev/ptmx", reason: error.code.description)
  }
  return (master, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
}
