import ScanBase

/// Where frames are decoded (`decoder.isolation`).
public enum DecoderIsolation: String, Sendable, CaseIterable {
  /// In a sandboxed worker process, with a spare (docs/decoder.md, "The decoder worker").
  case process
  /// On the loop's thread, in the service's process (benchmarks, and a reader without seccomp).
  case inline
}

/// Counters of the decoder worker processes, for STATUS, STATS and the summary.
public struct DecoderIsolationStats: Equatable, Sendable {
  /// Decodes that came back (results or none).
  public var completed: UInt64 = 0
  /// Frames whose decode passed the deadline: the worker was killed, the spare took over.
  public var abandoned: UInt64 = 0
  /// Times a decode past its deadline in wall time had used less CPU than it (a loaded
  /// machine): it was given more time, not abandoned.
  public var starved: UInt64 = 0
  /// Workers that died on their own (a crash: SIGSEGV, abort, a forbidden system call).
  public var crashed: UInt64 = 0
  /// Frames that came while no worker could take one (a decode running, none ready, or held
  /// back while faulted): counted, never queued.
  public var skipped: UInt64 = 0
  /// Workers started after the first two (each replaces one killed or dead).
  public var restarts: UInt64 = 0
  /// Starts that failed (the worker could not be spawned, or died before it was ready).
  public var startFailures: UInt64 = 0
  /// The longest decode that came back, submit to reply (microseconds).
  public var longestMicroseconds: UInt64 = 0
  /// Whether the decoder is in a fault (a frame abandoned or a worker crashed lately).
  public var faulted = false
  /// Workers ready to take a frame now (0, 1 or 2).
  public var ready = 0
  /// Whether a decode is running now.
  public var busy = false
  /// Whether any worker can decode (one ready or decoding): false while every slot is starting,
  /// failing to start, or killed, and no code can be read.
  public var decoding: Bool { ready > 0 || busy }
  /// The signal (or 256 + exit status) of the last worker that died on its own; 0: none.
  public var lastCrash: Int32 = 0
  /// The configured deadline (milliseconds).
  public var deadlineMilliseconds = 0
  /// Where a pattern that stops the decoder is masked (docs/decoder.md, "A pattern in view").
  public var masked: MaskedRegion? = nil
  public init() {}
}

/// The bounding box of the masked tiles, in the camera's pixels, and how many tiles.
public struct MaskedRegion: Equatable, Sendable {
  public var x: Int
  public var y: Int
  public var width: Int
  public var height: Int
  public var tiles: Int
  public init(x: Int, y: Int, width: Int, height: Int, tiles: Int) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
    self.tiles = tiles
  }
}

/// The decoder workers' supervisor: which worker takes the next frame, when a decode has run
/// too long, when to start a replacement. Pure: it is told what happened (a worker started, came
/// back, died) and answers with what to do (send, skip, kill, spawn); the owner does the I/O.
///
/// Two slots: the active worker and a spare, both started at startup. A frame goes to a ready
/// worker; frames that come while it decodes are skipped. A decode past the deadline is
/// abandoned: the worker is killed and the other, ready, takes the next frame, and the slot is
/// started anew. A worker that dies by itself is handled the same way. The first abandonment or
/// crash puts the decoder in a fault (recorded once); it clears once decodes have come back
/// for `recoverAfterMilliseconds` without another. While faulted, frames are sent at a backoff
/// that doubles with each abandonment (up to `faultBackoffMillisecondsMax`): a hostile picture
/// left in view costs a worker a second, not one a frame.
public struct DecoderSupervisor: Sendable {
  public struct Settings: Equatable, Sendable {
    /// A decode that has used this much CPU time is abandoned (`decoder.deadline_ms`); when its
    /// CPU time cannot be read, this much wall time.
    public var deadlineMilliseconds = 100
    /// A decode is abandoned after this many deadlines of wall time whatever its CPU time (a
    /// worker that blocks, or is starved for that long), and never before 2 s.
    public var wallCapDeadlines = 10
    /// Restarting a slot whose worker failed to start waits this long at most (doubling).
    public var startBackoffMillisecondsMax = 5_000
    /// While faulted, the longest wait between frames sent.
    public var faultBackoffMillisecondsMax = 1_000
    /// A fault clears after this long with decodes coming back and none abandoned.
    public var recoverAfterMilliseconds = 5_000
    /// A worker that is not ready this long after its start is killed (a failed start).
    public var startTimeoutMilliseconds = 10_000
    /// The deadline of a decode in every view (a snapshot's frame, asked by an operator: every
    /// attempt of the strategy, not one frame's budget).
    public var allViewsDeadlineMilliseconds = 2_000
    public init() {}
  }

  /// One worker slot's state.
  public enum SlotState: Equatable, Sendable {
    /// No worker: start one at `at` (or later).
    case empty(startAt: Instant)
    /// Spawned at `since`, not ready yet.
    case starting(since: Instant)
    case ready
    /// Decoding request `sequence`, sent at `since`, with a `deadline` in ms of the worker's CPU
    /// time; looked at again at `check`.
    case busy(since: Instant, sequence: UInt32, deadline: Int, check: Instant)
    /// Killed (deadline or start timeout), waiting for the death to be seen.
    case killed
  }

  /// What the owner must do next.
  public enum Action: Equatable, Sendable {
    case spawn(slot: Int)
    case kill(slot: Int)
  }

  /// Why a frame was not sent.
  public enum Submit: Equatable, Sendable {
    case send(slot: Int, sequence: UInt32)
    case skip
  }

  /// What a death means for the journal: `record` is true for the first of a fault (the one
  /// event a fault gets), false while the fault goes on.
  public struct Death: Equatable, Sendable {
    /// A decode was running (its frame is lost).
    public var duringDecode: Bool
    /// Killed by the supervisor (deadline or start timeout) rather than dead by itself.
    public var killed: Bool
    public var record: Bool
    public init(duringDecode: Bool, killed: Bool, record: Bool) {
      self.duringDecode = duringDecode
      self.killed = killed
      self.record = record
    }
  }

  public let settings: Settings
  public private(set) var slots = InlineArray<2, SlotState>(repeating: .empty(startAt: Instant(nanoseconds: 0)))
  /// Consecutive failed starts of each slot (for its backoff).
  private var startFailures = InlineArray<2, Int>(repeating: 0)
  /// Whether each slot was started once already (later starts count as restarts).
  private var startedOnce = InlineArray<2, Bool>(repeating: false)
  /// Why each killed slot was killed: a decode past its deadline (true) or a start timeout.
  private var killedDuringDecode = InlineArray<2, Bool>(repeating: false)
  public private(set) var stats = DecoderIsolationStats()
  private var sequence: UInt32 = 0
  /// While faulted: no frame is sent before `holdUntil`; each abandonment doubles `backoff`.
  private var holdUntil = Instant(nanoseconds: 0)
  private var backoffMilliseconds = 0
  private var lastFault = Instant(nanoseconds: 0)

  public init(settings: Settings, now: Instant) {
    precondition(settings.deadlineMilliseconds > 0, "a decode needs a deadline")
    precondition(settings.faultBackoffMillisecondsMax >= 0 && settings.recoverAfterMilliseconds >= 0)
    self.settings = settings
    slots = InlineArray(repeating: .empty(startAt: now))
  }

  // MARK: - Frames

  /// A frame is here: which worker takes it, or skip (counted). `allViews`: it is to be decoded
  /// in every view (its deadline is `allViewsDeadlineMilliseconds`).
  /// `searching`: a pattern in view is being searched for or is masked (`PatternQuarantine`):
  /// frames are not held back, since each shows only tiles not known to stop the decoder.
  public mutating func submit(at now: Instant, allViews: Bool = false, searching: Bool = false) -> Submit {
    let slot = readySlot()
    guard let slot, !(stats.faulted && now < holdUntil && !searching), !isBusy else {
      stats.skipped &+= 1
      return .skip
    }
    sequence &+= 1
    if sequence == 0 { sequence = 1 }  // 0 is "no request yet" in the shared slot
    let deadline = allViews ? max(settings.allViewsDeadlineMilliseconds, settings.deadlineMilliseconds) : settings.deadlineMilliseconds
    slots[slot] = .busy(since: now, sequence: sequence, deadline: deadline, check: now.adding(milliseconds: deadline))
    return .send(slot: slot, sequence: sequence)
  }

  /// A frame that could not be offered at all (the previous reply not yet taken, or larger than
  /// the shared frame): skipped.
  public mutating func countSkipped() { stats.skipped &+= 1 }

  /// Whether a decode is running now.
  public var isBusy: Bool {
    for i in 0..<2 { if case .busy = slots[i] { return true } }
    return false
  }

  /// The decode sent to `slot` as `sequence` came back. Returns its time (submit to reply), or
  /// nil when it is not the one outstanding there (a stale reply: ignored).
  public mutating func completed(slot: Int, sequence done: UInt32, at now: Instant) -> UInt64? {
    guard case .busy(let since, let outstanding, _, _) = slots[slot], outstanding == done else { return nil }
    slots[slot] = .ready
    let took = now.microseconds(since: since)
    stats.completed &+= 1
    stats.longestMicroseconds = max(stats.longestMicroseconds, took)
    if stats.faulted && now.milliseconds(since: lastFault) >= settings.recoverAfterMilliseconds { clearFault() }
    return took
  }

  /// Whether the fault cleared at the last `completed` (the owner records it once).
  public private(set) var recovered = false

  /// Reads and resets `recovered`.
  public mutating func takeRecovered() -> Bool {
    defer { recovered = false }
    return recovered
  }

  private mutating func clearFault() {
    stats.faulted = false
    backoffMilliseconds = 0
    recovered = true
  }

  // MARK: - Workers

  /// The owner spawned a worker into `slot`.
  public mutating func spawned(slot: Int, at now: Instant) {
    if startedOnce[slot] { stats.restarts &+= 1 }
    startedOnce[slot] = true
    slots[slot] = .starting(since: now)
  }

  /// The spawn itself failed: try again after the slot's backoff.
  public mutating func spawnFailed(slot: Int, at now: Instant) {
    stats.startFailures &+= 1
    slots[slot] = .empty(startAt: now.adding(milliseconds: startBackoff(slot)))
    startFailures[slot] += 1
  }

  /// The worker in `slot` finished its setup and waits for frames.
  public mutating func workerReady(slot: Int) {
    guard case .starting = slots[slot] else { return }
    slots[slot] = .ready
    startFailures[slot] = 0
  }

  /// The worker in `slot` is gone (its pipe closed). `how` is the signal number or 256 + exit
  /// status when known (0 otherwise). Its frame, if any, is abandoned; the slot restarts.
  public mutating func workerDied(slot: Int, how: Int32, at now: Instant) -> Death {
    var death = Death(duringDecode: false, killed: false, record: false)
    var startAt = now
    switch slots[slot] {
    case .busy:
      death.duringDecode = true
      stats.crashed &+= 1
      stats.lastCrash = how
    case .killed:
      death.killed = true
      death.duringDecode = killedDuringDecode[slot]
      if !death.duringDecode {
        stats.startFailures &+= 1
        startAt = now.adding(milliseconds: startBackoff(slot))
        startFailures[slot] += 1
      }
    case .starting:
      // Died during its setup: a failed start, retried after a backoff (never a tight loop).
      stats.startFailures &+= 1
      stats.lastCrash = how
      startAt = now.adding(milliseconds: startBackoff(slot))
      startFailures[slot] += 1
    case .ready:
      stats.crashed &+= 1
      stats.lastCrash = how
    case .empty:
      return death
    }
    slots[slot] = .empty(startAt: startAt)
    if death.duringDecode || (!death.killed && how != 0) { death.record = enterFault(at: now) }
    return death
  }

  private func startBackoff(_ slot: Int) -> Int {
    min(settings.startBackoffMillisecondsMax, 100 << min(startFailures[slot], 16))
  }

  /// A frame abandoned or a worker crashed: the fault starts (true: record it) or goes on.
  private mutating func enterFault(at now: Instant) -> Bool {
    lastFault = now
    let first = !stats.faulted
    stats.faulted = true
    recovered = false
    backoffMilliseconds = min(
      settings.faultBackoffMillisecondsMax, backoffMilliseconds == 0 ? settings.deadlineMilliseconds : backoffMilliseconds * 2)
    holdUntil = now.adding(milliseconds: backoffMilliseconds)
    return first
  }

  // MARK: - Time

  /// What to do now (call until nil): kill a decode past its deadline or a start that hangs,
  /// spawn into an empty slot whose time has come. `cpu(slot)`: the CPU time the slot's worker
  /// has spent on its decode and whether it is waiting for a CPU now (nil: unknown). A decode
  /// past its deadline in wall time that has used less CPU than that and is waiting for a CPU
  /// was starved by a loaded machine, not held up by its frame: it gets the rest of its deadline
  /// in CPU time, up to the wall cap. One that is asleep or blocked (not decoding) is abandoned
  /// at the deadline, as is one whose CPU time cannot be read.
  public mutating func nextAction(at now: Instant, cpu: (Int) -> (milliseconds: Int, runnable: Bool)? = { _ in nil }) -> Action? {
    for slot in 0..<2 {
      switch slots[slot] {
      case .busy(let since, let sequence, let deadline, let check) where now >= check:
        let wall = now.milliseconds(since: since)
        let cap = max(2_000, deadline * settings.wallCapDeadlines)
        if wall < cap, let used = cpu(slot), used.runnable, used.milliseconds < deadline {
          let again = min(now.adding(milliseconds: max(1, deadline - used.milliseconds)), since.adding(milliseconds: cap))
          slots[slot] = .busy(since: since, sequence: sequence, deadline: deadline, check: again)
          stats.starved &+= 1
          continue
        }
        stats.abandoned &+= 1
        killedDuringDecode[slot] = true
        slots[slot] = .killed
        return .kill(slot: slot)
      case .starting(let since) where now.milliseconds(since: since) >= settings.startTimeoutMilliseconds:
        killedDuringDecode[slot] = false
        slots[slot] = .killed
        return .kill(slot: slot)
      case .empty(let at) where now >= at:
        return .spawn(slot: slot)
      default: continue
      }
    }
    return nil
  }

  /// When `nextAction` next has something to do, or a held-back frame could be sent (nil: only
  /// on I/O).
  public func nextDeadline() -> Instant? {
    var next: Instant? = nil
    for slot in 0..<2 {
      let due: Instant
      switch slots[slot] {
      case .busy(_, _, _, let check): due = check
      case .starting(let since): due = since.adding(milliseconds: settings.startTimeoutMilliseconds)
      case .empty(let at): due = at
      default: continue
      }
      if next == nil || due < next! { next = due }
    }
    return next
  }

  /// The slot a frame goes to: the first ready one.
  private func readySlot() -> Int? {
    for i in 0..<2 where slots[i] == .ready { return i }
    return nil
  }

  /// Counters, with the number of ready workers.
  public var snapshot: DecoderIsolationStats {
    var s = stats
    s.deadlineMilliseconds = settings.deadlineMilliseconds
    s.ready = 0
    for i in 0..<2 where slots[i] == .ready { s.ready += 1 }
    s.busy = isBusy
    return s
  }
}
