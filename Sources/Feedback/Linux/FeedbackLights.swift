import ScanBase
import ScanConsole
import ScanFeedback
import ScanLoop
import ScanPlatform

/// The feedback lamps on the loop (`[feedback]`): each turn it reads the reader's new events
/// from the ring (its own cursor, as the log writer and WATCH have theirs), lets
/// `FeedbackLamps` say what shows, and drives the green, red and amber lines that changed.
/// A lamp is advice to the person at the reader, never a decision: its edges are not recorded
/// (a blinking lamp would fill the audit log), a line that cannot be driven is counted in
/// STATUS, and the lines go dark when the reader stops. Nothing allocates per turn.
public final class FeedbackLights: PollParticipant {
  public private(set) var lamps: FeedbackLamps
  private let ring: EventRing
  private var cursor: EventCursor
  private var green: (any OutputLine)?
  private var red: (any OutputLine)?
  private var amber: (any OutputLine)?
  /// The levels last driven (nil before the first turn: every wired line is driven then).
  public private(set) var driven: FeedbackLevels? = nil
  /// Line writes that failed, and events overwritten before they were read.
  public private(set) var errors: UInt64 = 0
  public private(set) var eventsLost: UInt64 = 0
  /// "gpiod v2", "sim", ...: how the lines are driven.
  public let backend: String

  /// Lamps on `green`, `red` and `amber` (nil: not wired), following `ring` from its start, with
  /// the fire release or a lockdown standing when they are made (`standing`).
  public init(
    settings: FeedbackSettings, ring: EventRing, green: (any OutputLine)?, red: (any OutputLine)?,
    amber: (any OutputLine)?, backend: String, standing: (fire: Bool, lockdown: Bool) = (false, false)
  ) {
    lamps = FeedbackLamps(settings: settings, fire: standing.fire, lockdown: standing.lockdown)
    self.ring = ring
    cursor = EventCursor(next: 1)
    self.green = green
    self.red = red
    self.amber = amber
    self.backend = backend
  }

  public var pollCapacity: Int { 0 }

  /// Wakes the loop when a lamp next changes by itself (a blink, a signal's end), or at once
  /// when events wait to be read.
  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if ring.lastSequence >= cursor.next { return now }
    return lamps.nextChange(after: now)
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    cursor.read(ring) { item in
      switch item {
      case .event(let e): lamps.observe(e)
      case .overwritten(let n): eventsLost &+= n
      }
    }
    drive(lamps.levels(at: now))
  }

  /// Drives every lamp dark (the reader stops: a dark reader is not "ready").
  public func release() {
    drive(FeedbackLevels())
  }

  private func drive(_ levels: FeedbackLevels) {
    let last = driven
    if last?.green != levels.green { set(&green, levels.green) }
    if last?.red != levels.red { set(&red, levels.red) }
    if last?.amber != levels.amber { set(&amber, levels.amber) }
    driven = levels
  }

  private func set(_ line: inout (any OutputLine)?, _ level: LineLevel) {
    guard line != nil else { return }
    do throws(GPIOError) { try line!.set(level) } catch { errors &+= 1 }
  }

  /// STATUS: `| feedback <signal> (green on, red off, amber off) gpiod v2[, N write errors][, N events lost]`.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    status.sections.append(StatusSection("feedback", statusLine(now: now)))
  }

  public func statusLine(now: Instant) -> String {
    let l = driven ?? FeedbackLevels()
    func lamp(_ name: String, _ wired: Bool, _ level: LineLevel) -> String {
      wired ? "\(name) \(level == .active ? "on" : "off")" : "\(name) -"
    }
    var s = "\(lamps.signal(at: now).name) (\(lamp("green", green != nil, l.green)), \(lamp("red", red != nil, l.red)), "
    s += "\(lamp("amber", amber != nil, l.amber))) \(backend)"
    if lamps.settings.quiet { s += ", quiet" }
    if errors > 0 { s += ", \(errors) write errors" }
    if eventsLost > 0 { s += ", \(eventsLost) events lost" }
    return s
  }
}
