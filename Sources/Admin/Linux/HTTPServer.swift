import CLinux
import CHTTPD
import Glibc
import ScanCore
import ScanPlatform

/// One HTTP request as libmicrohttpd gave it (bounded there: 64 KiB of body, 64 KiB of headers).
public struct HTTPRequest: Sendable {
  public var method: String
  /// The path, without the query.
  public var path: String
  public var cookie: String
  public var origin: String
  public var host: String
  public var csrf: String
  public var authorization: String
  public var contentType: String
  public var body: [UInt8]
  /// The client's address (no port).
  public var client: String
  /// The URL's query, `k=v&k=v` percent-encoded (see `arguments`).
  public var query: String = ""

  public init(
    method: String, path: String, cookie: String = "", origin: String = "", host: String = "", csrf: String = "",
    authorization: String = "", contentType: String = "", body: [UInt8] = [], client: String = ""
  ) {
    self.method = method
    self.path = path
    self.cookie = cookie
    self.origin = origin
    self.host = host
    self.csrf = csrf
    self.authorization = authorization
    self.contentType = contentType
    self.body = body
    self.client = client
  }

  /// The value of cookie `name`, or nil.
  public func cookie(_ name: String) -> String? {
    for part in cookie.split(separator: ";") {
      let kv = part.trimmingPrefix(" ")
      if kv.hasPrefix(name + "=") { return String(kv.dropFirst(name.count + 1)) }
    }
    return nil
  }

  /// The body's `application/x-www-form-urlencoded` fields (a bad escape drops the field).
  public var form: [String: String] { Self.fields(body) }

  /// The URL's query arguments (filters of a GET page), decoded like `form`.
  public var arguments: [String: String] { Self.fields(Array(query.utf8)) }

  static func fields(_ bytes: [UInt8]) -> [String: String] {
    var out: [String: String] = [:]
    for pair in bytes.split(separator: UInt8(ascii: "&")) {
      let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
      guard parts.count == 2, let key = Self.formDecode(parts[0]), let value = Self.formDecode(parts[1]) else { continue }
      out[key] = value
    }
    return out
  }

  static func formDecode(_ bytes: ArraySlice<UInt8>) -> String? {
    var out: [UInt8] = []
    var i = bytes.startIndex
    while i < bytes.endIndex {
      let b = bytes[i]
      if b == UInt8(ascii: "+") {
        out.append(0x20)
      } else if b == UInt8(ascii: "%") {
        guard i + 2 < bytes.endIndex, let hi = Hex.value(of: bytes[i + 1]), let lo = Hex.value(of: bytes[i + 2]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
      } else {
        out.append(b)
      }
      i += 1
    }
    return String(validating: out, as: UTF8.self)
  }
}

/// A whole response, or a stream of Server-Sent Events.
public struct HTTPResponse: Sendable {
  public var status: UInt32
  public var contentType: String
  /// Extra header lines, "Name: value" each.
  public var headers: [String]
  public var body: [UInt8]
  /// Non-zero: a stream (`HTTPServer.Handler.stream` gives its bytes).
  public var stream: UInt64

  public init(status: UInt32, contentType: String = "text/html; charset=utf-8", headers: [String] = [], body: [UInt8] = [], stream: UInt64 = 0) {
    self.status = status
    self.contentType = contentType
    self.headers = headers
    self.body = body
    self.stream = stream
  }

  public static func text(_ status: UInt32, _ text: String) -> HTTPResponse {
    HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
  }
  public static func redirect(_ location: String, headers: [String] = []) -> HTTPResponse {
    HTTPResponse(status: 303, headers: ["Location: " + location] + headers)
  }
}

/// What the server hands requests and streams to (called on libmicrohttpd's threads, one per
/// connection, so it must be thread-safe).
public protocol HTTPHandler: AnyObject, Sendable {
  func respond(_ request: HTTPRequest) -> HTTPResponse
  /// Up to `capacity` bytes of stream `id` into `buffer`: how many, 0 for none within about a
  /// second, -1 at its end.
  func stream(_ id: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int
  func endStream(_ id: UInt64)
}

/// HTTPS through libmicrohttpd and GnuTLS (Sources/Admin/CHTTPD): a thread per connection, at
/// most `connectionsMax` at once and `perClientMax` from one address; every response carries a
/// strict Content-Security-Policy and the other security headers.
public final class HTTPServer: @unchecked Sendable {
  private var daemon: UnsafeMutableRawPointer? = nil
  private let handler: any HTTPHandler

  public struct StartError: Error, CustomStringConvertible {
    public var description: String
  }

  /// Serves `listen` ("host:port", "[v6]:port") with the PEM certificate and key.
  public init(
    listen: String, certificatePEM: [UInt8], keyPEM: [UInt8], handler: any HTTPHandler, connectionsMax: Int = 64, perClientMax: Int = 8
  )
    throws(StartError)
  {
    self.handler = handler
    guard let address = Self.socketAddress(listen) else {
      throw StartError(description: "admin.listen \"\(listen)\": want host:port, e.g. 0.0.0.0:8443 or [::]:8443")
    }
    var error = [CChar](repeating: 0, count: 256)
    let context = Unmanaged.passUnretained(self).toOpaque()
    let cert = certificatePEM.map { CChar(bitPattern: $0) } + [0]
    var key = keyPEM.map { CChar(bitPattern: $0) } + [0]
    defer { key.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    daemon = address.withUnsafeBytes { a in
      sg_http_start(
        a.baseAddress, UInt32(a.count), cert, key, httpHandler, httpStream, httpStreamEnd, context, UInt32(connectionsMax),
        UInt32(perClientMax), &error)
    }
    guard daemon != nil else {
      throw StartError(description: "\(listen): " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
  }

  deinit { if let daemon { sg_http_stop(daemon) } }

  fileprivate func handle(_ r: UnsafePointer<sg_http_request>, reply: UnsafeMutableRawPointer) {
    let q = r.pointee
    var request = HTTPRequest(
      method: String(cString: q.method), path: String(cString: q.url), cookie: String(cString: q.cookie), origin: String(cString: q.origin),
      host: String(cString: q.host), csrf: String(cString: q.csrf), authorization: String(cString: q.authorization),
      contentType: String(cString: q.content_type),
      body: q.body_length > 0 ? Array(UnsafeBufferPointer(start: q.body, count: q.body_length)) : [],
      client: withUnsafeBytes(of: q.client) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
    if let query = request.path.firstIndex(of: "?") { request.path = String(request.path[..<query]) }
    request.query = withUnsafeBytes(of: q.query) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let response = q.query_too_long != 0 ? HTTPResponse.text(414, "query too long\n") : handler.respond(request)
    let headers = response.headers.map { $0 + "\n" }.joined()
    if response.stream != 0 {
      sg_http_reply_stream(reply, response.status, response.contentType, headers, response.stream)
    } else {
      response.body.withUnsafeBufferPointer { sg_http_reply(reply, response.status, response.contentType, headers, $0.baseAddress, $0.count) }
    }
  }

  fileprivate var streamHandler: any HTTPHandler { handler }

  /// A sockaddr for "host:port" or "[v6]:port" (numeric hosts only: a page on the LAN binds an address).
  static func socketAddress(_ listen: String) -> [UInt8]? {
    guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else { return nil }
    var host = String(listen[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") {
      host = String(host.dropFirst().dropLast())
      var a = sockaddr_in6()
      a.sin6_family = sa_family_t(AF_INET6)
      a.sin6_port = port.bigEndian
      guard inet_pton(AF_INET6, host, &a.sin6_addr) == 1 else { return nil }
      return withUnsafeBytes(of: a) { Array($0) }
    }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_port = port.bigEndian
    guard inet_pton(AF_INET, host, &a.sin_addr) == 1 else { return nil }
    return withUnsafeBytes(of: a) { Array($0) }
  }
}

private func server(_ context: UnsafeMutableRawPointer?) -> HTTPServer {
  Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
}

private func httpHandler(_ context: UnsafeMutableRawPointer?, _ request: UnsafePointer<sg_http_request>?, _ reply: UnsafeMutableRawPointer?) {
  server(context).handle(request!, reply: reply!)
}

private func httpStream(_ context: UnsafeMutableRawPointer?, _ id: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
  server(context).streamHandler.stream(id, into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
}

private func httpStreamEnd(_ context: UnsafeMutableRawPointer?, _ id: UInt64) {
  server(context).streamHandler.endStream(id)
}
