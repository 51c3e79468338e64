import CLinux
import Glibc
import ScanBase

/// The platform's side of `Errno` (ScanBase): the thread's errno now, and strerror's text.
extension Errno: CustomStringConvertible {
  /// The calling thread's errno now (read through the CLinux shim: `errno` is a macro).
  public static var current: Errno { Errno(sg_errno()) }

  /// strerror's text.
  public var description: String {
    guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
    return String(cString: text)
  }
}

/// The one place where ScanGate turns a failed system call into policy.
///
/// EINTR is retried; EAGAIN/EWOULDBLOCK means "nothing now" (never spin on it); EBADF and
/// EFAULT are bugs in this program and trap; everything else becomes a typed `SystemError`
/// that the caller acts on (reopen the camera, drop a client, report a fault).
public struct SystemError: Error, Equatable, CustomStringConvertible, Sendable {
  public var code: Errno
  public var operation: String
  public init(_ code: Errno, operation: String) {
    self.code = code
    self.operation = operation
  }
  /// The errno the last failed call left, for `operation`.
  public static func current(_ operation: String) -> SystemError { SystemError(.current, operation: operation) }
  public var description: String { "\(operation): \(code)" }

  /// Compatibility for call sites that still pass and read raw numbers (ConsoleServer).
  public init(errno: Int32, operation: String) { self.init(Errno(errno), operation: operation) }
  public var errno: Int32 { code.rawValue }
  /// strerror's text for `code`.
  public static func describe(_ code: Int32) -> String { Errno(code).description }
}

/// The outcome of a non-blocking call.
public enum IOResult<T> {
  case done(T)
  case wouldBlock
}

/// Runs `call` (returning -1 and setting errno on failure) under the errno policy.
@inline(never)
public func syscallRetrying<T: BinaryInteger>(
  _ operation: @autoclosure () -> String, _ call: () -> T
) throws(SystemError) -> IOResult<T> {
  while true {
    let result = call()
    if result != -1 { return .done(result) }
    let code = Errno.current
    switch code {
    case .interrupted: continue
    case .wouldBlock: return .wouldBlock
    case .badDescriptor, .badAddress:
      preconditionFailure("\(operation()): \(code) is a bug in ScanGate")
    default: throw SystemError(code, operation: operation())
    }
  }
}

/// Like `syscallRetrying`, for calls on blocking descriptors: EAGAIN is an error here too.
@inline(never)
public func syscall<T: BinaryInteger>(
  _ operation: @autoclosure () -> String, _ call: () -> T
) throws(SystemError) -> T {
  switch try syscallRetrying(operation(), call) {
  case .done(let value): return value
  case .wouldBlock: throw SystemError(.wouldBlock, operation: operation())
  }
}
