import ScanCore
import ScanSim

/// The people the simulated camera shows: the decoder's payload index and the allow-list label.
public enum SimPerson: Int, CaseIterable, Sendable {
  /// On the list.
  case alice = 1
  /// On the list, and a lockdown credential (`lockdown=yes`).
  case bob
  /// On the list until the simulation revokes her (and back when it restores her).
  case carol
  /// Never on the list.
  case mallory

  var payload: String { ["ALICE-0001", "BOB-0002", "CAROL-0003", "MALLORY-0004"][rawValue - 1] }
  var label: String { ["alice", "bob", "carol", "mallory"][rawValue - 1] }
}

/// An output line in the simulated world: its level and every edge go into the trace. Under the
/// `relay-stuck` mutation it never goes inactive again (a welded relay contact, a driver bug).
public final class SimLine: OutputLine {
  let name: String
  let clock: ManualClock
  let trace: SimTrace
  public private(set) var level = LineLevel.inactive
  /// When the line last went active.
  public private(set) var activeSince: Instant? = nil
  var stuck = false
  /// Called at the instant the line goes active (the world checks what the ring holds then).
  var onRise: (() -> Void)? = nil

  init(name: String, clock: ManualClock, trace: SimTrace) {
    self.name = name
    self.clock = clock
    self.trace = trace
  }

  public func set(_ newLevel: LineLevel) throws(GPIOError) {
    guard newLevel != level, !(stuck && newLevel == .inactive) else { return }
    level = newLevel
    activeSince = newLevel == .active ? clock.now() : nil
    trace.add("\(name) \(newLevel == .active ? "on" : "off")")
    if newLevel == .active { onRise?() }
  }
}

/// The whole run's trace: one line per thing that happened, with the simulated time; the
/// digest the run prints is SHA-256 of it all.
public final class SimTrace {
  let clock: ManualClock
  let start: Instant
  public private(set) var lines: [String] = []

  init(clock: ManualClock) {
    self.clock = clock
    start = clock.now()
  }

  func add(_ text: String) {
    let ms = (clock.now().nanoseconds - start.nanoseconds) / 1_000_000
    lines.append("\(ms) \(text)")
  }

  /// SHA-256 of every line, each ended by a newline, as 64 hex digits.
  public func digest(_ digester: some PayloadDigester) -> String {
    let bytes = Array(lines.joined(separator: "\n").utf8) + [0x0A]
    return Hex.string(bytes.withUnsafeBytes { digester.sha256($0) })
  }
}
