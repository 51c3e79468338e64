import CTestSched
import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// The decoder worker's strategy budget is CPU time (docs/decoder.md, "The decode budget is CPU
/// time"): a worker that shares its core with a busy thread gets the attempts on a frame it gets
/// with the core to itself. Measured on wall time, as it was, the busy thread's share counted
/// against the budget: on a loaded machine each frame got fewer views, and a dark-mode phone
/// shown for three frames at 5 fps was missed (DemoFrameRateTests, in a CI run under load).
@Suite(.serialized) struct WorkerBudgetTests {
  /// Binds the calling thread to CPU 0; false where that is refused.
  static func pinToFirstCPU() -> Bool { test_pin_thread_to_cpu(0) == 0 }

  /// The reader's strategy and budget in a worker's core, in process, on this thread; the
  /// attempts it makes over `frames` frames of a doorway with no code (the rotation runs while
  /// the budget lasts), and the wall and CPU time they took.
  static func attempts(
    _ core: inout DecoderWorkerCore, channel: DecoderChannel, memory: UnsafeMutableRawBufferPointer, frames: Int
  )
    -> (attempts: Int, wall: UInt64, cpu: UInt64)
  {
    let clock = SystemMonotonicClock(), cpu = ThreadCPUClock()
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    let doorway = GrayImage(width: 640, height: 480, pixels: (0..<(640 * 480)).map { UInt8(truncatingIfNeeded: ($0 % 640) / 3 + ($0 / 640) / 4) })
    var total = 0
    let wall0 = clock.now(), cpu0 = cpu.now()
    for n in 0..<frames {
      doorway.withFrame(sequence: UInt64(n), captured: clock.now()) { _ = channel.writeRequest($0, mode: nil, into: memory.baseAddress!) }
      core.serve(memory.baseAddress!)
      _ = channel.readReply(from: UnsafeRawPointer(memory.baseAddress!), into: &results)
      total += core.pipeline.lastFrame.attempts
    }
    return (total, clock.now().nanoseconds - wall0.nanoseconds, cpu.now().nanoseconds - cpu0.nanoseconds)
  }

  @Test("the worker's budget is its CPU time: sharing its core with a busy thread, a frame gets the attempts it gets alone")
  func budgetIsCPUTime() throws {
    var decode = ScanConfig().engine.decode
    decode.quietAfterMicroseconds = 0  // every frame gets the budget
    #expect(decode.budgetMicroseconds > 0 && decode.variantMode == .alternate && decode.attempts.count > 4)
    let settings = DecoderWorkerSettings(
      decode: decode, maxWidth: 640, maxHeight: 480, arenaBytes: 16 << 20, resultsCapacity: 8, payloadBytesMax: 1024)
    let channel = DecoderChannel(settings)
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: channel.totalBytes, alignment: 4096)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0)
    channel.writeSettings(settings, into: memory.baseAddress!)

    // Everything on one core: this thread, and below a thread that spins beside it.
    let pinned = Self.pinToFirstCPU()
    defer { _ = test_unpin_thread() }
    try #require(pinned, "sched_setaffinity refused")
    var core = try DecoderWorkerCore(settings: settings)
    core.warmUp()
    _ = Self.attempts(&core, channel: channel, memory: memory, frames: 20)  // the costs learnt
    let alone = Self.attempts(&core, channel: channel, memory: memory, frames: 60)

    let hog = WorkerThread()
    hog.start { [hog] in
      guard Self.pinToFirstCPU() else { return }
      var x: UInt64 = 1
      while !hog.stopRequested { for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 } }
      if x == 0 { print(x) }
    }
    let shared = Self.attempts(&core, channel: channel, memory: memory, frames: 60)
    hog.stop()

    let how =
      "alone \(alone.attempts) attempts (wall \(alone.wall / 1_000_000) ms, CPU \(alone.cpu / 1_000_000) ms); "
      + "beside a busy thread \(shared.attempts) (wall \(shared.wall / 1_000_000) ms, CPU \(shared.cpu / 1_000_000) ms)"
    // The busy thread really shared the core: the frames took well over their CPU time in wall time.
    #expect(shared.wall > shared.cpu + shared.cpu / 2, "no contention: \(how)")
    #expect(alone.attempts >= 60 * 2, "the budget holds more than the first attempt: \(how)")
    // The budget is CPU time: beside the busy thread a frame keeps what it had alone. On wall
    // time, as before, the busy thread's share counted against it: frames got 164-168 attempts
    // where they got 213 alone (0.78), and, a wall budget ending when the frame's wall time is
    // spent, about half their CPU time beside a thread taking half the core. On a loaded machine neither
    // measure alone is steady: the busy thread and other processes evict the caches, so attempts
    // cost more, and the costs the strategy learns move, so a frame may stop short of its budget.
    // Two full-suite runs on two loaded cores: 193 and 160 attempts with 548 and 508 ms of CPU
    // (0.83, 0.93); 155 and 157 attempts with 443 and 346 ms (1.01, 0.78). Either held, never
    // both lost: a frame kept 90 % of its attempts or 70 % of its CPU time.
    let keptAttempts = shared.attempts * 10 >= alone.attempts * 9
    let keptCPU = shared.cpu * 10 >= alone.cpu * 7
    #expect(keptAttempts || keptCPU, "a frame lost its budget beside a busy thread: \(how)")
  }
}
