import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

extension ConsoleServer {
  // MARK: - Listening

  /// Parses "host:port" / "[v6]:port" and binds a non-blocking listener.
  static func listen(on address: String) throws(SystemError) -> (Int32, String) {
    let (host, port) = splitHostPort(address)
    guard let portNumber = UInt16(port) else {
      throw SystemError(errno: EINVAL, operation: "console.listen \"\(address)\": want host:port or [v6]:port")
    }
    var v4 = in_addr(), v6 = in6_addr()
    let isV6: Bool
    if inet_pton(AF_INET, host, &v4) == 1 {
      isV6 = false
    } else if inet_pton(AF_INET6, host, &v6) == 1 {
      isV6 = true
    } else {
      throw SystemError(errno: EINVAL, operation: "console.listen \"\(address)\": not an IPv4 or IPv6 address")
    }
    let fd = try syscall(
      "socket for \(address)",
      { socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
    do {
      try setSocketOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1, "SO_REUSEADDR for \(address)")
      if isV6 { try setSocketOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1, "IPV6_V6ONLY for \(address)") }
      if isV6 {
        var sa = sockaddr_in6()
        sa.sin6_family = sa_family_t(AF_INET6)
        sa.sin6_port = portNumber.bigEndian
        sa.sin6_addr = v6
        try bindAddress(fd, &sa, "listen on \(address)")
      } else {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = portNumber.bigEndian
        sa.sin_addr = v4
        try bindAddress(fd, &sa, "listen on \(address)")
      }
      _ = try syscall("listen on \(address)", { Glibc.listen(fd, 64) })
    } catch {
      closeDescriptor(fd)
      throw error
    }
    var bound = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &bound) { b in
      try? syscall("getsockname for \(address)", { b.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } })
    }
    let boundPort = withUnsafePointer(to: &bound) { p -> UInt16 in
      isV6
        ? p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        : p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    }
    return (fd, isV6 ? "[\(host)]:\(boundPort)" : "\(host):\(boundPort)")
  }

  /// The Unix socket (`console.unix_path`), mode 0660 (the service's group may connect): a
  /// socket left by a reader that died is replaced; one another process answers on, or anything
  /// that is not a socket, is refused. The operators' names are looked up now, once.
  func listenOnUnixSocket() throws(SystemError) {
    let path = settings.unixPath
    unixOperatorUIDs = [0]
    for name in settings.unixOperators {
      guard let pw = getpwnam(name) else { throw SystemError(errno: EINVAL, operation: "console.unix_operators: no user '\(name)'") }
      unixOperatorUIDs.append(pw.pointee.pw_uid)
    }
    var st = stat()
    if lstat(path, &st) == 0 {
      guard st.st_mode & S_IFMT == S_IFSOCK else {
        throw SystemError(errno: EEXIST, operation: "console.unix_path \(path): not a socket (refused, never replaced)")
      }
      guard sg_unix_answers(path) == 0 else {
        throw SystemError(errno: EADDRINUSE, operation: "console.unix_path \(path): another process answers on it")
      }
      _ = try syscall("remove the stale socket \(path)", { unlink(path) })
    }
    let fd = try syscall("listen on \(path)", { sg_listen_unix(path, 0o660) })
    unixSocketPath = path
    listenerDescriptors.append(fd)
    boundAddresses.append("unix:" + path)
    listenerTLS.append(false)
    listenerUnix.append(true)
  }

  /// The user at the other end of a Unix socket connection (`PeerKey.localUser`), or the
  /// unknown-owner key.
  static func unixPeer(_ fd: Int32) -> PeerKey {
    var uid: UInt32 = 0
    guard (try? syscall("SO_PEERCRED", { sg_peer_uid(fd, &uid) })) != nil else { return .loopback }
    return .localUser(uid)
  }

  /// bind(2) of `fd` to the socket address in `address` (a sockaddr_in or sockaddr_in6).
  private static func bindAddress<Address>(_ fd: Int32, _ address: inout Address, _ operation: String) throws(SystemError) {
    let size = socklen_t(MemoryLayout<Address>.size)
    let bound = withUnsafePointer(to: &address) { a in
      Result { () throws(SystemError) in try syscall(operation, { a.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, size) } }) }
    }
    _ = try bound.get()
  }
}
