import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Synchronization
import ScanTestSupport
import Testing

/// The Linux loop with scripted frame sources and real timers, files and inotify.
@Suite(.serialized) struct RunLoopTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock, FixtureDigester
  >

  final class World: @unchecked Sendable {
    let clock = SystemMonotonicClock()
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let ring = EventRing(capacity: 4096)
    let directory = temporaryDirectory("loop")
    /// Open attempts that fail before the camera "comes back".
    var failingOpens = 0
    var opens = 0
    var script: [ScriptedFrameSource.Step] = [.frame(1)]
    init() {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
    }
    var allowListPath: String { directory + "/allow-list.txt" }

    func loop(watch: Bool = true) -> Loop {
      let engine = ScanEngine(
        settings: EngineSettings(), decoder: FixtureDecoder(payloads: [Array("ALICE".utf8), Array("BOB".utf8)]),
        relay: relay, buzzer: buzzer, clock: clock, wall: SystemWallClock(), digester: FixtureDigester(), events: ring,
        maxWidth: 64, maxHeight: 48)
      var settings = LoopSettings()
      settings.allowListPath = allowListPath
      settings.watchAllowList = watch
      settings.handleSignals = false
      settings.frameTimeoutMilliseconds = 500
      settings.reopenBackoffMillisecondsMax = 400
      let frames = (0...2).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
      return Loop(engine: engine, settings: settings) { [self] () throws(CaptureError) in
        opens += 1
        if failingOpens > 0 {
          failingOpens -= 1
          throw .deviceLost(errno: .noSuchFile)
        }
        return ScriptedFrameSource(width: 64, height: 48, frames: frames, script: script, loops: true, clock: clock)
      }
    }

    func count(_ kind: EventKind, code: FaultCode? = nil) -> Int {
      var n = 0
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        if e.kind == kind && (code == nil || e.code == code!.rawValue) { n += 1 }
        s += 1
      }
      return n
    }
  }

  /// Runs the loop for about `milliseconds` of real time.
  func spin(_ loop: inout Loop, milliseconds: Int, until done: (borrowing Loop) -> Bool = { _ in false }) {
    let clock = SystemMonotonicClock()
    let end = clock.now().adding(milliseconds: milliseconds)
    while clock.now() < end {
      loop.runOnce(maximumWaitMilliseconds: 10)
      if done(loop) { return }
      usleep(1_000)
    }
  }

  @Test("a lost camera degrades the reader, is reopened with backoff, and decoding resumes")
  func cameraLossAndRecovery() {
    let world = World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "text:ALICE\n")
    // 20 frames of ALICE, 30 empty, then the device fails.
    world.script = Array(repeating: .frame(1), count: 20) + Array(repeating: .frame(0), count: 30) + [.lost(errno: ENODEV)]
    var loop = world.loop()
    #expect(loop.reloadAllowList() == nil)
    spin(&loop, milliseconds: 3_000) { $0.cameraState == .degraded }
    #expect(loop.cameraState == .degraded)
    #expect(loop.engine.stats.grants == 1)
    #expect(world.count(.fault, code: .cameraLost) == 1)
    // The device stays away for three more open attempts, then comes back showing ALICE.
    world.script = [.frame(1)]
    world.failingOpens = 3
    let clock = SystemMonotonicClock()
    spin(&loop, milliseconds: 5_000) { _ in world.failingOpens == 0 }
    let back = clock.now()
    spin(&loop, milliseconds: 3_000) { $0.cameraState == .streaming }
    #expect(loop.cameraState == .streaming)
    #expect(clock.now().milliseconds(since: back) < 2_000)
    #expect(world.count(.state, code: .cameraRestored) == 1)
    // Decoding resumes without a restart: ALICE left while the camera was away, and once her
    // cooldown has passed she is decided again.
    spin(&loop, milliseconds: 5_000) { $0.engine.stats.grants >= 2 }
    #expect(loop.engine.stats.grants >= 2)
    #expect(world.buzzer.edges.count > 0)  // fault pattern played
  }

  @Test("a camera that stops delivering frames counts as lost")
  func frameTimeout() {
    let world = World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "")
    world.script = [.frame(0)] + Array(repeating: .timeout, count: 1_000_000)
    var loop = world.loop()
    spin(&loop, milliseconds: 2_000) { $0.cameraLosses > 0 }
    #expect(loop.cameraLosses == 1)
    if case .deviceLost(let code) = loop.lastCameraError { #expect(code == .timedOut) } else { Issue.record("no timeout error") }
  }

  @Test("the allow-list reloads when its file is replaced; a bad file keeps the live list")
  func allowListReload() {
    let world = World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "text:ALICE\n")
    world.script = [.frame(0)]
    var loop = world.loop()
    #expect(loop.reloadAllowList() == nil)
    #expect(loop.engine.allowList.version == 1)
    // Replaced atomically (rename), as an editor or deploy tool does: inotify sees it.
    writeFile(world.allowListPath, "text:ALICE\ntext:BOB\n")
    spin(&loop, milliseconds: 2_000) { $0.engine.allowList.version == 2 }
    #expect(loop.engine.allowList.count == 2)
    // A broken file: reported, and the two-entry list stays live.
    writeFile(world.allowListPath, "text:ALICE\nbogus line\n")
    spin(&loop, milliseconds: 2_000) { $0.engine.allowList.lastError != nil }
    #expect(loop.engine.allowList.lastError?.line == 2)
    #expect(loop.engine.allowList.version == 2)
    #expect(Array("BOB".utf8).withUnsafeBytes { loop.engine.check($0) } == .granted)
    // Rewritten in place (truncate + write, close): also seen.
    let fd = open(world.allowListPath, O_WRONLY | O_TRUNC)
    let text = Array("text:CAROL\n".utf8)
    _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    spin(&loop, milliseconds: 2_000) { $0.engine.allowList.version == 3 }
    #expect(Array("CAROL".utf8).withUnsafeBytes { loop.engine.check($0) } == .granted)
    #expect(Array("BOB".utf8).withUnsafeBytes { loop.engine.check($0) } == .deniedUnknown)
  }

  @Test("a missing allow-list at startup denies everything and says why")
  func missingAllowList() {
    let world = World()
    defer { removeTree(world.directory) }
    var loop = world.loop(watch: false)
    let error = loop.reloadAllowList()
    #expect(error?.reason.contains("No such file") == true)
    #expect(loop.engine.allowList.count == 0)
  }

  @Test("finish drives both lines inactive, mid-pulse")
  func finishReleases() {
    let world = World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "text:ALICE\n")
    world.script = [.frame(1)]
    var loop = world.loop()
    _ = loop.reloadAllowList()
    spin(&loop, milliseconds: 1_000) { _ in world.relay.level == .active }
    #expect(world.relay.level == .active)
    loop.finish()
    #expect(world.relay.level == .inactive)
    #expect(world.buzzer.level == .inactive)
  }
}

/// Adding an input is adding a poll participant: a fake one with a pipe is polled and serviced
/// by the real loop, and asks it to stop, without any change to the loop.
@Suite struct PollParticipantTests {
  final class PipeInput: PollParticipant {
    let read: Int32, write: Int32
    var token = PollSet.Token.none
    var serviced = 0
    init() {
      var fds: [Int32] = [-1, -1]
      _ = pipe(&fds)
      read = fds[0]
      write = fds[1]
    }
    deinit { close(read); close(write) }
    var pollCapacity: Int { 1 }
    func prepare(_ poll: PollSet, now: Instant) -> Instant? {
      token = poll.add(read, events: Int16(POLLIN))
      return nil
    }
    func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
      guard poll.revents(token) & Int16(POLLIN) != 0 else { return }
      var byte: UInt8 = 0
      _ = Glibc.read(read, &byte, 1)
      serviced += 1
      if byte == UInt8(ascii: "q") { requests.post(.stop) }
    }
  }

  @Test("a registered participant is polled, serviced on input, and can stop the loop")
  func fakeParticipant() {
    let clock = SystemMonotonicClock()
    let engine = ScanEngine(
      settings: EngineSettings(), decoder: FixtureDecoder(payloads: []),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: SystemWallClock(), digester: FixtureDigester(), events: EventRing(capacity: 64),
      maxWidth: 64, maxHeight: 48)
    var settings = LoopSettings()
    settings.handleSignals = false
    settings.allowListPath = nil
    let frames = [FixtureDecoder.frame(width: 64, height: 48, naming: 0)]
    var loop = RunLoop(engine: engine, settings: settings) { () throws(CaptureError) in
      ScriptedFrameSource(width: 64, height: 48, frames: frames, script: [.frame(0)], loops: true, clock: clock)
    }
    let input = PipeInput()
    loop.register(input)
    for _ in 0..<5 { loop.runOnce(maximumWaitMilliseconds: 1) }
    #expect(input.serviced == 0)
    _ = Glibc.write(input.write, "x", 1)
    loop.runOnce(maximumWaitMilliseconds: 100)
    #expect(input.serviced == 1)
    let stoppedEarly = loop.stopRequested
    #expect(!stoppedEarly)
    _ = Glibc.write(input.write, "q", 1)
    loop.runOnce(maximumWaitMilliseconds: 100)
    let stopped = loop.stopRequested
    #expect(input.serviced == 2 && stopped)
  }
}

@Suite struct ConsoleRingBudgetTests {
  @Test("the event ring must hold a second of the console's worst case, or the console is refused")
  func ringBudget() {
    var c = ScanConfig()
    #expect(consoleRingProblem(c) == nil)  // 17 sessions × 50 = 850 ≤ 4096
    c.console.clientsMax = 100  // 101 × 50 = 5050 > 4096
    #expect(consoleRingProblem(c)?.contains("use at least 8192") == true)
    c.eventRingCapacity = 8192
    #expect(consoleRingProblem(c) == nil)
    c.console.listen = []
    c.eventRingCapacity = 64
    #expect(consoleRingProblem(c) == nil)  // no console, no console events
  }
}
