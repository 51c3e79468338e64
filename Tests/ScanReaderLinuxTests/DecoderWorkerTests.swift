import CSandbox
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The decoder worker processes of the built binary (`scangate decode-worker`): a frame decoded
/// through shared memory, the lockdown (no descriptors, no_new_privs, seccomp), and what a crash,
/// a forbidden call and a decode past its deadline do: counted, the spare takes the next frame.
@Suite(.serialized) struct DecoderWorkerTests {
  func settings(hooks: UInt32 = 0) -> DecoderWorkerSettings {
    var s = DecoderWorkerSettings(
      decode: ScanConfig().engine.decode, maxWidth: 640, maxHeight: 480, arenaBytes: 4 << 20, resultsCapacity: 8,
      payloadBytesMax: 1024)
    s.testHooks = hooks
    return s
  }

  func workers(hooks: UInt32 = 0, deadline: Int = 1_000) throws -> DecoderWorkers {
    var supervision = DecoderSupervisor.Settings()
    supervision.deadlineMilliseconds = deadline
    let w = try DecoderWorkers(settings: settings(hooks: hooks), supervision: supervision, executable: scangateBinary)
    #expect(w.pump(milliseconds: 20_000) { $0.stats.ready == 2 }, "both workers ready")
    return w
  }

  /// Sends `image` and waits for its reply (or `seconds`); the payloads found.
  func decode(_ w: DecoderWorkers, _ image: GrayImage, seconds: Int = 10) -> [String]? {
    let sent = image.pixels.withUnsafeBytes { raw in
      w.submit(
        LumaFrame(bytes: raw, geometry: .gray(width: image.width, height: image.height), captured: Instant(nanoseconds: 1), sequence: 1),
        allViews: false, now: SystemMonotonicClock().now())
    }
    guard sent, w.pump(milliseconds: seconds * 1000, until: { $0.hasReply || !$0.isBusy }), w.hasReply else { return nil }
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    _ = w.takeReply(into: &results)
    return (0..<results.count).map { String(decoding: results.payload($0), as: UTF8.self) }
  }

  /// A /proc file's text (its size reads 0, so it is read until the end).
  func procText(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n <= 0 { break }
      bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// A frame whose first row opens with `marker` (the test hooks' trigger).
  func marked(_ marker: String) -> GrayImage {
    var image = qrFrame("ALICE-0001")
    for (i, b) in marker.utf8.enumerated() { image.pixels[i] = b }
    return image
  }

  @Test("a worker decodes a frame sent through its shared memory, and its reply is the code")
  func decodesThroughSharedMemory() throws {
    let w = try workers()
    #expect(decode(w, qrFrame("ALICE-0001")) == ["ALICE-0001"])
    #expect(decode(w, GrayImage(width: 640, height: 480, pixels: [UInt8](repeating: 200, count: 640 * 480))) == [])
    #expect(w.stats.completed == 2 && w.stats.crashed == 0 && w.stats.restarts == 0)
    #expect(w.engineStats?.arenaOverflows == 0)
  }

  @Test("a worker holds one descriptor (its channel), no_new_privs and a seccomp filter")
  func lockedDown() throws {
    let w = try workers()
    for slot in 0..<2 {
      let pid = w.pid(slot: slot)
      #expect(pid > 0)
      let fds = (try? listDirectory("/proc/\(pid)/fd")) ?? []
      #expect(fds == ["4"], "worker \(pid) holds \(fds)")
      let status = procText("/proc/\(pid)/status")
      #expect(status.contains("NoNewPrivs:\t1"), "\(status)")
      #expect(status.contains("Seccomp:\t2"), "\(status)")
    }
  }

  #if DEBUG
    @Test("a forbidden call (open) kills the worker with SIGSYS; counted once, the spare decodes the next frame")
    func forbiddenCallKills() throws {
      let w = try workers(hooks: DecoderChannel.TestHook.forbiddenCall.rawValue)
      #expect(decode(w, marked(DecoderChannel.TestHook.forbiddenCall.marker)) == nil, "no reply from a killed worker")
      #expect(w.pump(milliseconds: 5_000) { $0.stats.crashed == 1 })
      #expect(w.lastCrashName == "SIGSYS")
      #expect(w.takeEvent() == FaultCode.decoderCrashed.rawValue)
      #expect(w.stats.faulted)
      // Past the fault's hold: the spare takes the next frame.
      usleep(1_100_000)
      #expect(decode(w, qrFrame("ALICE-0001")) == ["ALICE-0001"])
    }

    @Test("a worker that aborts on a frame is replaced; the reader's next frame is decoded")
    func abortReplaced() throws {
      let w = try workers(hooks: DecoderChannel.TestHook.abort.rawValue)
      #expect(decode(w, marked(DecoderChannel.TestHook.abort.marker)) == nil)
      #expect(w.pump(milliseconds: 5_000) { $0.stats.crashed == 1 })
      #expect(w.lastCrashName == "SIGABRT")
      usleep(1_100_000)
      #expect(decode(w, qrFrame("BOB-0002")) == ["BOB-0002"])
      // The slot was started anew.
      #expect(w.pump(milliseconds: 20_000) { $0.stats.ready == 2 && $0.stats.restarts == 1 })
    }

    @Test("a decode past the deadline is abandoned: the worker killed, the spare decodes the next frame")
    func deadlineAbandons() throws {
      let w = try workers(hooks: DecoderChannel.TestHook.spin.rawValue, deadline: 200)
      let start = SystemMonotonicClock().now()
      #expect(decode(w, marked(DecoderChannel.TestHook.spin.marker)) == nil)
      let took = SystemMonotonicClock().now().milliseconds(since: start)
      // 200 ms of the worker's CPU time, or the 2 s wall cap on a machine too loaded to give it that.
      #expect(took >= 200 && took < 2_500, "abandoned after \(took) ms")
      #expect(w.stats.abandoned == 1 && w.stats.crashed == 0)
      #expect(w.pump(milliseconds: 5_000) { $0.stats.restarts == 1 })
      #expect(w.takeEvent() == FaultCode.decoderDeadline.rawValue)
      usleep(300_000)
      #expect(decode(w, qrFrame("ALICE-0001")) == ["ALICE-0001"])
      #expect(w.pump(milliseconds: 20_000) { $0.stats.ready == 2 && $0.stats.restarts == 1 })
    }
  #endif

  @Test("a reply written after the poll returned is taken before the deadline is judged: a finished decode is never abandoned")
  func replyBeforeDeadline() throws {
    let w = try workers(deadline: 200)
    let image = qrFrame("ALICE-0001")
    let start = SystemMonotonicClock().now()
    let sent = image.pixels.withUnsafeBytes { raw in
      w.submit(
        LumaFrame(bytes: raw, geometry: .gray(width: image.width, height: image.height), captured: Instant(nanoseconds: 1), sequence: 1),
        allViews: false, now: start)
    }
    #expect(sent)
    // Nobody reads while the worker decodes, replies and goes back to sleep (its state 'S').
    func sleeping(_ pid: pid_t) -> Bool {
      let stat = (try? readWholeFile("/proc/\(pid)/stat", maxBytes: 4096)).map { String(decoding: $0, as: UTF8.self) } ?? ""
      return stat.split(separator: ")").last?.dropFirst().first == "S"
    }
    usleep(300_000)
    for _ in 0..<100 where !(sleeping(w.pid(slot: 0)) && sleeping(w.pid(slot: 1))) { usleep(100_000) }
    // Then the deadline is judged with the reply not yet seen by the poll (an empty poll set),
    // past its check and within the wall cap.
    w.service(PollSet(capacity: 2), now: start.adding(milliseconds: 1_500), requests: LoopRequests())
    #expect(w.hasReply && w.stats.abandoned == 0, "\(w.stats)")
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    _ = w.takeReply(into: &results)
    #expect(results.count == 1 && String(decoding: results.payload(0), as: UTF8.self) == "ALICE-0001")
  }

  @Test("a worker starved of the CPU (stopped for three deadlines) is not abandoned: its decode comes back once it runs")
  func starvedWorkerFinishes() throws {
    let w = try workers(deadline: 200)
    let pids = [w.pid(slot: 0), w.pid(slot: 1)]
    for pid in pids { kill(pid, SIGSTOP) }
    let image = qrFrame("ALICE-0001")
    let sent = image.pixels.withUnsafeBytes { raw in
      w.submit(
        LumaFrame(bytes: raw, geometry: .gray(width: image.width, height: image.height), captured: Instant(nanoseconds: 1), sequence: 1),
        allViews: false, now: SystemMonotonicClock().now())
    }
    #expect(sent)
    _ = w.pump(milliseconds: 600) { $0.stats.abandoned > 0 }
    for pid in pids { kill(pid, SIGCONT) }
    #expect(w.pump(milliseconds: 10_000) { $0.hasReply || !$0.isBusy })
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    _ = w.takeReply(into: &results)
    #expect(results.count == 1 && String(decoding: results.payload(0), as: UTF8.self) == "ALICE-0001")
    #expect(w.stats.abandoned == 0 && w.stats.starved >= 1, "\(w.stats)")
  }
}
