/// An errno value, typed so callers match on names instead of comparing raw numbers: what a
/// failed system call, a GPIO line or a camera reports (`SystemError`, `GPIOError`,
/// `CaptureError`). The numbers are Linux's generic ones, the same on x86_64 and arm64 (a Pi);
/// `ErrnoTests` checks each name against the C library's. The platform reads the thread's errno
/// (`Errno.current`) and describes one with strerror's text.
///
/// Linux's EWOULDBLOCK is EAGAIN, so `.wouldBlock` covers both.
public struct Errno: RawRepresentable, Hashable, Sendable {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  public static let noSuchFile = Errno(2)  // ENOENT
  public static let interrupted = Errno(4)  // EINTR
  public static let ioError = Errno(5)  // EIO
  public static let badDescriptor = Errno(9)  // EBADF
  public static let wouldBlock = Errno(11)  // EAGAIN
  public static let noMemory = Errno(12)  // ENOMEM
  public static let permissionDenied = Errno(13)  // EACCES
  public static let badAddress = Errno(14)  // EFAULT
  public static let busy = Errno(16)  // EBUSY
  public static let noDevice = Errno(19)  // ENODEV
  public static let invalidArgument = Errno(22)  // EINVAL
  public static let brokenPipe = Errno(32)  // EPIPE
  public static let addressInUse = Errno(98)  // EADDRINUSE
  public static let connectionReset = Errno(104)  // ECONNRESET
  public static let notConnected = Errno(107)  // ENOTCONN
  public static let timedOut = Errno(110)  // ETIMEDOUT
  public static let connectionRefused = Errno(111)  // ECONNREFUSED
}
