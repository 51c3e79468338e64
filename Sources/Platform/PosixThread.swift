import CLinux
import Glibc
import ScanBase
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
  let rc = pthread_create(
    &thread, nil,
    { raw in
      Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, context)
  precondition(rc == 0, "cannot start a thread: \(Errno(rc))")  // pthread_create returns the errno
  return thread
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

/// Hands memory this thread freed back to the kernel (glibc's `malloc_trim`): for a thread that
/// just tore down something large and rare (the fleet link's broker connection), so that a burst
/// of freed buffers in its malloc arena does not stay in RSS. Never on the loop's thread.
public func releaseFreedMemory() {
  _ = malloc_trim(0)
}
