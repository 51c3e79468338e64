import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

/// The decoder workers' supervisor on a manual clock: deadline, spare takeover, skipping,
/// restarts, the fault recorded once and its backoff, start failures.
@Suite struct DecoderSupervisorTests {
  let clock = ManualClock()

  /// A supervisor with both workers started and ready.
  func ready(deadline: Int = 100) -> DecoderSupervisor {
    var s = DecoderSupervisor.Settings()
    s.deadlineMilliseconds = deadline
    var sup = DecoderSupervisor(settings: s, now: clock.now())
    #expect(sup.nextAction(at: clock.now()) == .spawn(slot: 0))
    sup.spawned(slot: 0, at: clock.now())
    #expect(sup.nextAction(at: clock.now()) == .spawn(slot: 1))
    sup.spawned(slot: 1, at: clock.now())
    #expect(sup.nextAction(at: clock.now()) == nil)
    sup.workerReady(slot: 0)
    sup.workerReady(slot: 1)
    #expect(sup.snapshot.ready == 2)
    return sup
  }

  @Test("a frame goes to a ready worker; frames while it decodes are skipped, not queued")
  func skipsWhileBusy() {
    var sup = ready()
    guard case .send(let slot, let sequence) = sup.submit(at: clock.now()) else {
      Issue.record("not sent")
      return
    }
    for _ in 0..<5 {
      clock.advance(milliseconds: 10)
      #expect(sup.submit(at: clock.now()) == .skip)
    }
    #expect(sup.stats.skipped == 5)
    #expect(sup.completed(slot: slot, sequence: sequence, at: clock.now()) == 50_000)
    #expect(sup.stats.longestMicroseconds == 50_000)
    // Nothing was queued: the next frame is sent at once, with a new sequence.
    guard case .send(_, let next) = sup.submit(at: clock.now()) else {
      Issue.record("not sent after the reply")
      return
    }
    #expect(next != sequence)
  }

  @Test("a decode past the deadline is abandoned: kill, the spare takes the next frame, the slot restarts")
  func deadlineSpareTakesOver() {
    var sup = ready(deadline: 100)
    guard case .send(let slot, let sequence) = sup.submit(at: clock.now()) else {
      Issue.record("not sent")
      return
    }
    clock.advance(milliseconds: 99)
    #expect(sup.nextAction(at: clock.now()) == nil, "not before the deadline")
    #expect(sup.nextDeadline() == clock.now().adding(milliseconds: 1))
    clock.advance(milliseconds: 1)
    #expect(sup.nextAction(at: clock.now()) == .kill(slot: slot))
    #expect(sup.stats.abandoned == 1)
    // The spare takes the next frame before the killed worker is even reaped.
    guard case .send(let spare, _) = sup.submit(at: clock.now()) else {
      Issue.record("the spare did not take the frame")
      return
    }
    #expect(spare != slot)
    // A reply of the killed decode, should one arrive late, is stale.
    #expect(sup.completed(slot: slot, sequence: sequence, at: clock.now()) == nil)
    let death = sup.workerDied(slot: slot, how: 9, at: clock.now())
    #expect(death == DecoderSupervisor.Death(duringDecode: true, killed: true, record: true))
    #expect(sup.nextAction(at: clock.now()) == .spawn(slot: slot))
    sup.spawned(slot: slot, at: clock.now())
    #expect(sup.stats.restarts == 1)
    #expect(sup.stats.crashed == 0, "a kill for the deadline is not a crash")
  }

  @Test(
    "a decode past its deadline in wall time but not in CPU time, waiting for a CPU (a loaded machine), gets the rest in CPU time up to the wall cap; one asleep or blocked does not"
  )
  func starvedDecodeIsNotAbandoned() {
    var sup = ready(deadline: 100)
    guard case .send(let slot, _) = sup.submit(at: clock.now()) else {
      Issue.record("not sent")
      return
    }
    var cpu = 30  // the worker had a third of a core
    clock.advance(milliseconds: 100)
    #expect(sup.nextAction(at: clock.now(), cpu: { $0 == slot ? (cpu, true) : nil }) == nil, "starved, not hostile")
    #expect(sup.stats.starved == 1 && sup.stats.abandoned == 0)
    // Looked at again once it could have used the 70 ms of CPU it has left.
    #expect(sup.nextDeadline() == clock.now().adding(milliseconds: 70))
    clock.advance(milliseconds: 70)
    cpu = 100  // it did: its frame is what holds it up
    #expect(sup.nextAction(at: clock.now(), cpu: { _ in (cpu, true) }) == .kill(slot: slot))
    #expect(sup.stats.abandoned == 1)

    // A worker that never gets the CPU (or blocks) is abandoned at the wall cap: 10 deadlines,
    // at least 2 s.
    var other = ready(deadline: 100)
    guard case .send(let s2, _) = other.submit(at: clock.now()) else {
      Issue.record("not sent")
      return
    }
    let sent = clock.now()
    var actions = 0
    while clock.now().milliseconds(since: sent) < 3_000 {
      clock.advance(milliseconds: 10)
      if let a = other.nextAction(at: clock.now(), cpu: { _ in (0, true) }) {
        #expect(a == .kill(slot: s2))
        actions += 1
        break
      }
    }
    #expect(actions == 1 && clock.now().milliseconds(since: sent) == 2_000, "killed at the 2 s cap")
    // Without a CPU reading, the deadline is wall time (as before).
    var plain = ready(deadline: 100)
    _ = plain.submit(at: clock.now())
    clock.advance(milliseconds: 100)
    #expect(plain.nextAction(at: clock.now(), cpu: { _ in nil }) != nil)
    // Asleep or blocked (page-in, a lock, a lost request byte) with little CPU used: not starved,
    // not decoding: abandoned at the deadline.
    var blocked = ready(deadline: 100)
    _ = blocked.submit(at: clock.now())
    clock.advance(milliseconds: 100)
    #expect(blocked.nextAction(at: clock.now(), cpu: { _ in (5, false) }) != nil)
    #expect(blocked.stats.starved == 0 && blocked.stats.abandoned == 1)
  }

  @Test("a crash during a decode is the same event: counted, the fault recorded once, the spare goes on")
  func crashRecordedOnce() {
    var sup = ready()
    var recorded = 0
    for round in 0..<4 {
      // Past the fault's hold, so the frame is sent.
      clock.advance(milliseconds: 2_000)
      guard case .send(let slot, _) = sup.submit(at: clock.now()) else {
        Issue.record("round \(round): not sent")
        return
      }
      let death = sup.workerDied(slot: slot, how: 6, at: clock.now())
      #expect(death.duringDecode && !death.killed)
      if death.record { recorded += 1 }
      #expect(sup.nextAction(at: clock.now()) == .spawn(slot: slot))
      sup.spawned(slot: slot, at: clock.now())
      sup.workerReady(slot: slot)
    }
    #expect(recorded == 1, "one event per fault, not one per frame")
    #expect(sup.stats.crashed == 4)
    #expect(sup.stats.lastCrash == 6)
    #expect(sup.stats.faulted)
  }

  @Test("while faulted, frames are held back at a doubling backoff up to its maximum, then it recovers")
  func faultBackoffAndRecovery() {
    var sup = ready(deadline: 100)
    var sentAt: [UInt64] = []
    let start = clock.now()
    // A hostile picture for 10 s at 20 fps: every decode runs into the deadline.
    for _ in 0..<200 {
      if case .send = sup.submit(at: clock.now()) { sentAt.append(clock.now().nanoseconds) }
      clock.advance(milliseconds: 50)
      while let action = sup.nextAction(at: clock.now()) {
        switch action {
        case .kill(let slot): _ = sup.workerDied(slot: slot, how: 9, at: clock.now())
        case .spawn(let slot):
          sup.spawned(slot: slot, at: clock.now())
          sup.workerReady(slot: slot)
        }
      }
    }
    #expect(sup.stats.faulted)
    // 100, 200, 400, 800, then 1000 ms between sends: about 12 in 10 s, not 100.
    #expect(sentAt.count >= 8 && sentAt.count <= 16, "\(sentAt.count) decodes sent")
    #expect(sup.stats.restarts + 1 >= UInt64(sentAt.count) && sup.stats.restarts <= UInt64(sentAt.count))
    #expect(clock.now().milliseconds(since: start) == 10_000)
    // The picture goes away: decodes come back; the fault clears 5 s after the last abandonment.
    var recoveredAt: Instant? = nil
    for _ in 0..<200 where recoveredAt == nil {
      if case .send(let slot, let sequence) = sup.submit(at: clock.now()) {
        clock.advance(milliseconds: 5)
        _ = sup.completed(slot: slot, sequence: sequence, at: clock.now())
        if sup.takeRecovered() { recoveredAt = clock.now() }
      }
      clock.advance(milliseconds: 45)
    }
    #expect(recoveredAt != nil)
    #expect(!sup.stats.faulted)
    // Once recovered, every frame is sent again.
    #expect(sup.submit(at: clock.now()) != .skip)
  }

  @Test("a worker that dies while starting is retried at a growing backoff, never in a tight loop")
  func startFailureBackoff() {
    var sup = DecoderSupervisor(settings: DecoderSupervisor.Settings(), now: clock.now())
    var spawns = 0
    for _ in 0..<1_000 {
      while let action = sup.nextAction(at: clock.now()) {
        guard case .spawn(let slot) = action else { continue }
        spawns += 1
        sup.spawned(slot: slot, at: clock.now())
        let death = sup.workerDied(slot: slot, how: 256 + 1, at: clock.now())
        #expect(!death.duringDecode)
      }
      clock.advance(milliseconds: 10)
    }
    // 10 s: 100, 200, 400, ... 5000 ms apart per slot: a handful each, not 1000.
    #expect(spawns <= 14, "\(spawns) spawns in 10 s")
    #expect(sup.stats.startFailures == UInt64(spawns))
    #expect(sup.submit(at: clock.now()) == .skip, "no worker, no decode")
  }

  @Test("a start that hangs is killed after the start timeout")
  func startTimeout() {
    var s = DecoderSupervisor.Settings()
    s.startTimeoutMilliseconds = 1_000
    var sup = DecoderSupervisor(settings: s, now: clock.now())
    while case .spawn(let slot) = sup.nextAction(at: clock.now()) { sup.spawned(slot: slot, at: clock.now()) }
    clock.advance(milliseconds: 1_000)
    #expect(sup.nextAction(at: clock.now()) == .kill(slot: 0))
    #expect(sup.nextAction(at: clock.now()) == .kill(slot: 1))
    let death = sup.workerDied(slot: 0, how: 9, at: clock.now())
    #expect(death.killed && !death.duringDecode && !death.record)
    #expect(sup.stats.abandoned == 0)
  }

  @Test("whether any worker can decode: not while both start, fail or are killed; yes while one is ready or decoding")
  func decodingAvailability() {
    var s = DecoderSupervisor.Settings()
    s.startTimeoutMilliseconds = 1_000
    var sup = DecoderSupervisor(settings: s, now: clock.now())
    #expect(!sup.snapshot.decoding)
    while case .spawn(let slot) = sup.nextAction(at: clock.now()) { sup.spawned(slot: slot, at: clock.now()) }
    #expect(!sup.snapshot.decoding, "starting")
    sup.workerReady(slot: 1)
    #expect(sup.snapshot.decoding)
    guard case .send(let slot, _) = sup.submit(at: clock.now()) else {
      Issue.record("not sent")
      return
    }
    #expect(slot == 1 && sup.snapshot.ready == 0 && sup.snapshot.decoding, "decoding, none ready")
    // The decode passes its deadline while slot 0 is still starting: nothing can decode.
    clock.advance(milliseconds: 100)
    #expect(sup.nextAction(at: clock.now()) == .kill(slot: 1))
    #expect(!sup.snapshot.decoding)
  }
}

/// The shared memory's layout: settings written by the service read back by the worker; replies
/// from an untrusted worker copied with every count checked.
@Suite struct DecoderChannelTests {
  @Test("the reader's settings (every strategy attempt) cross the shared memory unchanged")
  func settingsRoundTrip() {
    // The reader's settings as the service sets them (not the zero defaults): every field set.
    var decode = EngineSettings().decode
    decode.variantMode = .alternate
    decode.budgetMicroseconds = 12_000
    decode.quietAfterMicroseconds = 300_000
    decode.region = Region(x: 10, y: 20, width: 300, height: 200)
    for attempts in [DecodeAttempt.readerDefault, DecodeAttempt.readerLarge(width: 1280), []] {
      decode.attempts = attempts
      var s = DecoderWorkerSettings(
        decode: decode, maxWidth: 640, maxHeight: 480, arenaBytes: 4 << 20, resultsCapacity: 8, payloadBytesMax: 1024)
      s.testHooks = 5
      let channel = DecoderChannel(s)
      let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: channel.totalBytes, alignment: 64)
      defer { memory.deallocate() }
      memory.initializeMemory(as: UInt8.self, repeating: 0)
      channel.writeSettings(s, into: memory.baseAddress!)
      #expect(DecoderChannel.readSettings(from: UnsafeRawPointer(memory.baseAddress!), bytes: memory.count) == s)
      // A region shorter than the layout needs is refused.
      #expect(DecoderChannel.readSettings(from: UnsafeRawPointer(memory.baseAddress!), bytes: channel.frameOffset) == nil)
    }
  }

  @Test("a reply with counts and sizes out of range is clipped to the service's slots")
  func hostileReply() {
    let channel = DecoderChannel(maxWidth: 64, maxHeight: 48, capacity: 4, payloadBytesMax: 32)
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: channel.totalBytes, alignment: 64)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0xFF)  // every field at its largest
    var results = DecodeResults(capacity: 2, payloadBytesMax: 16)
    let (frame, _) = channel.readReply(from: UnsafeRawPointer(memory.baseAddress!), into: &results)
    #expect(results.count <= 2)
    for i in 0..<results.count {
      #expect(results.payload(i).count <= 16)
      #expect(results.text(i).count <= 16)
      // Corners within the channel's frame (0xFFFFFFFF reads as -1): the snapshot draws them.
      #expect((0..<8).allSatisfy { k in (0...(k % 2 == 0 ? 64 : 48)).contains(Int(results[i].corners[k])) })
    }
    #expect(frame.attempts <= 1_000)
  }

  @Test("a request carries a YUYV frame's luma, packed, and the reply its symbols")
  func requestAndReply() {
    let channel = DecoderChannel(maxWidth: 8, maxHeight: 4, capacity: 2, payloadBytesMax: 16)
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: channel.totalBytes, alignment: 64)
    defer { memory.deallocate() }
    var yuyv = [UInt8](repeating: 0, count: 8 * 4 * 2)
    for i in 0..<32 { yuyv[2 * i] = UInt8(i) }
    yuyv.withUnsafeBytes { raw in
      let frame = LumaFrame(
        bytes: raw, geometry: FrameGeometry(width: 8, height: 4, rowStrideBytes: 16, pixelStrideBytes: 2),
        captured: Instant(nanoseconds: 42), sequence: 7)
      #expect(channel.writeRequest(frame, mode: .retry, into: memory.baseAddress!))
    }
    guard let (seen, mode, _) = channel.readRequest(from: UnsafeRawPointer(memory.baseAddress!)) else {
      Issue.record("request unreadable")
      return
    }
    #expect(mode == .retry && seen.sequence == 7 && seen.captured == Instant(nanoseconds: 42))
    #expect((0..<32).allSatisfy { seen.luma(x: $0 % 8, y: $0 / 8) == UInt8($0) })
    var out = DecodeResults(capacity: 2, payloadBytesMax: 16)
    var symbol = DecodedSymbol()
    symbol.format = .qrCode
    symbol.byteCount = 5
    symbol.textByteCount = 5
    symbol.corners[2] = 7
    symbol.corners[3] = 100_000  // far below the frame: clamped to its height
    for (k, b) in "ALICE".utf8.enumerated() {
      out.payloadStorage(0)[k] = b
      out.textStorage(0)[k] = b
    }
    out.commit(symbol)
    var report = StrategyFrame()
    report.attempts = 3
    report.quiet = true
    channel.writeReply(out, frame: report, engine: nil, microseconds: 5, into: memory.baseAddress!)
    var back = DecodeResults(capacity: 2, payloadBytesMax: 16)
    let (frame, _) = channel.readReply(from: UnsafeRawPointer(memory.baseAddress!), into: &back)
    #expect(back.count == 1 && Array(back.payload(0)) == Array("ALICE".utf8) && back[0].corners[2] == 7 && back[0].corners[3] == 4)
    #expect(frame == report)
  }
}
