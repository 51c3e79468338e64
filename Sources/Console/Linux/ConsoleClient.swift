import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

/// A client of the reader's console (the line protocol of docs/console.md): `scangate console`,
/// `snapshot`, `allow-list enrol` and the web admin page. Reads whole lines, joins the 80-column
/// continuation lines back (ConsoleLayout), and tells a reply (body lines, then OK or ERR) from
/// event lines (`! `), which it keeps for `nextEvent`. One thread uses it at a time (handed over,
/// never shared).
public final class ConsoleClient: @unchecked Sendable {
  public let fd: Int32
  private var pending: [UInt8] = []
  private var lines: [String] = []
  private var buffer = [UInt8](repeating: 0, count: 16_384)

  private let owned: Bool
  /// The TLS session to a reader on another host (nil: a Unix socket or plain text).
  var tls: OpaquePointer? = nil
  /// Called once when the client goes (the web page returns its console slot).
  public var onClose: (@Sendable () -> Void)? = nil

  /// `owned`: the client closes `fd` when it goes.
  public init(fd: Int32, owned: Bool = true) {
    self.fd = fd
    self.owned = owned
  }
  /// Connects to the reader's Unix socket (console.unix_path): the kernel tells it who we are.
  public convenience init(unixPath: String) throws(SystemError) {
    self.init(fd: try syscall("connect to \(unixPath)", { sg_connect_unix(unixPath) }))
  }
  deinit {
    if let tls {
      _ = sg_tls_shutdown(tls)
      sg_tls_session_free(tls)
    }
    if owned { closeDescriptor(fd) }
    onClose?()
  }

  public func send(_ text: String) -> Bool {
    if let tls { return tlsSend(tls, Array(text.utf8)) }
    do { try writeAll(fd, text, "send to the console") } catch { return false }
    return true
  }

  /// The next whole line (continuations joined), waiting until `deadline`; nil when the
  /// connection ended or nothing came in time.
  public func nextLine(until deadline: Instant) -> String? {
    while true {
      // A line is whole once the next one has started and is not its continuation.
      if lines.count >= 2 || (lines.count == 1 && !pendingContinues) { return lines.removeFirst() }
      let now = SystemMonotonicClock().now()
      guard now < deadline else { return lines.isEmpty ? nil : lines.removeFirst() }
      var p = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
      var n: Int
      do {
        // Bytes a TLS session has already decrypted are read without waiting for the socket.
        if tls.map({ sg_tls_pending($0) > 0 }) != true {
          guard try pollDescriptors(&p, timeoutMilliseconds: min(200, max(1, deadline.milliseconds(since: now)))) > 0 else { continue }
        }
        if let tls {
          n = try tlsReceive(tls, into: &buffer)
          if n < 0 { continue }  // a record not yet whole
        } else {
          n = try readSome(fd, into: &buffer, "read the console")
        }
      } catch { return nil }
      if n == 0 { return lines.isEmpty ? nil : lines.removeFirst() }
      pending += buffer[0..<n]
      var start = 0
      while let newline = pending[start...].firstIndex(of: 0x0A) {
        var end = newline
        if end > start && pending[end - 1] == 0x0D { end -= 1 }
        append(String(decoding: pending[start..<end], as: UTF8.self))
        start = newline + 1
      }
      pending.removeFirst(start)
    }
  }

  /// Whether the last line may still get a continuation: more bytes are pending, or it is a
  /// body or event line (a continuation would come right behind it, in the same write).
  private var pendingContinues: Bool { !pending.isEmpty }

  private func append(_ line: String) {
    if let first = line.first, first == "|" || first == "!", line.dropFirst().prefix(ConsoleLayout.indent) == "   ",
      var last = lines.last, last.first == first
    {
      if last.hasSuffix("\\") { last.removeLast() } else { last += " " }
      last += line.dropFirst(1 + ConsoleLayout.indent)
      lines[lines.count - 1] = last
    } else {
      lines.append(line)
    }
  }

  /// Sends `command` and collects the reply: body lines (without "| ") and the status line.
  /// Event lines that arrive meanwhile are kept for `nextEvent`. Nil when the connection failed
  /// or no status line came in time.
  public func exchange(_ command: String, timeoutSeconds: Int) -> (body: [String], status: String)? {
    guard send(command + "\n") else { return nil }
    var body: [String] = []
    let deadline = SystemMonotonicClock().now().adding(milliseconds: timeoutSeconds * 1000)
    while let line = nextLine(until: deadline) {
      if line.hasPrefix("OK") || line.hasPrefix("ERR") { return (body, line) }
      if line.hasPrefix("| ") { body.append(String(line.dropFirst(2))) }
      if line.hasPrefix("! ") { events.append(String(line.dropFirst(2))) }
    }
    return nil
  }

  /// Event lines (`! `, without the marker) read during exchanges, oldest first.
  public var events: [String] = []

  /// The next event line, waiting up to `milliseconds`; nil when none came (or the connection ended:
  /// `ended` then says so).
  public func nextEvent(waitingMilliseconds milliseconds: Int) -> String? {
    if !events.isEmpty { return events.removeFirst() }
    let deadline = SystemMonotonicClock().now().adding(milliseconds: milliseconds)
    while let line = nextLine(until: deadline) {
      if line.hasPrefix("! ") { return String(line.dropFirst(2)) }
    }
    ended = SystemMonotonicClock().now() < deadline
    return nil
  }
  public private(set) var ended = false
}

extension ConsoleClient {
  /// A SNAPSHOT reply's body (base64 lines) as the PNG's bytes (libsodium's decoder); nil when
  /// it is not base64.
  public static func decodeBase64(_ text: String) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: text.utf8.count / 4 * 3 + 3)
    let n = out.withUnsafeMutableBufferPointer { o in sg_base64_decode(text, text.utf8.count, o.baseAddress, o.count) }
    guard n >= 0 else { return nil }
    out.removeLast(out.count - n)
    return out
  }
}
