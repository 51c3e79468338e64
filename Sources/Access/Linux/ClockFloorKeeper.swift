import CCredential
import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform

/// What the keeper reads each time: the wall clock, the time since boot (CLOCK_BOOTTIME: it
/// counts suspend and cannot be set) and the kernel's NTP status.
public struct ClockReading: Sendable {
  public var wall: Int64
  public var sinceBoot: Int64
  public var synchronized: Bool
  public init(wall: Int64, sinceBoot: Int64, synchronized: Bool) {
    self.wall = wall
    self.sinceBoot = sinceBoot
    self.synchronized = synchronized
  }

  /// The system's clocks now.
  public static func system() -> ClockReading {
    var ts = timespec()
    _ = clock_gettime(CLOCK_BOOTTIME, &ts)
    return ClockReading(wall: sg_realtime_seconds(), sinceBoot: Int64(ts.tv_sec), synchronized: sg_clock_synchronized() == 1)
  }

  /// This boot's id (the kernel's random boot_id), or "" when it cannot be read.
  public static func bootID() -> String {
    guard let bytes = try? readWholeFile("/proc/sys/kernel/random/boot_id", maxBytes: 64) else { return "" }
    return String(decoding: bytes.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self)
  }
}

/// Keeps the clock floor (docs/credentials.md, "Time"): a lower bound of the true time that every
/// time check judges at (`TrustedTime`), and records each change of the clock's state in the ring.
///
/// The floor moves forward only on evidence a bad clock reading cannot fake:
/// - the time since boot: while the reader runs, and across restarts within one boot (the file
///   keeps the boot's id and the time since boot it was written at), the floor advances by the
///   time elapsed, so a clock set back while the reader runs, or before a kill -9 and restart,
///   reads as behind the floor;
/// - a synchronised clock that has stayed steady (its offset from the time since boot within
///   `steadyToleranceSeconds`) for `steadySeconds`: one bad reading, or a clock stepped by a
///   lying time server, is not taken until it has held that long;
/// - signed times (a revocation list's `issued`), raised into `TrustedTime` by their loader.
/// It never moves back, except by an operator's logged reset. A poll participant with a
/// deadline only; it writes its file (durably) every `writeSeconds` when the floor has moved,
/// and at a clean stop; nothing allocates between writes.
public final class ClockFloorKeeper: PollParticipant {
  public static let checkMilliseconds = 5_000
  public static let writeSeconds: Int64 = 300
  public static let steadySeconds: Int64 = 600
  public static let steadyToleranceSeconds: Int64 = 2
  static let magic = "scangate-clock-floor"

  public let time: TrustedTime
  public let path: String?
  private let ring: EventRing
  private let read: () -> ClockReading
  private let bootID: String
  /// The floor was `anchorWall` when the time since boot was `anchorBoot`.
  private var anchorWall: Int64 = 0
  private var anchorBoot: Int64 = 0
  /// The synchronised clock's offset from the time since boot, and since when it has held.
  private var steadyOffset: Int64? = nil
  private var steadySince: Int64 = 0
  private var written: Int64 = 0
  private var next: Instant? = nil
  private var lastState: FaultCode? = nil
  /// Why the floor file could not be read or written (STATUS), nil when all is well.
  public private(set) var problem: String? = nil

  /// Reads the floor from `path` (nil: in memory only) into `time`.
  public init(
    time: TrustedTime, ring: EventRing, path: String?, bootID: String = ClockReading.bootID(),
    read: @escaping () -> ClockReading = ClockReading.system
  ) {
    self.time = time
    self.ring = ring
    self.path = path
    self.bootID = bootID
    self.read = read
    let r = read()
    var floor: Int64 = 0
    if let path, fileExists(path) {
      do {
        let (wall, boot, at) = try Self.parse(try readWholeFile(path, maxBytes: 256))
        floor = wall
        // Written during this boot: the time since then has certainly passed.
        if !bootID.isEmpty, boot == bootID, r.sinceBoot >= at { floor = wall.saturatingAdd(r.sinceBoot - at) }
      } catch {
        problem = "\(path): \(error.reason)"
      }
    }
    time.raise(to: floor)
    time.synchronized = r.synchronized
    anchorWall = time.floor
    anchorBoot = r.sinceBoot
    written = anchorWall
  }

  /// `scangate-clock-floor 1 <wall> <boot id> <since boot>`, or an older file's bare number.
  static func parse(_ bytes: [UInt8]) throws(FileError) -> (Int64, String, Int64) {
    let fields = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
    let bound: ClosedRange<Int64> = 0...(1 << 40)
    if fields.count == 1, let wall = Int64(fields[0]), bound.contains(wall) { return (wall, "", 0) }
    guard fields.count == 5, fields[0] == magic, fields[1] == "1", let wall = Int64(fields[2]), bound.contains(wall),
      let at = Int64(fields[4]), bound.contains(at)
    else { throw FileError(path: "clock floor", reason: "damaged: refused (the floor stays where it was)") }
    return (wall, String(fields[3]), at)
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if next == nil { next = now }
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard let due = next, now >= due else { return }
    next = now.adding(milliseconds: Self.checkMilliseconds)
    refresh(now: now, wallNanoseconds: sg_realtime_ns())
  }

  /// Reads the clocks, moves the floor on evidence, records a change of state, writes the floor.
  public func refresh(now: Instant, wallNanoseconds: Int64) {
    let r = read()
    time.synchronized = r.synchronized
    // The time since boot has passed since the anchor.
    time.raise(to: anchorWall.saturatingAdd(max(0, r.sinceBoot - anchorBoot)))
    // A synchronised clock, steady long enough, moves the floor up to it.
    let offset = r.wall &- r.sinceBoot
    if r.synchronized, let steady = steadyOffset, abs(offset &- steady) <= Self.steadyToleranceSeconds {
      if r.sinceBoot - steadySince >= Self.steadySeconds { time.raise(to: r.wall) }
    } else {
      steadyOffset = r.synchronized ? offset : nil
      steadySince = r.sinceBoot
    }
    anchorWall = time.floor
    anchorBoot = r.sinceBoot
    let state: FaultCode =
      r.wall < time.floor ? .clockBehindFloor : r.synchronized ? .clockSynchronised : .clockUnsynchronised
    if state != lastState {
      lastState = state
      _ = ring.append(ScanEvent(state == .clockSynchronised ? .state : .fault, code: state.rawValue, at: now, wall: wallNanoseconds))
      if let why = Self.explanation(state) { writeStandardError("scangate: clock: \(why)\n") }
    }
    if time.floor - written >= Self.writeSeconds { persist() }
  }

  /// What a clock fault means and what to do, for the journal (once per change of state).
  public static func explanation(_ state: FaultCode) -> String? {
    switch state {
    case .clockUnsynchronised:
      "not synchronised (the kernel has no NTP lock): passes, schedules and the log's ages are judged at the clock floor, "
        + "never later than the true time, and unlock windows stay closed; run a time client (systemd-timesyncd or chrony: "
        + "timedatectl set-ntp true) and the fault clears once the clock is synchronised (docs/credentials.md, \"Time\")"
    case .clockBehindFloor:
      "behind its floor (the latest time this reader has proof of): every pass is judged at the floor; set the clock right, "
        + "or, if the floor itself is wrong, an operator's CLOCK FLOOR RESET (docs/credentials.md, \"Time\")"
    default: nil
    }
  }

  /// Writes the floor now (a clean stop, an operator's reset), durably.
  public func persist() {
    guard let path else { return }
    let r = read()
    let floor = time.floor
    let text = "\(Self.magic) 1 \(floor) \(bootID.isEmpty ? "-" : bootID) \(r.sinceBoot)\n"
    do {
      try writeFileAtomically(path, Array(text.utf8), mode: 0o600)
      written = floor
      problem = nil
    } catch {
      problem = error.description
    }
  }

  /// An operator's reset (console `CLOCK FLOOR RESET`): the floor becomes the clock's reading
  /// now, even when that is earlier (a floor raised by a bad reading), and is written durably at
  /// once (a damaged floor file is replaced). The caller records who asked, and the floor before
  /// and after.
  public func resetToClock() -> Int64 {
    let r = read()
    time.reset(to: r.wall)
    anchorWall = r.wall
    anchorBoot = r.sinceBoot
    steadyOffset = nil
    steadySince = r.sinceBoot
    persist()
    return r.wall
  }

  /// STATUS and CLOCK: the clock, its floor, and a problem with the floor file.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    status.clock = ClockReport(wall: unixSeconds, floor: time.floor, synchronized: time.synchronized, problem: problem)
  }

  /// CLOCK FLOOR RESET.
  public func perform(_ command: OperatorCommand) -> OperatorReply? {
    guard case .resetClockFloor = command else { return nil }
    let before = time.floor
    return .clockFloorReset(before: before, after: resetToClock())
  }
}
