import CAllocCounter
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Testing

/// The fixed-memory promise across the process boundary: the worker's request path (frame in
/// shared memory → pipeline → reply), and the loop's side with real worker processes (copy in,
/// send, poll, reply copied out, decision), allocate nothing per frame after warm-up.
@Suite(.serialized) struct DecoderWorkerAllocationTests {
  static let width = HotPathAllocationTests.width, height = HotPathAllocationTests.height

  /// The built `scangate` beside this test bundle (the worker processes run it).
  static let binary: String = {
    var parts = CommandLine.arguments[0].split(separator: "/", omittingEmptySubsequences: false)
    while let last = parts.last, !last.hasSuffix(".xctest") && parts.count > 1 { parts.removeLast() }
    parts.removeLast()
    return parts.joined(separator: "/") + "/scangate"
  }()

  static func workerSettings() -> DecoderWorkerSettings {
    DecoderWorkerSettings(
      decode: ScanConfig().engine.decode, maxWidth: width, maxHeight: height, arenaBytes: 16 << 20, resultsCapacity: 8,
      payloadBytesMax: 1024)
  }

  @Test("the worker's request path (the reader's strategy, real engine): 0 allocations over 1,200 requests")
  func workerRequestsDoNotAllocate() throws {
    let settings = Self.workerSettings()
    let channel = DecoderChannel(settings)
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: channel.totalBytes, alignment: 4096)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0)
    channel.writeSettings(settings, into: memory.baseAddress!)
    var core = try DecoderWorkerCore(settings: settings)
    core.warmUp()
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    let frames = HotPathAllocationTests.frames()
    let clock = SystemMonotonicClock()
    var found = 0
    func run(_ count: Int) {
      for n in 0..<count {
        frames[(n / 10) % frames.count].withUnsafeBytes { raw in
          let frame = LumaFrame(
            bytes: raw, geometry: .gray(width: Self.width, height: Self.height), captured: clock.now(), sequence: UInt64(n))
          _ = channel.writeRequest(frame, mode: nil, into: memory.baseAddress!)  // the service's copy in
        }
        core.serve(memory.baseAddress!)  // the worker
        _ = channel.readReply(from: UnsafeRawPointer(memory.baseAddress!), into: &results)  // the service's copy out
        found += results.count
      }
    }
    run(240)
    found = 0
    alloc_counter_reset()
    run(1_200)
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations (\(alloc_counter_bytes()) bytes) in 1,200 requests")
    #expect(found >= 300, "codes were read in the measured stretch (\(found))")
    #expect(core.pipeline.decoder.stats.arenaOverflows == 0)
  }

  @Test("the loop with real decoder worker processes: 0 allocations over 1,200 iterations, codes granted")
  func loopWithWorkersDoesNotAllocate() throws {
    let directory = "/tmp/scangate-worker-alloc-\(getpid())"
    mkdir(directory, 0o755)
    defer {
      for name in (try? listDirectory(directory)) ?? [] { unlink(directory + "/" + name) }
      rmdir(directory)
    }
    var raw: [UInt8] = []
    let frames = HotPathAllocationTests.frames()
    for step in HotPathAllocationTests.script { if case .frame(let i) = step { raw += frames[i] } }
    try writeFileAtomically(directory + "/frames.gray", raw)
    try writeFileAtomically(directory + "/allow-list.txt", Array("text:ALICE-0001\ntext:DAVE-0004\n".utf8))
    let clock = SystemMonotonicClock()
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
    let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
    var settings = HotPathAllocationTests.settings()
    settings.presence.leaveAfterMilliseconds = 50
    let engine = ScanEngine(
      settings: settings, decoder: IdleDecoder(), relay: relay, buzzer: buzzer, clock: clock, wall: SystemWallClock(),
      digester: SodiumDigester(), events: EventRing(capacity: 1024), maxWidth: Self.width, maxHeight: Self.height)
    var loopSettings = LoopSettings()
    loopSettings.allowListPath = directory + "/allow-list.txt"
    loopSettings.handleSignals = false
    let path = directory + "/frames.gray"
    var loop = RunLoop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
      try ReplayFrameSource(path: path, width: Self.width, height: Self.height, framesPerSecond: 200, loops: true, clock: clock)
    }
    var workerSettings = Self.workerSettings()
    workerSettings.decode = settings.decode
    let workers = try DecoderWorkers(settings: workerSettings, supervision: DecoderSupervisor.Settings(), executable: Self.binary)
    #expect(workers.pump(milliseconds: 20_000) { $0.stats.ready == 2 })
    loop.attach(workers)
    #expect(loop.reloadAllowList() == nil)
    for _ in 0..<240 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let completedBefore = workers.stats.completed, grantsBefore = loop.engine.stats.grants
    alloc_counter_reset()
    for _ in 0..<1_200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,200 loop iterations")
    #expect(workers.stats.completed - completedBefore >= 100, "decodes came back (\(workers.stats.completed - completedBefore))")
    #expect(loop.engine.stats.grants - grantsBefore > 0)
    #expect(workers.stats.crashed == 0 && workers.stats.abandoned == 0)
    loop.finish()
  }
}
