import ScanCore

/// A simulated GPIO line that records every edge with its time, into storage allocated once.
///
/// Used by tests (assert on the edge history) and by `scangate demo` (print edges as they
/// happen through `onEdge`). Optionally fails on demand, to test GPIO fault handling.
public final class RecordingOutputLine: OutputLine {
  /// One recorded change of level.
  public struct Edge: Equatable, Sendable {
    public var level: LineLevel
    public var at: Instant
  }

  public let name: String
  public private(set) var level = LineLevel.inactive
  private let clock: any MonotonicClock
  private let storage: UnsafeMutableBufferPointer<Edge>
  public private(set) var edgeCount = 0
  /// Edges that did not fit in the storage.
  public private(set) var droppedEdges = 0
  /// When set, `set` throws this errno.
  public var failWithErrno: Int32? = nil
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
    if let code = failWithErrno { throw GPIOError(errno: code, operation: "set \(name)") }
    guard newLevel != level else { return }
    level = newLevel
    let now = clock.now()
    if edgeCount < storage.count { storage[edgeCount] = Edge(level: newLevel, at: now); edgeCount += 1 }
    else { droppedEdges += 1 }
    onEdge?(name, newLevel, now)
  }

  /// The recorded edges, oldest first.
  public var edges: [Edge] { Array(storage[0..<edgeCount]) }

  /// Lengths in milliseconds of every completed active period.
  public var activePeriodsMilliseconds: [Int] {
    var out: [Int] = []
    var since: Instant? = nil
    for edge in edges {
      if edge.level == .active { since = edge.at }
      else if let s = since { out.append(edge.at.milliseconds(since: s)); since = nil }
    }
    return out
  }

  public func clear() { edgeCount = 0 }
}
