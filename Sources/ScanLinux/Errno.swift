import CLinux
import Glibc

/// The one place where ScanGate turns a failed system call into policy.
///
/// EINTR is retried; EAGAIN/EWOULDBLOCK means "nothing now" (never spin on it); EBADF and
/// EFAULT are bugs in this program and trap; everything else becomes a typed `SystemError`
/// that the caller acts on (reopen the camera, drop a client, report a fault).
public struct SystemError: Error, Equatable, CustomStringConvertible, Sendable {
  public var errno: Int32
  public var operation: String
  public init(errno: Int32, operation: String) {
    self.errno = errno
    self.operation = operation
  }
  public var description: String { "\(operation): \(SystemError.describe(errno))" }
  /// strerror's text for `code`.
  public static func describe(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
  }
}

/// The outcome of a non-blocking call.
public enum IOResult<T> {
  case done(T)
  case wouldBlock
}

@inline(never)
func lastErrno() -> Int32 { sg_errno() }

/// Runs `call` (returning -1 and setting errno on failure) under the errno policy.
@inline(never)
public func syscallRetrying<T: BinaryInteger>(
  _ operation: @autoclosure () -> String, _ call: () -> T
) throws(SystemError) -> IOResult<T> {
  while true {
    let result = call()
    if result != -1 { return .done(result) }
    let code = sg_errno()
    switch code {
    case EINTR: continue
    case EAGAIN, EWOULDBLOCK: return .wouldBlock
    case EBADF, EFAULT:
      preconditionFailure("\(operation()): \(SystemError.describe(code)) is a bug in ScanGate")
    default: throw SystemError(errno: code, operation: operation())
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
  case .wouldBlock: throw SystemError(errno: EAGAIN, operation: operation())
  }
}
