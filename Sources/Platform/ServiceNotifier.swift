import CLinux
import Glibc
import ScanBase

/// systemd's notify protocol (sd_notify(3)), written here because it is one datagram on a unix
/// socket and the service links no libsystemd: READY=1 once the reader is up, STATUS= lines, and
/// WATCHDOG=1 from the loop at half the interval systemd asks for (WATCHDOG_USEC), so a stalled
/// loop is restarted. Without NOTIFY_SOCKET (not under systemd) every call does nothing.
/// The address and a message buffer are set up once; sending allocates nothing.
public final class ServiceNotifier {
  private let descriptor: Int32
  private var address = sockaddr_un()
  private var addressLength = socklen_t(0)
  private let buffer: UnsafeMutableRawBufferPointer
  /// How often the loop must say it is alive (0: no watchdog).
  public let watchdogIntervalMilliseconds: Int
  private var lastWatchdog = Instant(nanoseconds: 0)
  public private(set) var readySent = false
  public private(set) var messagesSent: UInt64 = 0

  public init() {
    buffer = .allocate(byteCount: 512, alignment: 8)
    var interval = 0
    if let usec = getenv("WATCHDOG_USEC").flatMap({ Int(String(cString: $0)) }), usec > 0 {
      // WATCHDOG_PID, when set, must name this process.
      let pid = getenv("WATCHDOG_PID").flatMap { Int32(String(cString: $0)) }
      if pid == nil || pid == getpid() { interval = usec / 1000 / 2 }
    }
    watchdogIntervalMilliseconds = max(0, interval)
    guard let path = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !path.isEmpty,
      path.utf8.count < MemoryLayout.size(ofValue: address.sun_path)
    else {
      descriptor = -1
      return
    }
    // Without a socket the service runs on, unsupervised (as without NOTIFY_SOCKET).
    descriptor = (try? syscall("notify socket", { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })) ?? -1
    guard descriptor >= 0 else { return }
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      var i = 0
      for b in path.utf8 {
        raw[i] = (i == 0 && b == UInt8(ascii: "@")) ? 0 : b  // "@name": the abstract namespace
        i += 1
      }
    }
    addressLength = socklen_t(MemoryLayout<sa_family_t>.size + path.utf8.count)
  }

  deinit {
    if descriptor >= 0 { closeDescriptor(descriptor) }
    buffer.deallocate()
  }

  public var isActive: Bool { descriptor >= 0 }

  /// Sends one message built by `body` (e.g. "READY=1\nSTATUS=...").
  public func send(_ body: (inout ByteWriter) -> Void) {
    guard descriptor >= 0 else { return }
    var w = ByteWriter(buffer)
    body(&w)
    let count = w.count
    // A message systemd cannot take now (or at all) is dropped: the next one says the same.
    let sent = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { to in
        try? syscallRetrying("sd_notify", { sendto(descriptor, buffer.baseAddress, count, Int32(MSG_NOSIGNAL), to, addressLength) })
      }
    }
    if case .done = sent { messagesSent &+= 1 }
  }

  public func ready(status: (inout ByteWriter) -> Void) {
    readySent = true
    send { w in
      w.write("READY=1\nSTATUS=")
      status(&w)
    }
  }

  public func stopping() { send { $0.write("STOPPING=1\nSTATUS=stopping") } }

  /// Pets the watchdog when half its interval has passed; call once per loop iteration.
  public func tick(now: Instant) {
    guard watchdogIntervalMilliseconds > 0, now.milliseconds(since: lastWatchdog) >= watchdogIntervalMilliseconds else { return }
    lastWatchdog = now
    send { $0.write("WATCHDOG=1") }
  }
}
