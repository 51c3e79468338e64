import CLinux
import Glibc
import ScanBase

/// Why a TCP connection could not be made.
public enum ConnectError: Error, Equatable, CustomStringConvertible, Sendable {
  /// getaddrinfo could not resolve the address (its own message: not an errno).
  case unresolved(address: String, reason: String)
  /// Every address it resolved to failed; the last failure.
  case failed(address: String, SystemError)

  public var description: String {
    switch self {
    case .unresolved(let address, let reason): "cannot resolve \(address): \(reason)"
    case .failed(let address, let error): "connect \(address): \(error.code)"
    }
  }
}

/// Connects a blocking, close-on-exec TCP socket to "host:port" or "[v6]:port" (the port
/// defaults to `defaultPort`), trying each address the name resolves to in turn. The console
/// client and the benchmarks' console load use it; the caller closes the descriptor.
///
/// An interrupted connect(2) is retried like every call; a retry that finds the first attempt
/// still in progress (EALREADY) is reported as a failure, which the tools (they install no
/// signal handlers) do not meet.
/// `timeoutMilliseconds` bounds each connect(2) (SO_SNDTIMEO, which Linux's connect honours): a
/// host that is down or drops the SYN fails in that time instead of the kernel's two minutes.
public func connectTCP(_ address: String, defaultPort: String = "", timeoutMilliseconds: Int? = nil) throws(ConnectError) -> Int32 {
  let (host, port) = splitHostPort(address, defaultPort: defaultPort)
  var hints = addrinfo()
  hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
  var list: UnsafeMutablePointer<addrinfo>? = nil
  let rc = getaddrinfo(host, port, &hints, &list)
  guard rc == 0, let first = list else {
    throw .unresolved(address: address, reason: rc == 0 ? "no addresses" : String(cString: gai_strerror(rc)))
  }
  defer { freeaddrinfo(list) }
  var info: UnsafeMutablePointer<addrinfo>? = first
  var lastError = SystemError(.invalidArgument, operation: "connect \(address)")
  while let i = info {
    info = i.pointee.ai_next
    let fd: Int32
    do {
      fd = try syscall("socket", { socket(i.pointee.ai_family, i.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), i.pointee.ai_protocol) })
    } catch {
      lastError = error
      continue
    }
    do {
      if let timeoutMilliseconds {
        var limit = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: timeoutMilliseconds % 1000 * 1000)
        _ = try syscall("setsockopt SO_SNDTIMEO", { setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size)) })
      }
      _ = try syscall("connect \(address)", { connect(fd, i.pointee.ai_addr, i.pointee.ai_addrlen) })
      return fd
    } catch {
      lastError = error
      closeDescriptor(fd)
    }
  }
  throw .failed(address: address, lastError)
}

/// Splits "host:port" or "[v6-host]:port" (port defaults to `defaultPort`).
public func splitHostPort(_ address: String, defaultPort: String = "") -> (host: String, port: String) {
  if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
    let host = String(address[address.index(after: address.startIndex)..<close])
    let rest = address[address.index(after: close)...]
    return (host, rest.hasPrefix(":") ? String(rest.dropFirst()) : defaultPort)
  }
  if let colon = address.lastIndex(of: ":") {
    return (String(address[..<colon]), String(address[address.index(after: colon)...]))
  }
  return (address, defaultPort)
}
