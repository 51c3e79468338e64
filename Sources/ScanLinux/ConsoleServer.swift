import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore

/// One `console.listen` entry and how it is served. The secure default: a listener on a
/// loopback address (127.0.0.0/8, ::1) speaks plain text; any other address (0.0.0.0, ::, a
/// LAN or link-local address) speaks TLS when `console.tls_cert_file` and `tls_key_file` are
/// set, plain text only with `console.allow_plaintext_remote = true`, and is refused otherwise.
/// "tls:ADDRESS" asks for TLS on any address, loopback included (a reader behind a local
/// proxy, and the tests).
public struct ConsoleListener: Equatable, Sendable, CustomStringConvertible {
  /// "host:port" or "[v6]:port", without the "tls:" prefix.
  public var address: String
  public var tls: Bool
  public var loopback: Bool
  /// "tls:0.0.0.0:4570" or "127.0.0.1:4570".
  public var description: String { tls ? "tls:" + address : address }

  public static let tlsPrefix = "tls:"

  public init(address: String, tls: Bool, loopback: Bool) {
    self.address = address
    self.tls = tls
    self.loopback = loopback
  }

  /// Whether `host`, an IPv4 or IPv6 literal (no brackets), is a loopback address:
  /// 127.0.0.0/8 or ::1. Nil when it is not an address. Everything else counts as remote,
  /// including the wildcards 0.0.0.0 and :: and IPv4-mapped addresses.
  public static func isLoopback(host: String) -> Bool? {
    var v4 = in_addr(), v6 = in6_addr()
    if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
    if inet_pton(AF_INET6, host, &v6) == 1 {
      return withUnsafeBytes(of: v6) { b in (0..<15).allSatisfy { b[$0] == 0 } && b[15] == 1 }
    }
    return nil
  }

  /// The listeners `settings` asks for, each with its transport; throws when one is refused
  /// (a plaintext listener that is not loopback, "tls:" without the files, a bad address).
  public static func plan(_ settings: ConsoleSettings) throws(SystemError) -> [ConsoleListener] {
    let tlsConfigured = !settings.tlsCertFile.isEmpty || !settings.tlsKeyFile.isEmpty
    if tlsConfigured && (settings.tlsCertFile.isEmpty || settings.tlsKeyFile.isEmpty) {
      throw SystemError(errno: EINVAL, operation: "console.tls_cert_file and console.tls_key_file: set both, or neither")
    }
    if !settings.tlsClientCAFile.isEmpty && !tlsConfigured {
      throw SystemError(errno: EINVAL, operation: "console.tls_client_ca_file needs console.tls_cert_file and console.tls_key_file")
    }
    var listeners: [ConsoleListener] = []
    for entry in settings.listen {
      let prefixed = entry.hasPrefix(tlsPrefix)
      let address = prefixed ? String(entry.dropFirst(tlsPrefix.count)) : entry
      guard let loopback = isLoopback(host: splitHostPort(address).host) else {
        throw SystemError(errno: EINVAL, operation: "console.listen \"\(entry)\": not an IPv4 or IPv6 address")
      }
      if prefixed && !tlsConfigured {
        throw SystemError(errno: EINVAL, operation: "console.listen \"\(entry)\": TLS needs console.tls_cert_file and console.tls_key_file")
      }
      let tls = prefixed || (!loopback && tlsConfigured)
      if !tls && !loopback && !settings.allowPlaintextRemote {
        throw SystemError(errno: EPERM, operation: "console.listen \"\(entry)\" is not loopback and would send the AUTH secret and every "
          + "reply in clear: set console.tls_cert_file and console.tls_key_file (TLS), or console.allow_plaintext_remote = true")
      }
      listeners.append(ConsoleListener(address: address, tls: tls, loopback: loopback))
    }
    return listeners
  }
}

/// The console's transports: TCP listeners and clients, and one serial port, all polled by the
/// run loop (no thread per client). Every buffer is allocated at init: a 512-byte line framer,
/// a queue of complete lines and a fixed output buffer per client slot.
///
/// A client whose output buffer cannot take a whole reply or event (it does not read) is
/// disconnected; nothing blocks the loop or grows. A serial port that fails (adapter unplugged)
/// is closed and reopened with backoff.
///
/// TLS listeners (`ConsoleListener`): an accepted connection gets an OpenSSL session (created
/// per connection: an allocation on accept, never on the frame path) and is handshaken
/// non-blocking, driven by poll (want-read: POLLIN, want-write: POLLOUT), within
/// `tlsHandshakeTimeoutMilliseconds`; only then does the console session start (greeting,
/// commands). Reads and writes go through the session with the same fixed buffers; a close
/// sends close_notify. Lockouts still key on the TCP peer's address.
public final class ConsoleServer<Clock: MonotonicClock>: ConsoleOutput {
  /// One connection (a TCP client, or the serial port in the last slot).
  struct Client {
    var fd: Int32 = -1
    var isSerial = false
    var closeWhenFlushed = false
    var lastActivity = Instant(nanoseconds: 0)
    var outputStart = 0
    var outputEnd = 0
    var queued = 0           // complete lines waiting in the queue
    var queueBytes = 0       // bytes used in the queue
    var tls: OpaquePointer? = nil  // the TLS session (sg_tls_session), nil for plain text
    var handshaking = false  // TLS: the handshake is not finished (no console session yet)
    var handshakeWants = Int16(0)  // TLS: what the handshake waits for (POLLIN or POLLOUT)
    var readWantsWrite = false     // TLS: the last read needs the socket writable
    var writeWantsRead = false     // TLS: the last write needs the socket readable
    var peer = PeerKey.loopback
  }

  public static var lineBytesMax: Int { LineFramer.lineBytesMax }
  static var queueBytes: Int { 2_048 }

  public let settings: ConsoleSettings
  public private(set) var listenerDescriptors: [Int32] = []
  /// Where each listener is bound ("127.0.0.1:4570", "tls:0.0.0.0:4570"), ports resolved.
  public private(set) var boundAddresses: [String] = []
  /// Whether each listener speaks TLS.
  public private(set) var listenerTLS: [Bool] = []
  /// The TLS context (nil when no TLS is configured).
  public let tls: ConsoleTLS?
  public private(set) var tlsHandshakes: UInt64 = 0
  public private(set) var tlsHandshakeFailures: UInt64 = 0
  public private(set) var tlsHandshakeTimeouts: UInt64 = 0
  /// Why the last TLS handshake failed ("" when none has).
  public private(set) var lastTLSFailure = ""
  /// Why the operator secret is unavailable (nil when one is loaded).
  public var secretProblem: String? { commands.secretProblem }
  /// The command interpreter: sessions, roles, budgets, AUTH.
  public let commands: ConsoleCommands<Clock>
  public private(set) var droppedClients: UInt64 = 0
  public private(set) var rejectedClients: UInt64 = 0
  public private(set) var serialReopens: UInt64 = 0
  public private(set) var serialError: Int32 = 0

  let slotCount: Int
  var clients: UnsafeMutableBufferPointer<Client>
  private let framers: UnsafeMutablePointer<LineFramer>
  private let output: UnsafeMutableRawBufferPointer
  private let queue: UnsafeMutableRawBufferPointer
  private let readBuffer: UnsafeMutableRawBufferPointer
  private let listenerTokens: UnsafeMutableBufferPointer<PollSet.Token>
  private let clientTokens: UnsafeMutableBufferPointer<PollSet.Token>
  private var serialRetryAt = Instant(nanoseconds: 0)
  private var serialBackoffMilliseconds = 250
  private let clock: Clock
  /// The ring position WATCH clients have been sent up to.
  var eventCursor: UInt64 = 0
  /// A bulk reply being sent in bounded steps (a PNG snapshot as base64 body lines).
  private var bulkClient = -1
  private var bulkData: [UInt8] = []
  private var bulkOffset = 0
  private var bulkTrailer = ""

  public init(settings: ConsoleSettings, clock: Clock) throws(SystemError) {
    self.settings = settings
    self.clock = clock
    slotCount = settings.clientsMax + 1  // the last slot is the serial port's
    commands = ConsoleCommands(slots: slotCount, limits: settings.limits, auth: settings.auth,
                               secret: OperatorSecret(file: settings.secretFile), clock: clock)
    clients = .allocate(capacity: slotCount)
    clients.initialize(repeating: Client())
    framers = .allocate(capacity: slotCount)
    for i in 0..<slotCount { (framers + i).initialize(to: LineFramer(capacity: Self.lineBytesMax)) }
    output = .allocate(byteCount: slotCount * settings.clientOutputBytes, alignment: 64)
    output.initializeMemory(as: UInt8.self, repeating: 0)
    queue = .allocate(byteCount: slotCount * Self.queueBytes, alignment: 64)
    queue.initializeMemory(as: UInt8.self, repeating: 0)
    readBuffer = .allocate(byteCount: 4_096, alignment: 64)
    guard settings.listen.count <= 8 else { throw SystemError(errno: EINVAL, operation: "console.listen: at most 8 addresses") }
    listenerTokens = .allocate(capacity: 8)
    listenerTokens.initialize(repeating: .none)
    clientTokens = .allocate(capacity: slotCount)
    clientTokens.initialize(repeating: .none)
    let plan = try ConsoleListener.plan(settings)
    tls = settings.tlsCertFile.isEmpty ? nil
      : try ConsoleTLS(certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCAFile: settings.tlsClientCAFile)
    for listener in plan {
      let (fd, bound) = try Self.listen(on: listener.address)
      listenerDescriptors.append(fd)
      boundAddresses.append(listener.tls ? ConsoleListener.tlsPrefix + bound : bound)
      listenerTLS.append(listener.tls)
    }
    if !settings.serialPath.isEmpty { openSerial() }
  }

  deinit {
    for fd in listenerDescriptors { close(fd) }
    for i in 0..<slotCount where clients[i].fd >= 0 { disconnect(i) }
    for i in 0..<slotCount { (framers + i).deinitialize(count: 1) }
    framers.deallocate()
    clients.deallocate()
    output.deallocate()
    queue.deallocate()
    readBuffer.deallocate()
    listenerTokens.deallocate()
    clientTokens.deallocate()
  }

  // MARK: - Listening

  /// Parses "host:port" / "[v6]:port" and binds a non-blocking listener.
  static func listen(on address: String) throws(SystemError) -> (Int32, String) {
    let (host, port) = splitHostPort(address)
    guard let portNumber = UInt16(port) else {
      throw SystemError(errno: EINVAL, operation: "console.listen \"\(address)\": want host:port or [v6]:port")
    }
    var v4 = in_addr(), v6 = in6_addr()
    let isV6: Bool
    if inet_pton(AF_INET, host, &v4) == 1 { isV6 = false }
    else if inet_pton(AF_INET6, host, &v6) == 1 { isV6 = true }
    else { throw SystemError(errno: EINVAL, operation: "console.listen \"\(address)\": not an IPv4 or IPv6 address") }
    let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SystemError(errno: lastErrno(), operation: "socket for \(address)") }
    do {
      try setSocketOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1, "SO_REUSEADDR for \(address)")
      if isV6 { try setSocketOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 1, "IPV6_V6ONLY for \(address)") }
    } catch {
      close(fd)
      throw error
    }
    var rc: Int32
    if isV6 {
      var sa = sockaddr_in6()
      sa.sin6_family = sa_family_t(AF_INET6)
      sa.sin6_port = portNumber.bigEndian
      sa.sin6_addr = v6
      rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
    } else {
      var sa = sockaddr_in()
      sa.sin_family = sa_family_t(AF_INET)
      sa.sin_port = portNumber.bigEndian
      sa.sin_addr = v4
      rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
    if rc == 0 { rc = Glibc.listen(fd, 64) }
    guard rc == 0 else {
      let code = lastErrno()
      close(fd)
      throw SystemError(errno: code, operation: "listen on \(address)")
    }
    var bound = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    let boundPort = withUnsafePointer(to: &bound) { p -> UInt16 in
      isV6 ? p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        : p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    }
    return (fd, isV6 ? "[\(host)]:\(boundPort)" : "\(host):\(boundPort)")
  }

  // MARK: - Serial

  var serialSlot: Int { slotCount - 1 }

  private func openSerial() {
    let fd: Int32
    do { fd = try SerialPort.open(path: settings.serialPath, baud: settings.serialBaud, nonBlocking: true) } catch {
      serialError = error.code.rawValue
      scheduleSerialRetry()
      return
    }
    serialError = 0
    serialBackoffMilliseconds = 250
    attach(fd: fd, peer: .serial, slot: serialSlot, serial: true)
  }

  private func scheduleSerialRetry() {
    serialRetryAt = clock.now().adding(milliseconds: serialBackoffMilliseconds)
    serialBackoffMilliseconds = min(serialBackoffMilliseconds * 2, 2_000)
  }

  // MARK: - Clients

  private func attach(fd: Int32, peer: PeerKey, slot: Int, serial: Bool) {
    clients[slot] = Client(fd: fd, isSerial: serial, lastActivity: clock.now(), peer: peer)
    startSession(slot)
  }

  /// Starts the console session on a connected slot (for TLS, once the handshake is done).
  private func startSession(_ slot: Int) {
    commands.opened(slot, peer: clients[slot].peer, transport: clients[slot].isSerial ? .serial : .tcp)
    framers[slot].reset()
    write(slot) { w in
      w.write("! scangate ")
      w.write(ScanGateVersion.string)
      w.write(" console ready; HELP lists commands\n")
    }
  }

  /// Closes slot `i` (a serial port is reopened later).
  func disconnect(_ i: Int, dropped: Bool = false) {
    guard clients[i].fd >= 0 else { return }
    if let session = clients[i].tls {
      if !clients[i].handshaking { _ = sg_tls_shutdown(session) }  // close_notify, not awaited
      sg_tls_session_free(session)
    }
    if !clients[i].isSerial { discardInput(clients[i].fd) }
    close(clients[i].fd)
    if dropped { droppedClients &+= 1 }
    let wasSerial = clients[i].isSerial
    clients[i] = Client()
    commands.closed(i)
    framers[i].reset()
    if wasSerial {
      serialReopens &+= 1
      scheduleSerialRetry()
    }
  }

  /// Reads and drops what a closing client already sent (a pipelined line, a TLS close_notify):
  /// closing a socket with unread input sends a reset, which can destroy the replies still on
  /// their way to the client (`printf 'STATUS\nQUIT\n' | socat ...` would see none of them).
  private func discardInput(_ fd: Int32) {
    for _ in 0..<16 {
      if recv(fd, readBuffer.baseAddress, readBuffer.count, Int32(MSG_DONTWAIT)) <= 0 { return }
    }
  }

  /// Connected TCP clients and whether the serial port is open.
  public var connectedClients: Int {
    var n = 0
    for i in 0..<slotCount where clients[i].fd >= 0 && !clients[i].isSerial { n += 1 }
    return n
  }
  /// TLS clients still in their handshake (counted in `connectedClients` too).
  public var handshakingClients: Int {
    var n = 0
    for i in 0..<slotCount where clients[i].fd >= 0 && clients[i].handshaking { n += 1 }
    return n
  }
  public var watchingClients: Int {
    var n = 0
    for i in 0..<slotCount where clients[i].fd >= 0 && commands[i].watching { n += 1 }
    return n
  }
  public var serialOpen: Bool { clients[serialSlot].fd >= 0 }

  // MARK: - Output

  /// Appends one whole reply or event to client `i`'s output through `body`. If it does not fit,
  /// the client is disconnected (it is not reading); partial replies are never sent.
  public func send(_ slot: Int, _ body: (inout ByteWriter) -> Void) { write(slot, body) }
  public func closeWhenFlushed(_ slot: Int) {
    clients[slot].closeWhenFlushed = true
    // Already flushed (the usual case: the reply went out with its send): close now, or
    // nothing would (no output pending, no POLLOUT).
    if clients[slot].fd >= 0 && clients[slot].outputStart == clients[slot].outputEnd { disconnect(slot) }
  }

  func write(_ i: Int, _ body: (inout ByteWriter) -> Void) {
    guard clients[i].fd >= 0 else { return }
    let size = settings.clientOutputBytes
    let base = i * size
    // Compact so all free space is at the end.
    if clients[i].outputStart > 0 {
      let pending = clients[i].outputEnd - clients[i].outputStart
      if pending > 0 {
        (output.baseAddress! + base).copyMemory(from: output.baseAddress! + base + clients[i].outputStart, byteCount: pending)
      }
      clients[i].outputStart = 0
      clients[i].outputEnd = pending
    }
    let free = UnsafeMutableRawBufferPointer(rebasing: output[(base + clients[i].outputEnd)..<(base + size)])
    var w = ByteWriter(free)
    body(&w)
    if w.overflowed {
      disconnect(i, dropped: true)
      return
    }
    clients[i].outputEnd += w.count
    flush(i)
  }

  // MARK: - Bulk replies

  /// Starts sending `data` to client `i` as base64 body lines, then `trailer` as the status line.
  /// Lines go out as buffer space frees up, so a large reply never needs a large buffer.
  func startBulk(_ i: Int, data: [UInt8], trailer: String) {
    bulkClient = i
    bulkData = data
    bulkOffset = 0
    bulkTrailer = trailer
    pumpBulk()
  }

  /// Whether a bulk reply is still being sent.
  public var bulkActive: Bool { bulkClient >= 0 }

  private func pumpBulk() {
    let i = bulkClient
    guard i >= 0 else { return }
    guard clients[i].fd >= 0 else { endBulk(); return }
    let lineBytes = 57  // 76 base64 characters
    while bulkOffset < bulkData.count {
      let free = settings.clientOutputBytes - (clients[i].outputEnd - clients[i].outputStart)
      guard free >= 160 else { return }  // wait for POLLOUT
      let end = min(bulkData.count, bulkOffset + lineBytes)
      let start = bulkOffset
      bulkData.withUnsafeBytes { raw in
        write(i) { w in
          w.write("| ")
          w.writeBase64(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
          w.newline()
        }
      }
      bulkOffset = end
      guard clients[i].fd >= 0 else { endBulk(); return }
    }
    let trailer = bulkTrailer
    write(i) { w in
      w.write(trailer)
      w.newline()
    }
    endBulk()
  }

  private func endBulk() {
    bulkClient = -1
    bulkData = []
    bulkOffset = 0
  }

  /// Sends what client `i` has pending, as far as the socket takes it now.
  func flush(_ i: Int) {
    if clients[i].tls != nil {
      flushTLS(i)
      return
    }
    while clients[i].fd >= 0 && clients[i].outputStart < clients[i].outputEnd {
      let base = i * settings.clientOutputBytes
      let start = output.baseAddress! + base + clients[i].outputStart
      let length = clients[i].outputEnd - clients[i].outputStart
      let fd = clients[i].fd
      let n: IOResult<Int>
      do {
        n = try syscallRetrying("console write", {
          clients[i].isSerial ? Glibc.write(fd, start, length) : Glibc.send(fd, start, length, Int32(MSG_NOSIGNAL))
        })
      } catch {
        disconnect(i)
        return
      }
      guard case .done(let sent) = n else { return }
      clients[i].outputStart += sent
    }
    if clients[i].fd >= 0 && clients[i].outputStart == clients[i].outputEnd {
      clients[i].outputStart = 0
      clients[i].outputEnd = 0
      if clients[i].closeWhenFlushed { disconnect(i) }
    }
  }

  /// `flush` for a TLS client: nothing before the handshake is done; SSL_write may take part
  /// of the buffer (partial writes), and a retry may start at a moved buffer.
  private func flushTLS(_ i: Int) {
    guard let session = clients[i].tls, !clients[i].handshaking else { return }
    clients[i].writeWantsRead = false
    while clients[i].outputStart < clients[i].outputEnd {
      let base = i * settings.clientOutputBytes
      let length = min(clients[i].outputEnd - clients[i].outputStart, Int(Int32.max))
      let n = sg_tls_write(session, output.baseAddress! + base + clients[i].outputStart, Int32(length))
      if n > 0 {
        clients[i].outputStart += Int(n)
        continue
      }
      switch n {
      case Int32(SG_TLS_WANT_WRITE): return  // POLLOUT: output is pending
      case Int32(SG_TLS_WANT_READ): clients[i].writeWantsRead = true; return
      default: disconnect(i); return
      }
    }
    clients[i].outputStart = 0
    clients[i].outputEnd = 0
    if clients[i].closeWhenFlushed { disconnect(i) }
  }

  // MARK: - Polling

  /// Descriptors the console may add to a poll set at most.
  public var pollCapacity: Int { listenerDescriptors.count + slotCount }

  /// Whether client `i`'s line queue can take another read.
  private func hasRoom(_ i: Int) -> Bool { clients[i].queueBytes + Self.lineBytesMax + 2 <= Self.queueBytes }

  /// Whether TLS client `i` holds decrypted input that poll cannot report (read it now).
  private func tlsInputPending(_ i: Int) -> Bool {
    guard let session = clients[i].tls, !clients[i].handshaking else { return false }
    return hasRoom(i) && sg_tls_pending(session) > 0
  }

  /// Adds the listeners and clients to `poll`; returns when the console next needs the loop
  /// (a serial reopen, an idle client, a snapshot being rendered).
  public func prepare(_ poll: PollSet, now: Instant, rendering: Bool) -> Instant? {
    for k in 0..<listenerDescriptors.count {
      listenerTokens[k] = poll.add(listenerDescriptors[k], events: Int16(POLLIN))
    }
    for i in 0..<slotCount {
      clientTokens[i] = .none
      guard clients[i].fd >= 0 else { continue }
      var events = Int16(0)
      if clients[i].handshaking {
        events = clients[i].handshakeWants
      } else {
        if hasRoom(i) || clients[i].writeWantsRead { events |= Int16(POLLIN) }
        if clients[i].outputStart < clients[i].outputEnd || i == bulkClient || clients[i].readWantsWrite { events |= Int16(POLLOUT) }
      }
      clientTokens[i] = poll.add(clients[i].fd, events: events)
    }
    var deadline: Instant? = rendering ? now.adding(milliseconds: 10) : nil
    for i in 0..<slotCount where clients[i].tls != nil {
      var due: Instant? = nil
      if clients[i].handshaking { due = clients[i].lastActivity.adding(milliseconds: settings.tlsHandshakeTimeoutMilliseconds) }
      else if tlsInputPending(i) { due = now }
      if let due, deadline == nil || due < deadline! { deadline = due }
    }
    if !settings.serialPath.isEmpty && !serialOpen && (deadline == nil || serialRetryAt < deadline!) { deadline = serialRetryAt }
    return deadline
  }

  /// Handles what poll reported: accepts, reads into the line queues, flushes, closes idle
  /// clients, ends idle serial operator sessions, reopens the serial port.
  public func service(_ poll: PollSet) {
    let now = clock.now()
    for k in 0..<listenerDescriptors.count where poll.revents(listenerTokens[k]) & Int16(POLLIN) != 0 {
      acceptAll(listenerDescriptors[k], tls: listenerTLS[k])
    }
    for i in 0..<slotCount where clients[i].fd >= 0 {
      let revents = poll.revents(clientTokens[i])
      if clients[i].handshaking {
        if revents != 0 { advanceHandshake(i) }
        continue
      }
      if revents & Int16(POLLOUT) != 0 || (clients[i].writeWantsRead && revents & Int16(POLLIN) != 0) {
        flush(i)
        if i == bulkClient { pumpBulk() }
      }
      guard clients[i].fd >= 0 else { continue }
      if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || (clients[i].readWantsWrite && revents & Int16(POLLOUT) != 0)
        || tlsInputPending(i)
      {
        readClient(i, now: now)
      }
    }
    for i in 0..<slotCount where clients[i].fd >= 0 && clients[i].handshaking {
      if now.milliseconds(since: clients[i].lastActivity) >= settings.tlsHandshakeTimeoutMilliseconds {
        tlsHandshakeTimeouts &+= 1
        lastTLSFailure = "no handshake within \(settings.tlsHandshakeTimeoutMilliseconds) ms"
        disconnect(i)
      }
    }
    for i in 0..<slotCount where clients[i].fd >= 0 && !clients[i].isSerial && !clients[i].handshaking {
      if now.milliseconds(since: clients[i].lastActivity) > settings.idleTimeoutSeconds * 1000 {
        write(i) { $0.write("! idle timeout, closing\n") }
        disconnect(i)
      }
    }
    commands.expireIdleOperators { i in write(i) { $0.write("! idle: operator role ended; AUTH again\n") } }
    if !settings.serialPath.isEmpty && !serialOpen && now >= serialRetryAt { openSerial() }
  }

  private func acceptAll(_ listener: Int32, tls: Bool) {
    for _ in 0..<16 {
      var address = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let fd = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sg_accept_nonblocking(listener, $0, &length) }
      }
      if fd < 0 { return }  // EAGAIN: none left; other errors: try again next time
      var slot = -1
      for i in 0..<(slotCount - 1) where clients[i].fd < 0 { slot = i; break }
      guard slot >= 0 else {
        rejectedClients &+= 1
        if !tls {  // a TLS client could not read it before a handshake: just closed
          let message: StaticString = "ERR 503 too many clients\n"
          _ = message.withUTF8Buffer { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        close(fd)
        continue
      }
      guard tls else {
        attach(fd: fd, peer: Self.peerKey(address), slot: slot, serial: false)
        continue
      }
      // One OpenSSL session per accepted connection: allocated here, freed on disconnect.
      guard let context = self.tls?.context, let session = sg_tls_session_new(context, fd) else {
        rejectedClients &+= 1
        close(fd)
        continue
      }
      clients[slot] = Client(fd: fd, lastActivity: clock.now(), tls: session, handshaking: true,
                             handshakeWants: Int16(POLLIN), peer: Self.peerKey(address))
      advanceHandshake(slot)
    }
  }

  /// One step of client `i`'s TLS handshake; starts the console session when it is done.
  private func advanceHandshake(_ i: Int) {
    guard let session = clients[i].tls else { return }
    switch sg_tls_handshake(session) {
    case Int32(SG_TLS_DONE):
      tlsHandshakes &+= 1
      clients[i].handshaking = false
      clients[i].handshakeWants = 0
      clients[i].lastActivity = clock.now()
      startSession(i)
    case Int32(SG_TLS_WANT_READ): clients[i].handshakeWants = Int16(POLLIN)
    case Int32(SG_TLS_WANT_WRITE): clients[i].handshakeWants = Int16(POLLOUT)
    default:
      tlsHandshakeFailures &+= 1
      lastTLSFailure = String(cString: sg_tls_error(session))
      disconnect(i)
    }
  }

  static func peerKey(_ address: sockaddr_storage) -> PeerKey {
    var a = address
    return withUnsafePointer(to: &a) { p -> PeerKey in
      if p.pointee.ss_family == sa_family_t(AF_INET6) {
        return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
          withUnsafeBytes(of: s.pointee.sin6_addr) { b in
            PeerKey.ipv6(high: UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                         low: UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
          }
        }
      }
      return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { s in
        PeerKey.ipv4(UInt32(bigEndian: s.pointee.sin_addr.s_addr))
      }
    }
  }

  private func readClient(_ i: Int, now: Instant) {
    let fd = clients[i].fd
    let room = min(readBuffer.count, Self.queueBytes - clients[i].queueBytes)
    let count: Int
    if let session = clients[i].tls {
      guard room > 0 else { return }
      clients[i].readWantsWrite = false
      let n = sg_tls_read(session, readBuffer.baseAddress, Int32(room))
      switch n {
      case 1...: count = Int(n)
      case Int32(SG_TLS_WANT_READ): return
      case Int32(SG_TLS_WANT_WRITE): clients[i].readWantsWrite = true; return
      default: disconnect(i); return  // close_notify, end of stream, or a TLS error
      }
    } else {
      let n: IOResult<Int>
      do { n = try syscallRetrying("console read", { Glibc.read(fd, readBuffer.baseAddress, room) }) } catch {
        disconnect(i)
        return
      }
      guard case .done(let read) = n else { return }
      if read == 0 {
        disconnect(i)  // end of stream (or, for a tty, the other side hung up)
        return
      }
      count = read
    }
    clients[i].lastActivity = now
    framers[i].feed(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])) { out in
      switch out {
      case .line(let line): enqueue(i, line: line, overlong: false)
      case .overlong: enqueue(i, line: UnsafeRawBufferPointer(start: nil, count: 0), overlong: true)
      }
    }
  }

  /// Queues a complete line as [length: UInt16][bytes]; an overlong line as length 0xFFFF.
  private func enqueue(_ i: Int, line: UnsafeRawBufferPointer, overlong: Bool) {
    let base = i * Self.queueBytes + clients[i].queueBytes
    guard clients[i].queueBytes + 2 + line.count <= Self.queueBytes else {
      // Cannot happen: reads are sized to the free queue space. Treat it as a protocol error.
      disconnect(i, dropped: true)
      return
    }
    queue.storeBytes(of: overlong ? UInt16.max : UInt16(line.count), toByteOffset: base, as: UInt16.self)
    if !line.isEmpty { (queue.baseAddress! + base + 2).copyMemory(from: line.baseAddress!, byteCount: line.count) }
    clients[i].queueBytes += 2 + line.count
    clients[i].queued += 1
  }

  /// Runs every queued line of every client through the command interpreter against `host`.
  public func runCommands<Host: ConsoleHost & ~Copyable>(host: inout Host) {
    drainLines { slot, line in commands.handle(slot, line: line, host: &host, output: self) }
  }

  /// Calls `body` for every queued line of every client, oldest first, then empties the queues.
  /// An overlong line comes as `nil`.
  func drainLines(_ body: (Int, UnsafeRawBufferPointer?) -> Void) {
    // A client receiving a bulk reply gets its next reply after it: its lines wait.
    for i in 0..<slotCount where clients[i].queued > 0 && i != bulkClient {
      var offset = i * Self.queueBytes
      let end = offset + clients[i].queueBytes
      while offset < end && clients[i].fd >= 0 {
        let length = Int(queue.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        if length == Int(UInt16.max) {
          body(i, nil)
          offset += 2
        } else {
          body(i, UnsafeRawBufferPointer(rebasing: queue[(offset + 2)..<(offset + 2 + length)]))
          offset += 2 + length
        }
      }
      clients[i].queued = 0
      clients[i].queueBytes = 0
    }
  }

  /// Sends every new event to the clients that are watching, payloads shown only to operators.
  /// Events are formatted straight into each client's output buffer; nothing is allocated.
  /// With `upTo`, nothing later is sent (the audit log's committed position: an event a
  /// client has seen is one the log already holds).
  public func broadcast(_ ring: EventRing, since start: Instant, upTo limit: UInt64? = nil) {
    if eventCursor == 0 { eventCursor = ring.lastSequence }  // new console: from now on
    let last = min(ring.lastSequence, limit ?? .max)
    guard last > eventCursor else { return }
    guard watchingClients > 0 else {
      eventCursor = last
      return
    }
    var cursor = EventCursor(next: eventCursor + 1)
    cursor.read(ring, upTo: last) { read in
      for i in 0..<slotCount where clients[i].fd >= 0 && commands[i].watching {
        let visibility = commands.payloadVisibility(i)
        write(i) { w in
          switch read {
          case .event(let e):
            w.write("! ")
            EventText.write(e, since: start, payloads: visibility, into: &w)
            w.newline()
          case .overwritten(let count):
            w.write("! (")
            w.write(count)
            w.write(" events overwritten before they could be sent)\n")
          }
        }
      }
    }
    eventCursor = last
  }
}
