import CGPIOD
import CLinux
import ScanBase

/// A GPIO output line through libgpiod, requested for the owner's lifetime.
///
/// `deinit` drives the line inactive and releases it, on every exit path that runs Swift
/// cleanup. While the line is open the shim's crash guard also covers it: a fatal signal
/// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP) drives it inactive before the process
/// dies. Only after `kill -9` is the line left to the kernel: Raspberry Pi kernels keep its last
/// driven value, gpio-sim returns it to its pull (see docs/hardware.md, wiring).
public struct GPIODOutputLine: OutputLine, ~Copyable {
  private let line: OpaquePointer
  public let chip: String
  public let offset: UInt32

  /// Requests `offset` on `chip` (path, name or label) as an output, initially inactive.
  public init(chip: String, offset: UInt32, activeLow: Bool, consumer: String = "scangate") throws(GPIOError) {
    guard let line = sg_gpio_request_output(chip, offset, activeLow ? 1 : 0, consumer) else {
      throw GPIOError(errno: .current, operation: "request \(chip) line \(offset)")
    }
    self.line = line
    self.chip = chip
    self.offset = offset
  }

  deinit { sg_gpio_release(line) }

  /// The shim's line, for the relay watchdog (which drives it through the crash guard's table).
  package var shimLine: OpaquePointer { line }

  public mutating func set(_ level: LineLevel) throws(GPIOError) {
    if sg_gpio_set(line, level == .active ? 1 : 0) != 0 {
      throw GPIOError(errno: .current, operation: "set \(chip) line \(offset)")
    }
  }

  /// Drives the line inactive and releases it now.
  public consuming func close() {}

  public static var libraryVersion: String { String(cString: sg_gpio_library_version()) }
}

/// A libgpiod output line held as a class, for an owner that keeps its lines as
/// `any OutputLine` (the door's alarm line and second relay, the feedback lamps).
public final class GPIODOutputBox: OutputLine {
  private var line: GPIODOutputLine
  public init(_ line: consuming GPIODOutputLine) { self.line = line }
  public func set(_ level: LineLevel) throws(GPIOError) { try line.set(level) }
}
