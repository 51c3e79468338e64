import Glibc
import Synchronization

/// Starts a POSIX thread running `body` (the log writer, the event printer, the snapshot
/// renderer): one place for the pthread and context plumbing. Returns the thread to join.
public func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
  final class Box: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  var thread = pthread_t()
  let context = Unmanaged.passRetained(Box(body)).toOpaque()
  let rc = pthread_create(&thread, nil, { raw in
    Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
    return nil
  }, context)
  precondition(rc == 0, "cannot start a thread: \(rc)")
  return thread
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

/// A helper thread the owner can ask to finish: `body` runs until it sees `stopRequested` (and
/// then finishes its work, e.g. writes what is left); `stop()` asks and waits. The log writer and
/// the event printer are built on it.
public final class WorkerThread: @unchecked Sendable {
  private let stopFlag = Atomic<Bool>(false)
  private var thread = pthread_t()
  private var running = false

  public init() {}

  /// Whether `stop()` has been called.
  public var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }

  public func start(_ body: @escaping @Sendable () -> Void) {
    precondition(!running, "thread already started")
    thread = startThread(body)
    running = true
  }

  /// Asks the body to finish and waits for it. Safe to call more than once.
  public func stop() {
    guard running else { return }
    stopFlag.store(true, ordering: .releasing)
    pthread_join(thread, nil)
    running = false
  }
}
