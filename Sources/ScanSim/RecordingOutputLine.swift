import ScanCore
import Synchronization

/// A simulated GPIO line that records every edge with its time, into storage allocated once.
///
/// Used by tests (assert on the edge history) and by `scangate demo` (print edges as they
/// happen through `onEdge`). Optionally fails on demand, to test GPIO fault handling.
///
/// Safe to drive from two threads (the loop, and the relay watchdog's inactive write), as a
/// line request is: each `set` and each read of the history holds a lock (no allocation).
/// `onEdge` is called outside it, on the thread that drove the edge.
public final class RecordingOutputLine: OutputLine, @unchecked Sendable {
  /// One recorded change of level.
  public struct Edge: Equatable, Sendable {
    public var level: LineLevel
    public var at: Instant
  }

  private struct State {
    var level = LineLevel.inactive
    var edgeCount = 0
    var droppedEdges = 0
    var failWithErrno: Int32? = nil
  }

  public let name: String
  private let state = Mutex(State())
  private let clock: any MonotonicClock
  private let storage: UnsafeMutableBufferPointer<Edge>
  public var level: LineLevel { state.withLock { $0.level } }
  public var edgeCount: Int { state.withLock { $0.edgeCount } }
  /// Edges that did not fit in the storage.
  public var droppedEdges: Int { state.withLock { $0.droppedEdges } }
  /// When set, `set` throws this errno.
  public var failWithErrno: Int32? {
    get { state.withLock { $0.failWithErrno } }
    set { state.withLock { $0.failWithErrno = newValue } }
  }
  /// Called on every change of level (the demo prints it).
  public var onEdge: ((String, LineLevel, Instant) -> Void)? = nil

  public init(name: String, clock: any MonotonicClock, capacity: Int = 4_096) {
    self.name = name
    self.clock = clock
    storage = .allocate(capacity: capacity)
    storage.initialize(repeating: Edge(level: .inactive, at: Instant(nanoseconds: 0)))
  }

  deinit { storage.deallocate() }

  public func set(_ newLevel: LineLevel) throws(GPIOError) {
    let outcome: (failed: Int32?, edgeAt: Instant?) = state.withLock { s in
      if let code = s.failWithErrno { return (code, nil) }
      guard newLevel != s.level else { return (nil, nil) }
      s.level = newLevel
      let now = clock.now()
      if s.edgeCount < storage.count { storage[s.edgeCount] = Edge(level: newLevel, at: now); s.edgeCount += 1 } else { s.droppedEdges += 1 }
      return (nil, now)
    }
    if let code = outcome.failed { throw GPIOError(errno: Errno(code), operation: "set \(name)") }
    if let now = outcome.edgeAt { onEdge?(name, newLevel, now) }
  }

  /// The recorded edges, oldest first.
  public var edges: [Edge] { state.withLock { Array(storage[0..<$0.edgeCount]) } }

  /// Lengths in milliseconds of every completed active period.
  public var activePeriodsMilliseconds: [Int] {
    var out: [Int] = []
    var since: Instant? = nil
    for edge in edges {
      if edge.level == .active { since = edge.at } else if let s = since { out.append(edge.at.milliseconds(since: s)); since = nil }
    }
    return out
  }

  public func clear() { state.withLock { $0.edgeCount = 0 } }
}
