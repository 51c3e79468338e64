import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

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
/// sends close_notify.
///
/// Peers (`PeerKey`, for connection slots and AUTH lockouts): a client on the network by its
/// network; a client on this host (loopback, or the host's own address) by the user owning its
/// socket, asked of the kernel on accept (sock_diag, `sg_tcp_peer_owner`: one exact lookup, no
/// file to scan). Who gets a slot: `ConsoleAdmission`.
public final class ConsoleServer<Clock: MonotonicClock>: ConsoleOutput {
  /// One connection (a TCP client, or the serial port in the last slot).
  struct Client {
    var fd: Int32 = -1
    var isSerial = false
    var closeWhenFlushed = false
    var lastActivity = Instant(nanoseconds: 0)
    var outputStart = 0
    var outputEnd = 0
    var queued = 0  // complete lines waiting in the queue
    var queueBytes = 0  // bytes used in the queue
    var tls: OpaquePointer? = nil  // the TLS session (sg_tls_session), nil for plain text
    var handshaking = false  // TLS: the handshake is not finished (no console session yet)
    var handshakeWants = Int16(0)  // TLS: what the handshake waits for (POLLIN or POLLOUT)
    var readWantsWrite = false  // TLS: the last read needs the socket writable
    var writeWantsRead = false  // TLS: the last write needs the socket readable
    var peer = PeerKey.loopback
  }

  public static var lineBytesMax: Int { LineFramer.lineBytesMax }
  static var queueBytes: Int { 2_048 }

  public let settings: ConsoleSettings
  public internal(set) var listenerDescriptors: [Int32] = []
  /// Where each listener is bound ("127.0.0.1:4570", "tls:0.0.0.0:4570"), ports resolved.
  public internal(set) var boundAddresses: [String] = []
  /// Whether each listener speaks TLS.
  public internal(set) var listenerTLS: [Bool] = []
  /// Whether each listener is the Unix socket (`console.unix_path`).
  public internal(set) var listenerUnix: [Bool] = []
  /// Who is an operator on the Unix socket without AUTH: root and `console.unix_operators`.
  var unixOperatorUIDs: [UInt32] = []
  /// The socket file this server made (removed when it goes).
  var unixSocketPath = ""
  /// The TLS context (nil when no TLS is configured).
  public let tls: ConsoleTLS?
  public internal(set) var tlsHandshakes: UInt64 = 0
  public internal(set) var tlsHandshakeFailures: UInt64 = 0
  public internal(set) var tlsHandshakeTimeouts: UInt64 = 0
  /// Why the last TLS handshake failed ("" when none has).
  public internal(set) var lastTLSFailure = ""
  /// Why the operator secret is unavailable (nil when one is loaded).
  public var secretProblem: String? { commands.secretProblem }
  /// The command interpreter: sessions, roles, budgets, AUTH.
  public let commands: ConsoleCommands<Clock>
  public internal(set) var droppedClients: UInt64 = 0
  public internal(set) var rejectedClients: UInt64 = 0
  /// Unauthenticated clients closed to make room for a newcomer (`ConsoleAdmission`).
  public internal(set) var reclaimedClients: UInt64 = 0
  /// The NETLINK_SOCK_DIAG socket that tells local peers' owners (-1: unavailable).
  let peerOwners: Int32
  /// How clients on this host are told apart: "by user", or why they cannot be (then they are
  /// all one peer, `PeerKey.loopback`).
  public let peerOwnerLookup: String
  public internal(set) var serialReopens: UInt64 = 0
  public internal(set) var serialError: Int32 = 0

  let slotCount: Int
  var clients: UnsafeMutableBufferPointer<Client>
  let framers: UnsafeMutablePointer<LineFramer>
  let output: UnsafeMutableRawBufferPointer
  let queue: UnsafeMutableRawBufferPointer
  let readBuffer: UnsafeMutableRawBufferPointer
  let listenerTokens: UnsafeMutableBufferPointer<PollSet.Token>
  let clientTokens: UnsafeMutableBufferPointer<PollSet.Token>
  var serialRetryAt = Instant(nanoseconds: 0)
  var serialBackoffMilliseconds = 250
  let clock: Clock
  /// The ring position WATCH clients have been sent up to.
  var eventCursor: UInt64 = 0
  /// A bulk reply being sent in bounded steps (a PNG snapshot as base64 body lines).
  var bulkClient = -1
  var bulkData: [UInt8] = []
  var bulkOffset = 0
  var bulkTrailer = ""

  public init(settings: ConsoleSettings, clock: Clock) throws(SystemError) {
    self.settings = settings
    self.clock = clock
    slotCount = settings.clientsMax + 1  // the last slot is the serial port's
    commands = ConsoleCommands(
      slots: slotCount, limits: settings.limits, auth: settings.auth,
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
    listenerTokens = .allocate(capacity: 9)  // 8 addresses and the Unix socket
    listenerTokens.initialize(repeating: .none)
    clientTokens = .allocate(capacity: slotCount)
    clientTokens.initialize(repeating: .none)
    let plan = try ConsoleListener.plan(settings)
    tls =
      settings.tlsCertFile.isEmpty
      ? nil
      : try ConsoleTLS(certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCAFile: settings.tlsClientCAFile)
    for listener in plan {
      let (fd, bound) = try Self.listen(on: listener.address)
      listenerDescriptors.append(fd)
      boundAddresses.append(listener.tls ? ConsoleListener.tlsPrefix + bound : bound)
      listenerTLS.append(listener.tls)
      listenerUnix.append(false)
    }
    if listenerDescriptors.isEmpty {
      peerOwners = -1
      peerOwnerLookup = "no TCP listener"
    } else {
      do {
        peerOwners = try syscall("socket(AF_NETLINK, NETLINK_SOCK_DIAG)", { sg_sock_diag_open() })
        peerOwnerLookup = "by user"
      } catch {
        peerOwners = -1
        peerOwnerLookup = "unknown (\(error.code)): all local clients are one peer"
      }
    }
    if !settings.unixPath.isEmpty { try listenOnUnixSocket() }
    if !settings.serialPath.isEmpty { openSerial() }
  }

  deinit {
    for fd in listenerDescriptors { closeDescriptor(fd) }
    if !unixSocketPath.isEmpty { _ = try? syscall("remove \(unixSocketPath)", { unlink(unixSocketPath) }) }
    if peerOwners >= 0 { closeDescriptor(peerOwners) }
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

  // MARK: - Serial

  var serialSlot: Int { slotCount - 1 }

  func openSerial() {
    let fd: Int32
    do { fd = try SerialPort.open(path: settings.serialPath, baud: settings.serialBaud, nonBlocking: true, terminalLineEndings: true) } catch {
      serialError = error.code.rawValue
      scheduleSerialRetry()
      return
    }
    serialError = 0
    serialBackoffMilliseconds = 250
    attach(fd: fd, peer: .serial, slot: serialSlot, serial: true)
  }

  func scheduleSerialRetry() {
    serialRetryAt = clock.now().adding(milliseconds: serialBackoffMilliseconds)
    serialBackoffMilliseconds = min(serialBackoffMilliseconds * 2, 2_000)
  }

  // MARK: - Clients

  func attach(fd: Int32, peer: PeerKey, slot: Int, serial: Bool) {
    clients[slot] = Client(fd: fd, isSerial: serial, lastActivity: clock.now(), peer: peer)
    startSession(slot)
  }

  /// Starts the console session on a connected slot (for TLS, once the handshake is done).
  func startSession(_ slot: Int) {
    commands.opened(slot, peer: clients[slot].peer, transport: clients[slot].isSerial ? .serial : .tcp)
    // Client certificates required and verified in the handshake: this client is certified.
    if clients[slot].tls != nil && tls?.requiresClientCertificates == true { commands.certify(slot) }
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
    closeDescriptor(clients[i].fd)
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
  func discardInput(_ fd: Int32) {
    for _ in 0..<16 {
      let read = try? syscallRetrying("recv from \(fd)", { recv(fd, readBuffer.baseAddress, readBuffer.count, Int32(MSG_DONTWAIT)) })
      guard case .done(let n)? = read, n > 0 else { return }  // nothing left, the end, or an error: close now
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

  /// Appends one whole reply or event to client `i`'s output through `body`, its lines folded to
  /// 80 columns (ConsoleLayout). If it does not fit, the client is disconnected (it is not
  /// reading); partial replies are never sent.
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
    ConsoleLayout.fold(&w, from: 0)  // every line sent fits 80 columns (docs/console.md)
    if w.overflowed {
      disconnect(i, dropped: true)
      return
    }
    clients[i].outputEnd += w.count
    flush(i)
  }

}
