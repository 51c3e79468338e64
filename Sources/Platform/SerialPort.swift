import CLinux
import Glibc
import ScanBase

/// Serial ports (a USB adapter or a UART) set up the one way ScanGate uses them: raw 8N1, no
/// modem control, not a controlling terminal, closed on exec.
public enum SerialPort {
  /// Opens `path` and configures it at `baud` (a plain number such as 115200). `nonBlocking` for
  /// a descriptor the loop polls; blocking for a tool that waits on it. `terminalLineEndings`:
  /// the kernel sends each LF as CR LF (the console's port, read by a technician's terminal such
  /// as picocom or screen, which moves down without returning on a bare LF); never for a binary
  /// protocol. Returns the descriptor, which the caller closes.
  public static func open(path: String, baud: Int, nonBlocking: Bool = false, terminalLineEndings: Bool = false) throws(SystemError) -> Int32 {
    guard baud > 0 && baud <= Int(UInt32.max) else { throw SystemError(.invalidArgument, operation: "\(path): baud rate \(baud)") }
    let flags = O_RDWR | O_NOCTTY | O_CLOEXEC | (nonBlocking ? O_NONBLOCK : 0)
    let fd = try syscall("open \(path)", { sg_open(path, flags, 0) })
    do {
      _ = try syscall("\(path): set \(baud) baud raw 8N1", { sg_tty_configure_raw(fd, UInt32(baud)) })
      if terminalLineEndings { _ = try syscall("\(path): CR LF line endings", { sg_tty_output_crlf(fd) }) }
    } catch {
      closeDescriptor(fd)
      throw error
    }
    return fd
  }
}
