import CLinux
import ScanCore

/// One door input (contact, exit button, tamper): a line whose level changes arrive as edge
/// events with the kernel's timestamps. The door controller polls its descriptor (or, for a
/// simulated line, wakes at its next scripted edge) and reads what came, without allocating.
public protocol DoorInputLine: AnyObject {
  /// The edge-event descriptor to poll (-1: none, a simulated line).
  var pollDescriptor: Int32 { get }
  /// When a simulated line next changes (nil: on I/O only).
  var nextEdgeAt: Instant? { get }
  /// The level now (active-low applied), read once at start.
  func currentLevel() throws(GPIOError) -> LineLevel
  /// Reads the edges that are in (at most `doorEdgesPerRead`), oldest first, as (level, time).
  /// Returns how many were read (`doorEdgesPerRead`: there may be more).
  @discardableResult
  func readEdges(now: Instant, _ body: (LineLevel, Instant) -> Void) throws(GPIOError) -> Int
  /// "gpiod v1", "gpiod v2", "sim": how the line is read.
  var backend: String { get }
}

/// The most edges one `readEdges` call delivers.
public let doorEdgesPerRead = 64

extension DoorInputLine {
  /// Adds the line's descriptor to `poll` (its token) and folds when it next needs reading into
  /// `next`: its next simulated edge, or now when a full read left edges waiting (`more`).
  public func add(to poll: PollSet, more: Bool, now: Instant, next: inout Instant?) -> PollSet.Token {
    if more { next = now }
    if let at = nextEdgeAt { next = next.map { min($0, at) } ?? at }
    return pollDescriptor >= 0 ? poll.add(pollDescriptor, events: Int16(POLLIN)) : .none
  }

  /// Whether the line wants reading now: poll said so, a simulated edge is due, or edges wait.
  public func isDue(_ poll: PollSet, _ token: PollSet.Token, more: Bool, now: Instant) -> Bool {
    poll.revents(token) != 0 || (nextEdgeAt.map { $0 <= now } ?? false) || more
  }

  /// Reads the line's edges into `body`, oldest first, and then, when all are read, its level.
  /// Edges can be lost: libgpiod 1.6's kernel FIFO keeps 16 a line and drops the newest when
  /// full, so a contact chattering faster than the loop reads could leave the last edge read at
  /// the wrong level (a door standing open taken for closed). The level after the read is the
  /// truth: one that differs from `last` (the last edge read) goes to `body` as an edge at `now`
  /// and counts in `madeUp` (which also counts an edge that came between the read and the look at
  /// the level: its own event follows, at the same level). Returns true when the read was full
  /// (more may wait: read again without waiting for poll; the level is looked at then).
  public func readEdgesAndLevel(
    now: Instant, last: inout LineLevel, madeUp: inout UInt64, _ body: (LineLevel, Instant) -> Void
  ) throws(GPIOError) -> Bool {
    var latest = now
    let n = try readEdges(now: now) { level, at in
      body(level, at)
      last = level
      if at > latest { latest = at }
    }
    if n >= doorEdgesPerRead { return true }
    let level = try currentLevel()
    if level != last {
      body(level, latest)  // no earlier than the edges read (their stamps may pass `now`)
      last = level
      madeUp &+= 1
    }
    return false
  }
}

/// `gpio.backend = "sim"`: an input line driven by a script of edges set up before the loop
/// runs (the demo, tests) or injected by a test between iterations. Edges are kept in a table
/// reserved at init; nothing allocates while the loop reads them.
public final class SimulatedInputLine: DoorInputLine {
  private var edges: [(level: LineLevel, at: Instant)] = []
  private var head = 0
  private var level: LineLevel
  public let capacity: Int

  public init(level: LineLevel = .inactive, capacity: Int = 256) {
    self.level = level
    self.capacity = capacity
    edges.reserveCapacity(capacity)
  }

  /// Adds an edge to `level` at `at` (edges must come in time order; at setup or between loop
  /// iterations). Returns false when the table is full.
  @discardableResult
  public func schedule(_ level: LineLevel, at: Instant) -> Bool {
    if head == edges.count && head > 0 {
      edges.removeAll(keepingCapacity: true)
      head = 0
    }
    guard edges.count < capacity else { return false }
    precondition(edges.last.map { $0.at <= at } ?? true, "simulated edges in time order")
    edges.append((level, at))
    return true
  }

  public var pollDescriptor: Int32 { -1 }
  public var nextEdgeAt: Instant? { head < edges.count ? edges[head].at : nil }
  public var backend: String { "sim" }
  public func currentLevel() throws(GPIOError) -> LineLevel { level }

  @discardableResult
  public func readEdges(now: Instant, _ body: (LineLevel, Instant) -> Void) throws(GPIOError) -> Int {
    var n = 0
    while head < edges.count && edges[head].at <= now && n < doorEdgesPerRead {
      level = edges[head].level
      body(level, edges[head].at)
      head += 1
      n += 1
    }
    return n
  }
}
