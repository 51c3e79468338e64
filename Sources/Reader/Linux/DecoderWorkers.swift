import CLinux
import CSandbox
import Glibc
import ScanCore
import ScanLoop
import ScanPlatform

/// The service's side of the decoder worker processes: two slots (the active worker and a
/// spare), each with a shared memory file mapped at startup and a channel (a socket pair) the
/// loop polls. A frame is copied into the active worker's memory and a byte sent; the loop goes
/// on; the reply byte comes back through poll and the loop runs the engine's decision half
/// (`RunLoop`). The policy (deadline, spare, skipping, restarts, the fault) is
/// `DecoderSupervisor`'s; this class does its I/O.
///
/// Workers are `scangate decode-worker` started through `posix_spawn` of /proc/self/exe (the
/// same binary, even after an upgrade replaced the file): a fresh image holds none of the
/// service's memory (no key, secret, allow-list or configuration), gets its own address layout,
/// and only its two descriptors. Nothing here allocates per frame; a spawn allocates nothing
/// either (the argument strings are built once).
public final class DecoderWorkers: PollParticipant {
  public let settings: DecoderWorkerSettings
  public let channel: DecoderChannel
  private var supervisor: DecoderSupervisor
  private let clock = SystemMonotonicClock()
  private var memory = InlineArray<2, Int32>(repeating: -1)
  private var bases = InlineArray<2, UnsafeMutableRawPointer?>(repeating: nil)
  private var channels = InlineArray<2, Int32>(repeating: -1)
  private var pids = InlineArray<2, pid_t>(repeating: 0)
  /// Whether the slot's worker was seen gone (channel closed) and waits to be reaped.
  private var gone = InlineArray<2, Bool>(repeating: false)
  private var tokens = InlineArray<2, PollSet.Token>(repeating: .none)
  private let argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
  private let envp: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
  private let argumentCount = 6
  private let executable: UnsafeMutablePointer<CChar>?

  /// The decode in flight: its slot, request and frame.
  private var outstanding: (slot: Int, sequence: UInt32, geometry: FrameGeometry, captured: Instant, frameSequence: UInt64)?
  private var outstandingAllViews = false
  private var outstandingSince = Instant(nanoseconds: 0)
  /// The worker's CPU time when the decode in flight was sent (ns; -1: unknown).
  private var outstandingCPU: Int64 = -1
  /// A reply that came back, for the loop to take.
  private var reply: (slot: Int, geometry: FrameGeometry, captured: Instant, frameSequence: UInt64, decoded: Instant)?
  /// Events for the loop to record (fault codes), in order.
  private var events = InlineArray<8, UInt16>(repeating: 0)
  private var eventCount = 0
  /// The engine counters the last reply carried (STATUS shows the worker's arena).
  public private(set) var engineStats: DecoderStats? = nil
  /// The parts of the view that stop the decoder, found and masked (docs/decoder.md, "A pattern
  /// in view"), and the last frame's size (to name where they are).
  /// One per camera (a turnstile's entry and exit cameras see different walls): the frame in
  /// flight's is `quarantine`.
  public internal(set) var quarantines: InlineArray<2, PatternQuarantine>
  var quarantineCamera = 0
  var quarantine: PatternQuarantine {
    get { quarantines[quarantineCamera] }
    set { quarantines[quarantineCamera] = newValue }
  }
  var viewSize = (width: 0, height: 0)
  /// Whether a pattern episode is on (its fault recorded), and since when nothing was masked or
  /// searched (`DecoderWorkers+Patterns.swift`).
  var patternEpisode = false
  var patternQuietSince: Instant? = nil

  /// Maps both slots' memory and starts both workers. Throws when the memory cannot be had or
  /// the first spawn fails (the reader then does not start: a reader that cannot decode is no
  /// reader).
  /// - Parameter executable: the scangate binary to start as `decode-worker` (the running one by
  ///   default; tests name the built binary).
  public init(
    settings: DecoderWorkerSettings, supervision: DecoderSupervisor.Settings, executable: String = "/proc/self/exe"
  ) throws(SystemError) {
    self.settings = settings
    channel = DecoderChannel(settings)
    supervisor = DecoderSupervisor(settings: supervision, now: SystemMonotonicClock().now())
    var patterns = PatternQuarantine.Settings()
    patterns.recheckCostMax = max(1, supervision.deadlineMilliseconds / 4)
    quarantines = InlineArray(repeating: PatternQuarantine(settings: patterns))
    let arguments = [
      "scangate", "decode-worker", "--parent", String(getpid()), "--bytes", String(DecoderChannel(settings).totalBytes),
    ]
    argv = .allocate(capacity: arguments.count + 1)
    for (i, a) in arguments.enumerated() { argv[i] = strdup(a) }
    argv[arguments.count] = nil
    envp = .allocate(capacity: 1)
    envp[0] = nil
    self.executable = strdup(executable)
    for slot in 0..<2 {
      let fd = sg_sb_memfd("scangate-decoder", channel.totalBytes)
      guard fd >= 0 else { throw SystemError(Errno.current, operation: "create the decoder's shared memory") }
      memory[slot] = fd
      guard let base = sg_sb_map_shared(fd, channel.totalBytes) else {
        throw SystemError(Errno.current, operation: "map the decoder's shared memory (\(channel.totalBytes) bytes)")
      }
      bases[slot] = base
    }
    let now = clock.now()
    while let action = supervisor.nextAction(at: now) {
      guard case .spawn(let slot) = action else { break }
      if let error = spawn(slot, now: now) { throw error }
    }
  }

  deinit {
    for slot in 0..<2 {
      if pids[slot] > 0 {
        _ = sg_sb_kill(pids[slot])
        var how: Int32 = 0
        for _ in 0..<100 where sg_sb_reap(pids[slot], &how) == 0 { usleep(1_000) }
      }
      if channels[slot] >= 0 { closeDescriptor(channels[slot]) }
      if let base = bases[slot] { sg_sb_unmap(base, channel.totalBytes) }
      if memory[slot] >= 0 { closeDescriptor(memory[slot]) }
    }
    for i in 0..<argumentCount { free(argv[i]) }
    argv.deallocate()
    envp.deallocate()
    free(executable)
  }

  // MARK: - Workers

  /// Starts a worker in `slot`: a clean header in its memory, a new channel, posix_spawn.
  /// Returns the error when the spawn failed (the supervisor retries after a backoff).
  @discardableResult
  private func spawn(_ slot: Int, now: Instant) -> SystemError? {
    guard let base = bases[slot] else { return SystemError(.noMemory, operation: "spawn the decoder") }
    // The slot's previous worker is reaped: nobody writes this memory now.
    base.initializeMemory(as: UInt8.self, repeating: 0, count: channel.frameOffset)
    channel.writeSettings(settings, into: base)
    var pair: (Int32, Int32) = (-1, -1)
    let made = withUnsafeMutableBytes(of: &pair) { sg_sb_channel($0.baseAddress!.assumingMemoryBound(to: Int32.self)) }
    guard made == 0 else {
      let error = SystemError(Errno.current, operation: "create the decoder's channel")
      supervisor.spawnFailed(slot: slot, at: now)
      return error
    }
    var pid: pid_t = 0
    let rc = sg_sb_spawn(executable, argv, envp, memory[slot], pair.1, &pid)
    closeDescriptor(pair.1)
    guard rc == 0 else {
      closeDescriptor(pair.0)
      supervisor.spawnFailed(slot: slot, at: now)
      return SystemError(Errno(rc), operation: "start the decoder worker")
    }
    channels[slot] = pair.0
    pids[slot] = pid
    gone[slot] = false
    supervisor.spawned(slot: slot, at: now)
    return nil
  }

  /// Waits (at startup, before the loop runs) until a worker is ready, for up to `milliseconds`.
  /// Returns whether one is.
  public func waitUntilReady(milliseconds: Int) -> Bool {
    pump(milliseconds: milliseconds) { $0.stats.ready > 0 }
  }

  /// Services the workers without a loop (startup, tests) until `done` or `milliseconds` pass.
  /// Returns whether `done` held.
  public func pump(milliseconds: Int, until done: (DecoderWorkers) -> Bool) -> Bool {
    let poll = PollSet(capacity: 2)
    let requests = LoopRequests()  // the workers ask nothing of a loop
    let end = clock.now().adding(milliseconds: milliseconds)
    while !done(self) {
      let now = clock.now()
      guard now < end else { return false }
      poll.reset()
      let next = prepare(poll, now: now).map { $0 < end ? $0 : end } ?? end
      _ = poll.wait(milliseconds: min(50, millisecondsUntil(next, from: now)))
      service(poll, now: clock.now(), requests: requests)
    }
    return true
  }

  // MARK: - Frames

  /// Sends `frame` to a ready worker (copied into its memory), or counts it skipped. `allViews`:
  /// decode it in every view (a snapshot waits for it). Returns whether it was sent.
  @discardableResult
  public func submit(_ frame: LumaFrame, allViews: Bool, now: Instant, camera: Int = 0) -> Bool {
    guard reply == nil, frame.geometry.width <= channel.maxWidth, frame.geometry.height <= channel.maxHeight else {
      supervisor.countSkipped()
      return false
    }
    // While a pattern is searched for or masked, frames are not held back: each one shows only
    // tiles that are not known to stop the decoder.
    let cameraIndex = min(max(camera, 0), 1)
    guard
      case .send(let slot, let sequence) = supervisor.submit(at: now, allViews: allViews, searching: quarantines[cameraIndex].isActive),
      let base = bases[slot]
    else {
      return false
    }
    _ = channel.writeRequest(frame, mode: allViews ? .retry : nil, turn: UInt64(sequence), into: base)
    let (width, height) = (frame.geometry.width, frame.geometry.height)
    viewSize = (width, height)
    let gray = UnsafeMutableRawBufferPointer(start: base + channel.frameOffset, count: width * height)
    quarantineCamera = cameraIndex  // the decode in flight's camera: its reply or abandonment is that camera's
    let visible = quarantine.plan(at: now, gray: UnsafeRawBufferPointer(gray), width: width, height: height)
    PatternQuarantine.blank(gray, width: width, height: height, keeping: visible)
    sg_sb_store_release(word(base, DecoderChannel.offsetRequestSequence), sequence)
    outstanding = (slot, sequence, .gray(width: frame.geometry.width, height: frame.geometry.height), frame.captured, frame.sequence)
    outstandingAllViews = allViews
    outstandingSince = now
    outstandingCPU = sg_sb_cpu_ns(pids[slot])
    if sg_sb_channel_send(channels[slot]) != 1 {
      // The worker is gone (its channel will read closed) or wedged: the deadline handles it.
    }
    return true
  }

  /// A frame the loop did not offer (another camera's turn): counted as skipped.
  public func skip() { supervisor.countSkipped() }

  /// Whether a decode is in flight.
  public var isBusy: Bool { outstanding != nil }

  /// Whether a reply waits for the loop.
  public var hasReply: Bool { reply != nil }

  /// Copies the reply into `results` (checked: the worker is untrusted) and returns the frame
  /// it was for (a view of the memory the frame was sent in, valid until the next `submit`),
  /// what the strategy did, when the decode was sent and when it came back.
  public func takeReply(
    into results: inout DecodeResults
  ) -> (
    frame: LumaFrame, report: StrategyFrame, sent: Instant, decoded: Instant, allViews: Bool
  )? {
    guard let r = reply, let base = bases[r.slot] else { return nil }
    reply = nil
    let (report, engine) = channel.readReply(from: UnsafeRawPointer(base), into: &results)
    engineStats = engine
    let frame = channel.sentFrame(in: UnsafeRawPointer(base), geometry: r.geometry, captured: r.captured, sequence: r.frameSequence)
    return (frame, report, outstandingSince, r.decoded, outstandingAllViews)
  }

  /// The next event to record (a `FaultCode` raw value), oldest first.
  public func takeEvent() -> UInt16? {
    guard eventCount > 0 else { return nil }
    let e = events[0]
    for i in 1..<eventCount { events[i - 1] = events[i] }
    eventCount -= 1
    return e
  }

  func post(_ code: FaultCode) {
    guard eventCount < 8 else { return }
    events[eventCount] = code.rawValue
    eventCount += 1
  }

  public var stats: DecoderIsolationStats {
    var s = supervisor.snapshot
    s.masked = maskedRegion
    return s
  }

  /// How long a worker may take to start (`decoder.start_timeout_ms`).
  public var startTimeoutMilliseconds: Int { supervisor.settings.startTimeoutMilliseconds }

  // MARK: - PollParticipant

  public var pollCapacity: Int { 2 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    for slot in 0..<2 {
      tokens[slot] = channels[slot] >= 0 && !gone[slot] ? poll.add(channels[slot], events: Int16(POLLIN)) : .none
    }
    var next = supervisor.nextDeadline()
    if let since = patternQuietSince {
      let due = since.adding(milliseconds: Self.patternClearedAfterMilliseconds)
      if next == nil || due < next! { next = due }
    }
    // A worker seen gone but not yet reaped: look again shortly.
    if gone[0] || gone[1] {
      let soon = now.adding(milliseconds: 2)
      if next == nil || soon < next! { next = soon }
    }
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    for slot in 0..<2 where poll.revents(tokens[slot]) != 0 { readChannel(slot, now: now) }
    // A reply written after the poll returned is taken before any deadline is judged: a decode
    // that finished is never abandoned because its worker is already asleep again (on a loaded
    // machine the check and the reply can fall in the same instant).
    if let o = outstanding, let base = bases[o.slot], sg_sb_load_acquire(word(base, DecoderChannel.offsetDoneSequence)) == o.sequence {
      readChannel(o.slot, now: now)
    }
    for slot in 0..<2 where gone[slot] { reap(slot, now: now) }
    for _ in 0..<4 {
      guard let action = supervisor.nextAction(at: now, cpu: decodeCPU) else { break }
      switch action {
      case .kill(let slot):
        if pids[slot] > 0 { _ = sg_sb_kill(pids[slot]) }
        if outstanding?.slot == slot {
          outstanding = nil
          abandonedInView(now: now)
        }
        gone[slot] = true
      case .spawn(let slot):
        spawn(slot, now: now)
      }
    }
    if supervisor.takeRecovered() { post(.decoderRecovered) }
    checkPatternCleared(now: now)
  }

  /// The CPU time (ms) the worker in `slot` has spent on the decode in flight and whether it
  /// waits for a CPU now, when every reading could be had.
  private func decodeCPU(_ slot: Int) -> (milliseconds: Int, runnable: Bool)? {
    guard let o = outstanding, o.slot == slot, outstandingCPU >= 0, pids[slot] > 0 else { return nil }
    let now = sg_sb_cpu_ns(pids[slot])
    let runnable = sg_sb_runnable(pids[slot])
    guard now >= outstandingCPU, runnable >= 0 else { return nil }
    return (Int((now - outstandingCPU) / 1_000_000), runnable == 1)
  }

  /// Drains the channel: a ready worker, a reply, or the worker gone.
  private func readChannel(_ slot: Int, now: Instant) {
    let fd = channels[slot]
    var closed = false
    withUnsafeTemporaryAllocation(byteCount: 16, alignment: 1) { buffer in
      for _ in 0..<4 {
        let r = (try? syscallRetrying("read decoder channel", { Glibc.read(fd, buffer.baseAddress, buffer.count) })) ?? .done(0)
        guard case .done(let n) = r else { return }  // drained
        if n <= 0 {
          closed = true
          return
        }
      }
    }
    guard let base = bases[slot] else { return }
    if sg_sb_load_acquire(word(base, DecoderChannel.offsetReady)) == 1 { supervisor.workerReady(slot: slot) }
    if let o = outstanding, o.slot == slot, sg_sb_load_acquire(word(base, DecoderChannel.offsetDoneSequence)) == o.sequence {
      let cost = decodeCPU(slot)?.milliseconds ?? 0
      if supervisor.completed(slot: slot, sequence: o.sequence, at: now) != nil {
        reply = (slot, o.geometry, o.captured, o.frameSequence, now)
        // A snapshot's every-view decode (2 s allowed) says nothing of a pattern's cost.
        quarantine.completed(cost: outstandingAllViews ? 0 : cost, found: DecoderChannel.replyCount(UnsafeRawPointer(base)) > 0)
        noteMask(now: now)
      }
      outstanding = nil
    }
    if closed { gone[slot] = true }
  }

  /// A worker seen gone: reap it (its status says how it ended), tell the supervisor, free the
  /// slot for a new worker.
  private func reap(_ slot: Int, now: Instant) {
    var how: Int32 = 0
    let r = pids[slot] > 0 ? sg_sb_reap(pids[slot], &how) : 1
    guard r != 0 else { return }  // still exiting: look again on the next turn
    if r < 0 { how = 0 }
    if outstanding?.slot == slot {
      outstanding = nil
      abandonedInView(now: now)  // a worker that died on a frame: that frame's tiles are searched too
    }
    let death = supervisor.workerDied(slot: slot, how: how, at: now)
    if death.record { post(death.killed ? .decoderDeadline : .decoderCrashed) }
    closeDescriptor(channels[slot])
    channels[slot] = -1
    pids[slot] = 0
    gone[slot] = false
  }

  /// Stops both workers (the service is stopping): kill, reap.
  public func stop() {
    for slot in 0..<2 where pids[slot] > 0 {
      _ = sg_sb_kill(pids[slot])
      var how: Int32 = 0
      for _ in 0..<200 where sg_sb_reap(pids[slot], &how) == 0 { usleep(500) }
      pids[slot] = 0
    }
  }

  /// A worker's process id (tests), 0 when the slot is empty.
  public func pid(slot: Int) -> pid_t { pids[slot] }

  private func word(_ base: UnsafeMutableRawPointer, _ offset: Int) -> UnsafeMutablePointer<UInt32> {
    (base + offset).assumingMemoryBound(to: UInt32.self)
  }

  /// How the last worker that died on its own ended ("SIGABRT", "exit 1"), or nil.
  public var lastCrashName: String? {
    let how = supervisor.stats.lastCrash
    guard how != 0 else { return nil }
    return how >= 256 ? "exit \(how - 256)" : String(cString: sg_sb_signal_name(how))
  }
}
