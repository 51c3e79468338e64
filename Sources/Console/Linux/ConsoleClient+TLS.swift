import CLinux
import CTLS
import Glibc
import ScanCore
import ScanPlatform

/// What a client needs to reach a reader's console over TLS from another host (the web page on
/// an office machine): the certificate the reader is checked against (its CA, or its own
/// certificate), and the client certificate and key the reader's `console.tls_client_ca_file`
/// asks for. One context, made at startup; every connection uses it.
public final class ConsoleTLSClientContext: @unchecked Sendable {
  let context: OpaquePointer

  public init(caFile: String, certFile: String, keyFile: String) throws(SystemError) {
    let ca: [UInt8]
    let chain: [UInt8]
    do { ca = try readWholeFile(caFile, maxBytes: ConsoleTLS.pemBytesMax) } catch {
      throw SystemError(errno: EINVAL, operation: "the reader's CA \(error)")
    }
    do { chain = try readWholeFile(certFile, maxBytes: ConsoleTLS.pemBytesMax) } catch {
      throw SystemError(errno: EINVAL, operation: "the client certificate \(error)")
    }
    var key: [UInt8]
    do { key = try SecretFile.read(keyFile, maxBytes: ConsoleTLS.keyBytesMax) } catch {
      throw SystemError(errno: EACCES, operation: "the client key \(error)")
    }
    defer { key.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    var reason = [CChar](repeating: 0, count: 256)
    let made = ca.withUnsafeBytes { a in
      chain.withUnsafeBytes { c in
        key.withUnsafeBytes { k in
          sg_tls_client_context_new(a.baseAddress, a.count, c.baseAddress, c.count, k.baseAddress, k.count, &reason, reason.count)
        }
      }
    }
    guard let made else {
      throw SystemError(errno: EINVAL, operation: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    context = made
  }
  deinit { sg_tls_context_free(context) }
}

extension ConsoleClient {
  /// Connects to a reader's TLS console (`host:port`), checks its certificate names `host`,
  /// and presents the client certificate; throws when any of it fails within `timeoutSeconds`.
  public convenience init(tls address: String, context: ConsoleTLSClientContext, timeoutSeconds: Int = 5) throws(SystemError) {
    let fd: Int32
    do { fd = try connectTCP(address, timeoutMilliseconds: timeoutSeconds * 1000) } catch {
      throw SystemError(errno: ECONNREFUSED, operation: "\(error)")
    }
    do { _ = try syscall("make \(address)'s socket non-blocking", { sg_fcntl_int(fd, F_SETFL, sg_fcntl_int(fd, F_GETFL, 0) | O_NONBLOCK) }) } catch {
      closeDescriptor(fd)
      throw error
    }
    let host = splitHostPort(address).host
    guard let session = sg_tls_client_session_new(context.context, fd, host) else {
      closeDescriptor(fd)
      throw SystemError(errno: EINVAL, operation: "TLS to \(address): '\(host)' cannot be checked against a certificate")
    }
    self.init(fd: fd)
    tls = session
    let deadline = SystemMonotonicClock().now().adding(milliseconds: timeoutSeconds * 1000)
    while true {
      let r = sg_tls_handshake(session)
      if r == Int32(SG_TLS_DONE) { return }
      guard r == Int32(SG_TLS_WANT_READ) || r == Int32(SG_TLS_WANT_WRITE), wait(r, until: deadline) else {
        let why = r == Int32(SG_TLS_WANT_READ) || r == Int32(SG_TLS_WANT_WRITE) ? "timed out" : String(cString: sg_tls_error(session))
        throw SystemError(errno: EPROTO, operation: "TLS handshake with \(address): \(why)")
      }
    }
  }

  /// Waits until the socket is ready for what the TLS call `want`s; false at the deadline.
  func wait(_ want: Int32, until deadline: Instant) -> Bool {
    let now = SystemMonotonicClock().now()
    guard now < deadline else { return false }
    var p = [pollfd(fd: fd, events: Int16(want == Int32(SG_TLS_WANT_WRITE) ? POLLOUT : POLLIN), revents: 0)]
    do { _ = try pollDescriptors(&p, timeoutMilliseconds: max(1, deadline.milliseconds(since: now))) } catch { return false }
    return true
  }

  /// Writes all of `bytes` through the TLS session (within 10 s).
  func tlsSend(_ session: OpaquePointer, _ bytes: [UInt8]) -> Bool {
    let deadline = SystemMonotonicClock().now().adding(milliseconds: 10_000)
    var offset = 0
    while offset < bytes.count {
      let r = bytes.withUnsafeBytes { sg_tls_write(session, $0.baseAddress! + offset, Int32($0.count - offset)) }
      if r > 0 {
        offset += Int(r)
      } else if r != Int32(SG_TLS_WANT_READ) && r != Int32(SG_TLS_WANT_WRITE) || !wait(r, until: deadline) {
        return false
      }
    }
    return true
  }

  /// Reads what the TLS session has: the count, 0 at its end, -1 when nothing is whole yet.
  func tlsReceive(_ session: OpaquePointer, into buffer: inout [UInt8]) throws(SystemError) -> Int {
    let r = buffer.withUnsafeMutableBytes { sg_tls_read(session, $0.baseAddress, Int32($0.count)) }
    if r > 0 { return Int(r) }
    if r == Int32(SG_TLS_WANT_READ) || r == Int32(SG_TLS_WANT_WRITE) { return -1 }
    if r == Int32(SG_TLS_CLOSED) { return 0 }
    throw SystemError(errno: EPROTO, operation: "TLS read: \(String(cString: sg_tls_error(session)))")
  }
}
