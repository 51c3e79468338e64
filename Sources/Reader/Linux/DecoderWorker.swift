import CSandbox
import Glibc
import ScanCore
import ScanPlatform

/// What a decoder worker runs for each request, apart from its I/O: the decode pipeline with
/// the engine, on the frame in the shared memory, the reply written back there. Allocates
/// nothing per request after `warmUp` (HotPathAllocationTests runs it in-process).
public struct DecoderWorkerCore: ~Copyable {
  public let settings: DecoderWorkerSettings
  public let channel: DecoderChannel
  public var pipeline: DecodePipeline<ZXingDecoder>
  var results: DecodeResults
  let clock = SystemMonotonicClock()
  /// The strategy's budget and its attempts' costs are this thread's CPU time: on a loaded
  /// machine a frame gets the same attempts as on an idle one (docs/decoder.md).
  let budgetClock = ThreadCPUClock()
  /// Test hooks this build honours (none in a release build).
  let hooks: UInt32

  public init(settings: DecoderWorkerSettings) throws(SystemError) {
    self.settings = settings
    channel = DecoderChannel(settings)
    let decoder = try ZXingDecoder(
      arenaBytes: settings.arenaBytes, capacity: settings.resultsCapacity, tryHarder: settings.decode.tryHarder)
    pipeline = DecodePipeline(
      decoder: decoder, settings: settings.decode, maxWidth: settings.maxWidth, maxHeight: settings.maxHeight)
    results = DecodeResults(capacity: settings.resultsCapacity, payloadBytesMax: settings.payloadBytesMax)
    #if DEBUG
      hooks = settings.testHooks
    #else
      hooks = 0
    #endif
  }

  /// Decodes a QR code and an empty frame in every view before the first request (the first
  /// engine call runs on the heap, the rest in the arena), so what the engine creates once (its
  /// thread's scratch, lazily built tables) is made now, before the lockdown, and the first
  /// frame costs what every frame costs. Then empty frames until the warm-up's code is no longer
  /// tracked (the first person's code must not pay for it).
  public mutating func warmUp() {
    let width = settings.maxWidth, height = settings.maxHeight
    var plane = [UInt8](repeating: 255, count: width * height)
    if let code = renderQRCode(Array("SCANGATE-WARM-UP".utf8), scale: max(2, min(width, height) / 120)) {
      let fitted = code.fitted(width: width, height: height)
      plane = fitted.pixels
    }
    let blank = [UInt8](repeating: 128, count: width * height)
    for image in [plane, blank] {
      image.withUnsafeBytes { bytes in
        let frame = LumaFrame(bytes: bytes, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: 0)
        pipeline.decode(frame, into: &results, clock: budgetClock, mode: .retry)
      }
    }
    blank.withUnsafeBytes { bytes in
      for _ in 0...TrackedRegion.framesKept {
        let frame = LumaFrame(bytes: bytes, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: 0)
        pipeline.decode(frame, into: &results, clock: budgetClock, mode: .upright)
      }
    }
  }

  /// Serves the request in `base`: decodes its frame, writes the reply. False when the request
  /// is malformed (nothing is decoded; an empty reply is written).
  @discardableResult
  public mutating func serve(_ base: UnsafeMutableRawPointer) -> Bool {
    let start = clock.now()
    guard let request = channel.readRequest(from: UnsafeRawPointer(base)) else {
      results.removeAll()
      channel.writeReply(results, frame: StrategyFrame(), engine: nil, microseconds: 0, into: base)
      return false
    }
    if hooks != 0 { runTestHooks(request.frame) }
    pipeline.decode(request.frame, into: &results, clock: budgetClock, mode: request.mode, turn: request.turn)
    channel.writeReply(
      results, frame: pipeline.lastFrame, engine: pipeline.decoder.engineStats,
      microseconds: clock.now().microseconds(since: start), into: base)
    return true
  }

  /// Debug builds, when the service was started with SCANGATE_DECODER_TEST_HOOKS: a marked
  /// frame aborts, makes a forbidden call, or spins past any deadline.
  private func runTestHooks(_ frame: LumaFrame) {
    if hooks & DecoderChannel.TestHook.abort.rawValue != 0 && DecoderChannel.frame(frame, carries: .abort) { abort() }
    if hooks & DecoderChannel.TestHook.forbiddenCall.rawValue != 0 && DecoderChannel.frame(frame, carries: .forbiddenCall) {
      _ = sg_sb_try_forbidden_open()
    }
    if hooks & DecoderChannel.TestHook.spin.rawValue != 0 && DecoderChannel.frame(frame, carries: .spin) {
      while clock.now().nanoseconds > 0 {}
    }
    if hooks & DecoderChannel.TestHook.slow.rawValue != 0 {
      let until = clock.now().adding(milliseconds: 60)
      while clock.now() < until {}
    }
  }
}

/// `scangate decode-worker`: the decoder worker process. The service starts it (ScanLinux's
/// `DecoderWorkers`) with its shared memory on descriptor 3 and its channel (a socket pair) on 4;
/// nothing else is open. It maps the memory, builds the pipeline from the settings
/// the service wrote there, warms up, locks itself down (seccomp), says it is ready, then serves
/// one request per byte on the channel until the channel closes (the service is gone).
public enum DecoderWorker {
  public static func main(_ arguments: [String]) -> Int32 {
    var parent: pid_t = 0, bytes = 0
    var i = 0
    while i + 1 < arguments.count {
      if arguments[i] == "--parent" { parent = pid_t(arguments[i + 1]) ?? 0 }
      if arguments[i] == "--bytes" { bytes = Int(arguments[i + 1]) ?? 0 }
      i += 2
    }
    guard parent > 1, bytes > 0 else { return fail("started without --parent and --bytes (the service starts it)") }
    // A worker never outlives the service that started it.
    guard sg_sb_die_with_parent(parent) == 0 else { return fail("the service is gone") }
    guard let base = sg_sb_map_shared(Int32(SG_SB_WORKER_MEMORY_FD), bytes) else { return fail("cannot map the shared memory") }
    guard let settings = DecoderChannel.readSettings(from: UnsafeRawPointer(base), bytes: bytes) else {
      return fail("the shared memory holds no valid settings")
    }
    var core: DecoderWorkerCore
    do { core = try DecoderWorkerCore(settings: settings) } catch { return fail("\(error)") }
    core.warmUp()
    let lock = sg_sb_lockdown(Int32(SG_SB_WORKER_CHANNEL_FD))
    guard lock == 0 else { return fail("seccomp lockdown failed (\(SystemError.describe(-lock)))") }
    // Locked down: from here on only the channel, memory and the clock.
    let words = base.assumingMemoryBound(to: UInt32.self)
    sg_sb_store_release(words + DecoderChannel.offsetReady / 4, 1)
    guard signal(Int32(SG_SB_WORKER_CHANNEL_FD)) else { return 0 }
    var byte: UInt8 = 0
    while true {
      let n = withUnsafeMutableBytes(of: &byte) { b in
        (try? syscall("read request", { Glibc.read(Int32(SG_SB_WORKER_CHANNEL_FD), b.baseAddress, 1) })) ?? 0
      }
      guard n == 1 else { return 0 }  // the service closed the channel: it is gone or stopping
      let sequence = sg_sb_load_acquire(words + DecoderChannel.offsetRequestSequence / 4)
      core.serve(base)
      sg_sb_store_release(words + DecoderChannel.offsetDoneSequence / 4, sequence)
      guard signal(Int32(SG_SB_WORKER_CHANNEL_FD)) else { return 0 }
    }
  }

  private static func signal(_ fd: Int32) -> Bool {
    var byte: UInt8 = 1
    let n = withUnsafeBytes(of: &byte) { b in (try? syscall("write done", { Glibc.write(fd, b.baseAddress, 1) })) ?? 0 }
    return n == 1
  }

  private static func fail(_ why: String) -> Int32 {
    writeStandardError("scangate decode-worker: \(why)\n")
    return 1
  }
}
