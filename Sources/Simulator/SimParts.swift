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
  /// A signed guest pass good for one use, and one good for two (counted in the use store).
  case guestOnce
  case guestTwice

  var label: String { ["alice", "bob", "carol", "mallory", "guest-once", "guest-twice"][rawValue - 1] }
  /// How many grants the person may have in a whole run (nil: not counted).
  var usesAllowed: Int? { self == .guestOnce ? 1 : (self == .guestTwice ? 2 : nil) }
}

/// The reader's use store on a simulated disk: a use is in the page cache when written and on
/// the disk once synced; a restart keeps only what was synced. Under the `fsync-lies` mutation
/// the sync reports success and keeps nothing (a card that acknowledges and loses the write).
/// A full disk takes no write: `recordUse` says so (false), unless the `disk-full-ignored`
/// mutation swallows the error and says yes.
public final class SimUseStore: UseStore {
  private var synced: [CredentialID: (uses: Int, firstUse: Int64)] = [:]
  private var cached: [CredentialID: (uses: Int, firstUse: Int64)] = [:]
  var fsyncLies = false
  var forgets = false
  var full = false
  var ignoresFull = false

  public func usage(_ id: CredentialID) -> (uses: Int, firstUse: Int64)? { forgets ? nil : cached[id] }

  public func recordUse(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    if full { return ignoresFull }
    let before = cached[id]
    cached[id] = (uses: (before?.uses ?? 0) + 1, firstUse: before?.firstUse ?? now)
    if !fsyncLies { synced[id] = cached[id] }
    return true
  }

  /// The reader restarted: what it reads back is what reached the disk.
  func restart() { cached = synced }
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
