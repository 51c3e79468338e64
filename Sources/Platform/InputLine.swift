import CLinux
import ScanBase

/// One GPIO input (a door's contact, exit button and tamper, the fire and lockdown inputs, a
/// turnstile's passage sensor): a line whose level changes arrive as edge events with the
/// kernel's timestamps. Its owner polls its descriptor (or, for a simulated line, wakes at its
/// next scripted edge) and reads what came, without allocating.
public protocol InputLine: AnyObject {
  /// The edge-event descriptor to poll (-1: none, a simulated line).
  var pollDescriptor: Int32 { get }
  /// When a simulated line next changes (nil: on I/O only).
  var nextEdgeAt: Instant? { get }
  /// The level now (active-low applied), read once at start.
  func currentLevel() throws(GPIOError) -> LineLevel
  /// Reads the edges that are in (at most `inputEdgesPerRead`), oldest first, as (level, time).
  /// Returns how many were read (`inputEdgesPerRead`: there may be more).
  @discardableResult
  func readEdges(now: Instant, _ body: (LineLevel, Instant) -> Void) throws(GPIOError) -> Int
  /// "gpiod v1", "gpiod v2", "sim": how the line is read.
  var backend: String { get }
}

/// The most edges one `readEdges` call delivers.
public let inputEdgesPerRead = 64

extension InputLine {
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
    if n >= inputEdgesPerRead { return true }
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
public final class SimulatedInputLine: InputLine {
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
    while head < edges.count && edges[head].at <= now && n < inputEdgesPerRead {
      level = edges[head].level
      body(level, edges[head].at)
      head += 1
      n += 1
    }
    return n
  }
}

/// A participant's input lines, read one way (the door's, the emergency inputs', the
/// turnstile's): each line's current level at start, its descriptor in the poll table (or its
/// next simulated edge as a deadline), and, when due, its edges and then its level handed on
/// oldest first (`readEdgesAndLevel`: a level that differs from the last edge read is a lost
/// edge, made up at once). Tables are made at init; nothing allocates per iteration.
public final class InputLines {
  private let lines: [(any InputLine)?]
  private var tokens: [PollSet.Token]
  private var more: [Bool]
  /// The level each line was last read at (its current level at start).
  public private(set) var levels: [LineLevel]
  /// Reads that failed (a line's level at start, its edges later).
  public private(set) var errors: UInt64 = 0
  /// Edges made up from a level that differed from the last edge read (lost edges).
  public private(set) var resyncs: UInt64 = 0

  /// `lines` in the participant's order (nil: not wired), each read for its level now.
  public init(_ lines: [(any InputLine)?]) {
    self.lines = lines
    tokens = Array(repeating: .none, count: lines.count)
    more = Array(repeating: false, count: lines.count)
    levels = Array(repeating: .inactive, count: lines.count)
    for i in 0..<lines.count {
      guard let line = lines[i] else { continue }
      do throws(GPIOError) { levels[i] = try line.currentLevel() } catch { errors &+= 1 }
    }
  }

  public var count: Int { lines.count }
  /// Whether line `index` is wired.
  public func isWired(_ index: Int) -> Bool { lines[index] != nil }
  /// How the first wired line is read ("gpiod v2", "sim", ...; "none").
  public var backend: String { lines.lazy.compactMap { $0?.backend }.first ?? "none" }

  /// Adds every wired line to `poll` and folds when one next needs reading into `next`.
  public func prepare(_ poll: PollSet, now: Instant, next: inout Instant?) {
    for i in 0..<lines.count { tokens[i] = lines[i]?.add(to: poll, more: more[i], now: now, next: &next) ?? .none }
  }

  /// Reads every line that is due and hands its edges to `edge` as (line index, level, time).
  public func service(_ poll: PollSet, now: Instant, _ edge: (Int, LineLevel, Instant) -> Void) {
    for i in 0..<lines.count {
      guard let line = lines[i], line.isDue(poll, tokens[i], more: more[i], now: now) else { continue }
      do throws(GPIOError) {
        more[i] = try line.readEdgesAndLevel(now: now, last: &levels[i], madeUp: &resyncs) { level, at in edge(i, level, at) }
      } catch { errors &+= 1 }
    }
  }
}
