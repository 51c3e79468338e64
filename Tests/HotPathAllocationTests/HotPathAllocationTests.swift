import CAllocCounter
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

@testable import ScanFleetLinux

/// The fixed-memory promise, measured: after warm-up, frames that are captured, decoded
/// (by the real zxing-cpp engine), decided and actuated make no heap allocation at all on the
/// loop's thread. malloc, calloc, realloc and the aligned allocators are counted per thread by
/// the CAllocCounter interposer linked into this test binary.
@Suite(.serialized) struct HotPathAllocationTests {
  static let width = 640, height = 480

  /// Frames cycling through: empty, a listed code, empty, an unknown code, an inverted listed code.
  static func frames() -> [[UInt8]] {
    func place(_ payload: String, inverted: Bool) -> [UInt8] {
      var code = renderQRCode(Array(payload.utf8), scale: 6)!
      if inverted { code = code.inverted() }
      var pixels = [UInt8](repeating: 180, count: width * height)
      let ox = 200, oy = 100
      for y in 0..<code.height { for x in 0..<code.width { pixels[(y + oy) * width + x + ox] = code.pixels[y * code.width + x] } }
      return pixels
    }
    let empty = [UInt8](repeating: 180, count: width * height)
    return [empty, place("ALICE-0001", inverted: false), place("MALLORY-9999", inverted: false), place("DAVE-0004", inverted: true)]
  }

  /// 10 frames per scene: empty, ALICE, empty, MALLORY, empty, DAVE (inverted).
  static let script: [ScriptedFrameSource.Step] =
    [0, 1, 0, 2, 0, 3].flatMap { Array(repeating: ScriptedFrameSource.Step.frame($0), count: 10) }

  static func settings() -> EngineSettings {
    var s = EngineSettings()
    s.decode.variantMode = .retry
    s.presence.leaveAfterMilliseconds = 100
    s.presence.cooldownMilliseconds = 0
    s.actuation.relayPulseMilliseconds = 200
    return s
  }

  @Test("engine with the real decoder: 0 allocations over 1,200 frames after warm-up")
  func engineDoesNotAllocate() throws {
    let clock = ManualClock()
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
    let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
    let ring = EventRing(capacity: 1024)
    let decoder = try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8)
    var engine = ScanEngine(
      settings: Self.settings(), decoder: decoder, relay: relay, buzzer: buzzer, clock: clock, wall: clock,
      digester: SodiumDigester(), events: ring, maxWidth: Self.width, maxHeight: Self.height)
    _ = engine.allowList.load(Array("text:ALICE-0001\ntext:DAVE-0004\n".utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
    var source = ScriptedFrameSource(width: Self.width, height: Self.height, frames: Self.frames(), script: Self.script, loops: true, clock: clock)

    func run(_ frames: Int) throws {
      for _ in 0..<frames {
        _ = try source.withNextFrame(timeoutMilliseconds: 0) { engine.process($0) }
        for _ in 0..<33 {
          clock.advance(milliseconds: 1)
          engine.tick()
        }
      }
    }
    try run(240)  // warm-up: every scene, view and decision path at least once
    let grantsBefore = engine.stats.grants, deniesBefore = engine.stats.denies
    alloc_counter_reset()
    try run(1_200)
    let allocations = alloc_counter_mallocs()
    let bytes = alloc_counter_bytes()
    #expect(allocations == 0, "\(allocations) allocations (\(bytes) bytes) in 1,200 frames")
    // The measured frames really exercised decode → decision → actuation.
    #expect(engine.stats.grants - grantsBefore >= 40)
    #expect(engine.stats.denies - deniesBefore >= 20)
    #expect(engine.pipeline.decoder.stats.arenaOverflows == 0)
    #expect(relay.edgeCount > 0)
  }

  @Test("signed passes (static and rotating: Ed25519, sealed seed, TOTP, replay) verified on the hot path allocate nothing")
  func credentialsDoNotAllocate() throws {
    let clock = ManualClock()
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
    let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
    let ring = EventRing(capacity: 1024)
    let decoder = try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8)
    var engine = ScanEngine(
      settings: Self.settings(), decoder: decoder, relay: relay, buzzer: buzzer, clock: clock, wall: clock,
      digester: SodiumDigester(), events: ring, maxWidth: Self.width, maxHeight: Self.height)
    // A site: issuer and site keys, a static and a rotating pass valid now.
    let issuer = CredentialIssuer.randomBytes(32), siteSecret = CredentialIssuer.randomBytes(32)
    let kid = Array("hq".utf8)
    let trust = TrustStore(keys: [IssuerKey(kid: kid, publicKey: CredentialIssuer.issuerPublicKey(issuer)!, notBefore: nil, notAfter: nil)!])
    var settings = CredentialSettings()
    settings.trustFile = "(memory)"
    let crypto = SodiumCredentialCrypto(siteSecretKey: siteSecret)
    let verifier = CredentialVerifier(settings: settings, sign1: Sign1Verifier(trust: trust, codec: LibCBOR(), crypto: crypto))
    let stepsPath = temporaryDirectory("alloc-steps") + "/replay-steps"
    defer { unlink(stepsPath) }
    verifier.replayStore = try ReplayStepFile(path: stepsPath, cache: verifier.replay)
    engine.policy.credentials = verifier
    let now = clock.unixSeconds()
    var s = PassClaims(subject: "alice", expires: now + 3600, id: [1, 2, 3])
    s.label = "Alice"
    // Its zone names a schedule: the access window is judged on every decision (tzdata's local time).
    s.zones = ["shop"]
    let schedules = ScheduleStore(calendar: SystemLocalCalendar())
    #expect(schedules.load(Array("schedule shop mon-sun 00:00-24:00\n".utf8)) == nil)
    engine.policy.schedules = schedules
    let signed = try CredentialIssuer.issue(s, kid: kid, issuerSeed: issuer)
    var r = PassClaims(subject: "carol", expires: now + 3600, id: [4, 5, 6])
    r.rotatingDigits = 6
    r.sitePublicKey = CredentialIssuer.sitePublicKey(siteSecret)!
    let rotating = try CredentialIssuer.issue(r, kid: kid, issuerSeed: issuer)
    let code = rotating.seed.withUnsafeBytes { TOTP.value(key: $0, step: now / 30, digits: 6, crypto: crypto) }
    func place(_ text: String) -> [UInt8] {
      let qr = renderQRCode(text: text, scale: 3)!.image
      var pixels = [UInt8](repeating: 180, count: Self.width * Self.height)
      for y in 0..<qr.height { for x in 0..<qr.width { pixels[(y + 60) * Self.width + x + 160] = qr.pixels[y * qr.width + x] } }
      return pixels
    }
    let empty = [UInt8](repeating: 180, count: Self.width * Self.height)
    let frames = [empty, place(signed.staticText), place(rotating.presented(totp: code))]
    let script: [ScriptedFrameSource.Step] = [0, 1, 0, 2].flatMap { Array(repeating: ScriptedFrameSource.Step.frame($0), count: 10) }
    var source = ScriptedFrameSource(width: Self.width, height: Self.height, frames: frames, script: script, loops: true, clock: clock)
    func run(_ frames: Int) throws {
      for _ in 0..<frames {
        _ = try source.withNextFrame(timeoutMilliseconds: 0) { engine.process($0) }
        clock.advance(milliseconds: 10)
        engine.tick()
      }
    }
    try run(80)  // warm-up: the signed pass granted, the rotating one granted once
    let grantsBefore = engine.stats.grants, deniesBefore = engine.stats.denies
    var allocations: UInt64 = 0
    // Local time is read on the decisions: no test may change TZ meanwhile (TimeZoneGuard).
    try TimeZoneGuard.withLock {
      alloc_counter_reset()
      try run(400)  // 4 s: the rotating code stays inside its TOTP window and is replayed
      allocations = alloc_counter_mallocs()
    }
    #expect(allocations == 0, "\(allocations) allocations (\(alloc_counter_bytes()) bytes) in 400 frames")
    #expect(engine.stats.grants - grantsBefore >= 8, "the static signed pass was granted each time it came back")
    #expect(engine.stats.denies - deniesBefore >= 8, "the rotating pass, shown again in the same step, was replayed")
    #expect(engine.policy.credentials!.lastProblem == .replayed || engine.policy.credentials!.lastProblem == nil)
  }

  @Test("accepted rotating steps and used or counted passes are made durable without allocating")
  func durableCredentialStateDoesNotAllocate() throws {
    let cache = ReplayCache(capacity: 64)
    let folder = temporaryDirectory("alloc-replay")
    let steps = folder + "/replay-steps", used = folder + "/used-passes"
    defer {
      unlink(steps)
      unlink(used)
    }
    let store = try ReplayStepFile(path: steps, cache: cache)
    let usedFile = try UsedCredentialFile(path: used, capacity: 64)
    let ids = (0..<32).map { i in [UInt8(i), 7, 7].withUnsafeBytes { CredentialID($0)! } }
    _ = store.persist(slot: 0, id: ids[0], step: 1)  // warm-up of both paths
    _ = usedFile.recordUse([9, 9].withUnsafeBytes { CredentialID($0)! }, expires: 1, now: 0)
    var ok = true
    var i = 0
    alloc_counter_reset()
    while i < 2 * ids.count {
      let id = ids[i % ids.count]
      let step = Int64(100 + i)
      if let slot = cache.record(id, step: step, expiredBefore: 0) { ok = store.persist(slot: slot, id: id, step: step) && ok }
      // The second round counts a second use of each (a guest pass), in the slot of its first.
      ok = usedFile.recordUse(id, expires: 2_000_000_000, now: 1_000) && ok
      ok = usedFile.usage(id)?.uses == 1 + i / ids.count && ok
      i += 1
    }
    let allocations = alloc_counter_mallocs()
    #expect(ok)
    #expect(allocations == 0, "\(allocations) allocations writing 64 durable slots")
  }

  @Test("uses counted site-wide: each grant's identity, durable record and queued message, and each learned use, allocate nothing")
  func siteUsesDoNotAllocate() throws {
    let folder = temporaryDirectory("alloc-site-uses")
    defer { unlink(folder + "/used-passes") }
    let key = [UInt8](repeating: 7, count: 32).withUnsafeBytes { TagKey(bytes: $0, persistent: false) }
    let uses = SiteUses(
      readerID: "north", topicPrefix: "scangate", siteKey: key, store: try UsedCredentialFile(path: folder + "/used-passes", capacity: 128),
      offline: .deny, linkConnected: { true })
    let ids = (0..<32).map { i in [UInt8(i), 5, 5].withUnsafeBytes { CredentialID($0)! } }
    _ = uses.recordUse(ids[0], expires: 2_000_000_000, now: 999)  // warm-up of each path (first-use metadata)
    _ = uses.channel.takeOutgoing()
    _ = uses.learn(SiteUses.Item(identity: Digest(words: (99, 2, 3, 4)), unixMilliseconds: 1_000_000, expires: 2_000_000_000, tag: 99))
    var ok = true
    alloc_counter_reset()
    var i = 0
    while i < ids.count {
      let id = ids[i]
      ok = uses.countsNow && ok
      ok = uses.recordUse(id, expires: 2_000_000_000, now: 1_000 + Int64(i)) && ok
      ok = (uses.usage(id)?.uses ?? 0) >= 1 && ok
      // A use another reader made, as the link's thread hands it over.
      let learned = SiteUses.Item(identity: Digest(words: (UInt64(i) + 1, 2, 3, 4)), unixMilliseconds: 1_000_000, expires: 2_000_000_000, tag: UInt64(i) + 1)
      ok = uses.learn(learned) && ok
      _ = uses.channel.takeOutgoing()
      i += 1
    }
    let allocations = alloc_counter_mallocs()
    #expect(ok)
    #expect(allocations == 0, "\(allocations) allocations over 32 site-counted grants and 32 learned uses")
  }

  @Test("the run loop (poll, replay source, engine, GPIO) allocates nothing per iteration")
  func runLoopDoesNotAllocate() throws {
    let directory = Self.scratchDirectory("run")
    defer { Self.remove(directory) }
    let clock = SystemMonotonicClock()
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
    // The service's relay watchdog rides along: arming, disarming and the per-tick trip check
    // are on the frame path too. Made before the loop, so nothing throws once the loop (a
    // ~Copyable value) exists: Swift 6.2.3's move-only checker (Debian's swiftlang, built with
    // assertions) aborts on this function otherwise (docs/arm64.md).
    let watchdog = try RelayWatchdog(simulated: relay)
    defer { watchdog.stop() }
    var loop = try Self.replayLoop(directory, allowList: "text:ALICE-0001\ntext:DAVE-0004\n", relay: relay, clock: clock)
    loop.engine.relayGuard = watchdog
    #expect(loop.reloadAllowList() == nil)
    for _ in 0..<240 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let framesBefore = loop.engine.stats.frames
    alloc_counter_reset()
    for _ in 0..<1_200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,200 loop iterations")
    #expect(loop.engine.stats.frames - framesBefore >= 1_000)
    #expect(loop.engine.stats.grants > 0)
    // Armed at least once (a fast release build may run all 1,200 iterations inside the warm-up's
    // pulse, so the count is not taken from the measured stretch alone); never tripped.
    #expect(watchdog.arms > 0 && watchdog.trips == 0)
  }

  @Test("two cameras in one loop (a turnstile's entry and exit: frames in turn, the real decoder, grants by camera) allocate nothing per iteration")
  func twoCamerasDoNotAllocate() throws {
    let directory = "/tmp/scangate-alloc-pair-\(getpid())"
    mkdir(directory, 0o755)
    defer {
      for name in (try? listDirectory(directory)) ?? [] { unlink(directory + "/" + name) }
      rmdir(directory)
    }
    // Camera 1 plays ALICE, MALLORY, DAVE (10 frames each) among empty stretches of 60 frames;
    // camera 2 the same scenes in another order, so each camera's codes come and go on their own.
    // The replay runs as fast as the loop does: 60 empty frames outlast leave_after (50 ms) even
    // in a release build (about 3 ms a frame pair here), so codes leave and are granted again
    // while measured (10 empty frames did not: the codes stayed present).
    let frames = Self.frames()
    let script = [0, 1, 0, 2, 0, 3].flatMap { Array(repeating: $0, count: $0 == 0 ? 60 : 10) }
    var raw: [UInt8] = [], rawExit: [UInt8] = []
    for i in script { raw += frames[i] }
    for i in script.reversed() { rawExit += frames[i] }
    try writeFileAtomically(directory + "/entry.gray", raw)
    try writeFileAtomically(directory + "/exit.gray", rawExit)
    let clock = SystemMonotonicClock()
    var settings = Self.settings()
    settings.presence.leaveAfterMilliseconds = 50
    let ring = EventRing(capacity: 1024)
    let engine = ScanEngine(
      settings: settings, decoder: try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8),
      relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000),
      buzzer: RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000), clock: clock, wall: SystemWallClock(),
      digester: SodiumDigester(), events: ring, maxWidth: Self.width, maxHeight: Self.height)
    var loopSettings = LoopSettings()
    loopSettings.allowListPath = nil
    loopSettings.handleSignals = false
    let origin = FrameOrigin()
    func camera(_ name: String) throws(CaptureError) -> ReplayFrameSource {
      try ReplayFrameSource(path: directory + "/" + name, width: Self.width, height: Self.height, framesPerSecond: 0, loops: true, clock: clock)
    }
    var loop = RunLoop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
      try CameraPair(first: camera("entry.gray"), second: camera("exit.gray"), staleAfterMilliseconds: 5_000, origin: origin)
    }
    _ = loop.engine.allowList.load(
      Array("text:ALICE-0001\ntext:DAVE-0004\n".utf8), digester: SodiumDigester(), nowUnixSeconds: SystemWallClock().unixSeconds())
    var config = TurnstileConfig()
    config.machine.enabled = true
    config.machine.passageTimeoutMilliseconds = 300
    config.machine.grantsQueuedMax = 4
    config.direction = .camera
    let entry = RecordingOutputLine(name: "entry", clock: clock, capacity: 100_000)
    let exit = RecordingOutputLine(name: "exit", clock: clock, capacity: 100_000)
    let turnstile = TurnstileController(
      config: config, ring: ring, wall: SystemWallClock(), time: TrustedTime(), now: clock.now(), entryPassage: nil,
      exitPassage: nil, alarmInput: nil, direction: nil, entryUnlock: entry, exitUnlock: exit, alarm: nil, passbackPath: nil,
      occupancyPath: nil)
    turnstile.frameOrigin = origin
    loop.engine.outcome = .turnstile(turnstile)
    loop.register(turnstile)
    for _ in 0..<240 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let framesBefore = loop.engine.stats.frames, entryBefore = entry.edgeCount, exitBefore = exit.edgeCount
    alloc_counter_reset()
    for _ in 0..<1_200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,200 loop iterations with two cameras")
    #expect(loop.engine.stats.frames - framesBefore >= 1_000)
    #expect(entry.edgeCount > entryBefore && exit.edgeCount > exitBefore, "both directions unlocked while measured")
  }

  typealias EmptyFrameLoop = RunLoop<
    ScriptedFrameSource, ZXingDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock, SodiumDigester
  >

  typealias ReplayLoop = RunLoop<
    ReplayFrameSource, ZXingDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock, SodiumDigester
  >

  /// A folder of this test's own under /tmp (removed with `remove`).
  static func scratchDirectory(_ name: String) -> String {
    let directory = "/tmp/scangate-alloc-\(name)-\(getpid())"
    mkdir(directory, 0o755)
    return directory
  }

  static func remove(_ directory: String) {
    for name in (try? listDirectory(directory)) ?? [] { unlink(directory + "/" + name) }
    rmdir(directory)
  }

  /// The service's loop over a replayed reel of `script` (written into `directory`), the real
  /// decoder and `allowList` (reloaded from its file in `directory`), presence leaving after 50 ms.
  static func replayLoop(
    _ directory: String, allowList: String, relay: RecordingOutputLine, clock: SystemMonotonicClock
  ) throws
    -> ReplayLoop
  {
    var raw: [UInt8] = []
    let frames = Self.frames()
    for step in Self.script { if case .frame(let i) = step { raw += frames[i] } }
    try writeFileAtomically(directory + "/frames.gray", raw)
    try writeFileAtomically(directory + "/allow-list.txt", Array(allowList.utf8))
    var settings = Self.settings()
    settings.presence.leaveAfterMilliseconds = 50
    let engine = ScanEngine(
      settings: settings, decoder: try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8), relay: relay,
      buzzer: RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000), clock: clock, wall: SystemWallClock(),
      digester: SodiumDigester(), events: EventRing(capacity: 1024), maxWidth: Self.width, maxHeight: Self.height)
    var loopSettings = LoopSettings()
    loopSettings.allowListPath = directory + "/allow-list.txt"
    loopSettings.handleSignals = false
    let path = directory + "/frames.gray"
    return RunLoop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
      try ReplayFrameSource(path: path, width: Self.width, height: Self.height, framesPerSecond: 0, loops: true, clock: clock)
    }
  }

  /// The real loop on small empty frames (what is measured is a participant, not the decoder),
  /// driving `relay` and a recording buzzer.
  static func emptyFrameLoop(clock: SystemMonotonicClock, ring: EventRing, relay: RecordingOutputLine) throws -> EmptyFrameLoop {
    let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
    let engine = ScanEngine(
      settings: settings(), decoder: try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8), relay: relay,
      buzzer: buzzer, clock: clock, wall: SystemWallClock(), digester: SodiumDigester(), events: ring,
      maxWidth: width, maxHeight: height)
    var loopSettings = LoopSettings()
    loopSettings.allowListPath = nil
    loopSettings.handleSignals = false
    let empty = [UInt8](repeating: 200, count: 160 * 120)
    let loop = RunLoop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
      ScriptedFrameSource(width: 160, height: 120, frames: [empty], loops: true, clock: clock)
    }
    return loop
  }

  /// Runs `loop` for at least `minimum` iterations and until `until`, counting allocations.
  static func measure(
    _ loop: inout EmptyFrameLoop, iterations minimum: Int, until: Instant, clock: SystemMonotonicClock
  ) -> (allocations: UInt64, iterations: Int) {
    var iterations = 0
    alloc_counter_reset()
    while iterations < minimum || (clock.now() < until && iterations < 1_000_000) {
      loop.runOnce(maximumWaitMilliseconds: 5)
      iterations &+= 1
    }
    return (alloc_counter_mallocs(), iterations)
  }

  @Test("the door on the loop (edges, bounce, exit releases, relocks, alarm) allocates nothing per iteration")
  func doorDoesNotAllocate() throws {
    let clock = SystemMonotonicClock()
    let alarm = RecordingOutputLine(name: "alarm", clock: clock, capacity: 100_000)
    let ring = EventRing(capacity: 1024)
    var loop = try Self.emptyFrameLoop(clock: clock, ring: ring, relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000))
    let contact = SimulatedInputLine(capacity: 8_192)
    let exitButton = SimulatedInputLine(capacity: 8_192)
    let tamper = SimulatedInputLine(capacity: 8_192)
    // Over 30 s: every 600 ms an exit press, the door opening with 6 bounce edges, closing 200 ms
    // later (relock); every 1.2 s the door forced; tamper toggling every 3 s.
    let start = clock.now()
    for cycle in 0..<50 {
      let t = start.adding(milliseconds: 100 + cycle * 600)
      exitButton.schedule(.active, at: t)
      exitButton.schedule(.inactive, at: t.adding(milliseconds: 60))
      var level = LineLevel.active
      for k in 0..<7 {
        contact.schedule(level, at: t.adding(milliseconds: 150 + k))
        level = level == .active ? .inactive : .active
      }
      contact.schedule(.inactive, at: t.adding(milliseconds: 350))
      if cycle % 2 == 1 {
        contact.schedule(.active, at: t.adding(milliseconds: 450))
        contact.schedule(.inactive, at: t.adding(milliseconds: 520))
      }
      if cycle % 5 == 0 { tamper.schedule(cycle % 10 == 0 ? .active : .inactive, at: t.adding(milliseconds: 30)) }
    }
    var doorSettings = DoorSettings()
    doorSettings.enabled = true
    doorSettings.forcedAlarmMilliseconds = 100
    doorSettings.debounceMilliseconds = [20, 20, 20]
    let door = DoorController(
      settings: doorSettings, ring: ring, wall: SystemWallClock(), now: start, contact: contact, exitButton: exitButton,
      tamper: tamper, alarm: alarm)
    loop.register(door)
    // Warm-up through the script's first 1.3 s, so every kind of door event (an exit release,
    // a bounce, a relock, the first forced opening at 1.15 s) has run once: what a path does
    // the first time (the runtime instantiating a generic type's metadata) is not per iteration.
    // Two hundred fast iterations ended before the first exit press, and the count then depended
    // on how fast the machine was.
    let warm = start.adding(milliseconds: 1_300)
    while clock.now() < warm { loop.runOnce(maximumWaitMilliseconds: 5) }
    let edgesBefore = door.machine.rawEdges, exitsBefore = door.machine.exitRequests
    let forcedBefore = door.machine.forcedCount
    // At least 1,200 iterations and at least 1.3 s of the script past the warm-up (the next
    // forced opening at 2.35 s): iterations a second depend on the engine and the machine.
    let until = max(start.adding(milliseconds: 2_600), clock.now().adding(milliseconds: 1_300))
    let (allocations, iterations) = Self.measure(&loop, iterations: 1_200, until: until, clock: clock)
    #expect(allocations == 0, "\(allocations) allocations in \(iterations) loop iterations with the door")
    #expect(door.machine.rawEdges > edgesBefore && door.machine.exitRequests > exitsBefore)
    #expect(door.machine.forcedCount > forcedBefore)
  }

  @Test("a PIN after the pass on the loop (pin-required, keys from the keypad, the keyed check, the grant through the request queue) allocates nothing")
  func pinEntryDoesNotAllocate() throws {
    let directory = Self.scratchDirectory("pin")
    defer { Self.remove(directory) }
    let key = [UInt8](repeating: 0x42, count: 32)
    let pin = key.withUnsafeBytes { k in
      Array("2468".utf8).withUnsafeBytes { p in
        Array("ALICE-0001".utf8).withUnsafeBytes { PinMAC.verifier(key: k, digest: SodiumDigester().sha256($0), pin: p) }
      }
    }
    let pinHex = Hex.string((0..<32).map { pin.byte($0) })
    let clock = SystemMonotonicClock()
    var loop = try Self.replayLoop(
      directory, allowList: "text:ALICE-0001 label=alice pin=\(pinHex)\ntext:DAVE-0004\n",
      relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000), clock: clock)
    #expect(loop.reloadAllowList() == nil)
    let keys = PipeKeys()
    var keypadSettings = KeypadSettings()
    keypadSettings.device = "/dev/input/test-keypad"
    let keypad = try KeypadController(
      settings: keypadSettings, source: keys, sourceName: keypadSettings.device, pinKey: key, wall: SystemWallClock(), time: TrustedTime(),
      attemptPath: directory + "/pin-attempts")
    loop.engine.secondFactor = keypad
    loop.register(keypad)
    // The keypad types "*2468#" every 7th turn, in one write (the loop reads it whole): ALICE's
    // pass waits for it, DAVE's (no pin=) is granted at once, MALLORY's is refused.
    let typed = Array("*2468#".utf8)
    func turns(_ n: Int) {
      typed.withUnsafeBytes { bytes in
        for i in 0..<n {
          if i % 7 == 0 { keys.type(bytes: bytes) }
          loop.runOnce(maximumWaitMilliseconds: 5)
        }
      }
    }
    turns(240)
    let grantedBefore = keypad.granted, grantsBefore = loop.engine.stats.grants
    alloc_counter_reset()
    turns(1_200)
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,200 loop iterations with PIN entries")
    #expect(keypad.granted > grantedBefore, "no PIN was taken (\(keypad.granted) granted, \(keypad.wrong) wrong)")
    #expect(loop.engine.stats.grants > grantsBefore)
  }

  @Test("the turnstile on the loop (grants through its gate, anti-passback made durable, passages, timeouts, occupancy) allocates nothing")
  func turnstileDoesNotAllocate() throws {
    let clock = SystemMonotonicClock()
    let ring = EventRing(capacity: 1024)
    var loop = try Self.emptyFrameLoop(clock: clock, ring: ring, relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000))
    let dir = temporaryDirectory("alloc-turnstile")
    defer { removeTree(dir) }  // the passback and occupancy files, and the state files' list
    let entryPassage = SimulatedInputLine(capacity: 8_192)
    var config = TurnstileConfig()
    config.machine.enabled = true
    config.machine.passageTimeoutMilliseconds = 300
    config.machine.debounceMilliseconds = 10
    config.machine.grantsQueuedMax = 4
    config.passback.mode = .hard
    let turnstile = TurnstileController(
      config: config, ring: ring, wall: SystemWallClock(), time: TrustedTime(), now: clock.now(), entryPassage: entryPassage,
      exitPassage: nil, alarmInput: nil, direction: nil, entryUnlock: RecordingOutputLine(name: "entry", clock: clock, capacity: 100_000),
      exitUnlock: nil, alarm: RecordingOutputLine(name: "alarm", clock: clock, capacity: 100_000), passbackPath: dir + "/passback",
      occupancyPath: dir + "/occupancy")
    loop.register(turnstile)
    let label = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
    defer { label.deallocate() }
    for (i, b) in "visitor1".utf8.enumerated() { label[i] = b }
    // Every 400 ms a new person is granted; two of three walk through 60 ms later (the sensor
    // closes for 30 ms, scripted up front as the door test does), the third never does
    // (granted-not-passed at the timeout, its record given back).
    let start = clock.now()
    for k in 1...40 where k % 3 != 0 {
      let at = start.adding(milliseconds: k * 400)
      entryPassage.schedule(.active, at: at.adding(milliseconds: 60))
      entryPassage.schedule(.inactive, at: at.adding(milliseconds: 90))
    }
    var person: UInt64 = 0
    func step() {
      let now = clock.now()
      if now >= start.adding(milliseconds: Int(person + 1) * 400) {
        person &+= 1
        let who = Digest(words: (person, ~person, person &* 31, 7))
        _ = turnstile.admit(identity: who, label: UnsafeRawBufferPointer(label), tag: .zero, at: now)
      }
      loop.runOnce(maximumWaitMilliseconds: 5)
    }
    // Warm-up: a passage, a timeout and a give-back have each run once.
    while clock.now() < start.adding(milliseconds: 1_800) { step() }
    let passedBefore = turnstile.machine.passageCount(.entry), unusedBefore = turnstile.machine.grantedNotPassedCount
    var iterations = 0
    let until = clock.now().adding(milliseconds: 1_500)
    alloc_counter_reset()
    while iterations < 600 || clock.now() < until {
      step()
      iterations += 1
    }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations (\(alloc_counter_bytes()) bytes) in \(iterations) iterations with the turnstile")
    #expect(turnstile.machine.passageCount(.entry) > passedBefore && turnstile.machine.grantedNotPassedCount > unusedBefore)
    #expect(turnstile.refusedNotDurable == 0)
  }

  @Test("the panel's beeper and LED wires into a Wiegand reader, followed on the loop, allocate nothing per iteration")
  func wiegandFeedbackDoesNotAllocate() throws {
    let clock = SystemMonotonicClock()
    let ring = EventRing(capacity: 1024)
    var loop = try Self.emptyFrameLoop(clock: clock, ring: ring, relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000))
    let beeper = SimulatedInputLine(capacity: 8_192), led = SimulatedInputLine(capacity: 8_192)
    let start = clock.now()
    for k in 0..<400 {  // 20 s: the beeper on for 25 ms every 50 ms, the LED toggling every 300 ms
      beeper.schedule(.active, at: start.adding(milliseconds: 100 + k * 50))
      beeper.schedule(.inactive, at: start.adding(milliseconds: 125 + k * 50))
      if k % 6 == 0 { led.schedule(k % 12 == 0 ? .active : .inactive, at: start.adding(milliseconds: 110 + k * 50)) }
    }
    let feedback = WiegandFeedback(beeper: beeper, led: led, ring: ring, wall: SystemWallClock())
    loop.register(feedback)
    for _ in 0..<200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let before = feedback.activations[0]
    let (allocations, iterations) = Self.measure(&loop, iterations: 1_200, until: clock.now().adding(milliseconds: 1_300), clock: clock)
    #expect(allocations == 0, "\(allocations) allocations in \(iterations) loop iterations following the panel's wires")
    #expect(feedback.activations[0] - before >= 20, "\(feedback.activations[0] - before) beeps")
  }

  /// Asks for a snapshot every 20 iterations, as the fleet link's requests do.
  final class SnapshotAsker: PollParticipant {
    let sink: FleetSnapshot
    var turns = 0
    init(_ sink: FleetSnapshot) { self.sink = sink }
    var pollCapacity: Int { 0 }
    func prepare(_ poll: PollSet, now: Instant) -> Instant? { nil }
    func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
      turns &+= 1
      if turns % 20 == 0 { requests.post(.snapshot(sink)) }
    }
  }

  @Test("a fleet snapshot handed over by the loop (capture, copy into the fleet's buffer) allocates nothing")
  func fleetSnapshotDoesNotAllocate() throws {
    let clock = SystemMonotonicClock()
    var loop = try Self.emptyFrameLoop(
      clock: clock, ring: EventRing(capacity: 1024), relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000))
    let sink = FleetSnapshot(policy: .redacted, maxWidth: Self.width, maxHeight: Self.height)
    loop.register(SnapshotAsker(sink))
    for _ in 0..<200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let before = sink.generation
    alloc_counter_reset()
    for _ in 0..<1_200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,200 loop iterations handing over snapshots")
    #expect(sink.generation - before >= 30, "\(sink.generation - before) snapshots handed over")
  }

  @Test("an unlock window on the loop (local time through tzdata, the hold renewed) allocates nothing per iteration")
  func unlockWindowDoesNotAllocate() throws {
    let clock = SystemMonotonicClock()
    let ring = EventRing(capacity: 1024)
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000)
    var loop = try Self.emptyFrameLoop(clock: clock, ring: ring, relay: relay)
    let store = ScheduleStore(calendar: SystemLocalCalendar())
    #expect(store.load(Array("schedule always mon-sun 00:00-24:00\nunlock always\n".utf8)) == nil)
    let keeper = UnlockWindowKeeper(store: store, ring: ring, wall: SystemWallClock(), now: clock.now(), clockTrusted: { true })
    loop.register(keeper)
    for _ in 0..<200 { loop.runOnce(maximumWaitMilliseconds: 5) }
    #expect(keeper.holding)
    // At least 600 iterations and 3 s: three schedule checks and three lease renewals at least.
    let until = clock.now().adding(milliseconds: 3_000)
    var (allocations, iterations): (UInt64, Int) = (0, 0)
    try TimeZoneGuard.withLock { (allocations, iterations) = Self.measure(&loop, iterations: 600, until: until, clock: clock) }
    #expect(allocations == 0, "\(allocations) allocations in \(iterations) loop iterations holding an unlock window")
    #expect(relay.level == .active && relay.edgeCount == 1)
  }
}

/// The counter itself: it must see Swift and C++ allocations, or a 0 above would mean nothing.
@Suite struct AllocationCounterTests {
  @Test("a Swift array allocation is counted")
  func countsSwift() {
    alloc_counter_reset()
    let array = [Int](repeating: 7, count: Int(getpid() % 2) + 100)
    #expect(alloc_counter_mallocs() >= 1)
    #expect(array.count >= 100)
  }

  @Test("the engine's C++ allocations are counted when the arena is off, and are gone with it on")
  func countsEngine() throws {
    let image = renderQRCode(Array("COUNT".utf8), scale: 4)!
    var withoutArena = try ZXingDecoder(arenaBytes: 0, capacity: 4)
    var withArena = try ZXingDecoder(arenaBytes: 8 << 20, capacity: 4)
    var results = DecodeResults(capacity: 4, payloadBytesMax: 64)
    for _ in 0..<3 {
      image.withFrame { withoutArena.decode($0, formats: .qrCode, into: &results) }
      image.withFrame { withArena.decode($0, formats: .qrCode, into: &results) }
    }
    alloc_counter_reset()
    image.withFrame { withoutArena.decode($0, formats: .qrCode, into: &results) }
    let plain = alloc_counter_mallocs()
    alloc_counter_reset()
    image.withFrame { withArena.decode($0, formats: .qrCode, into: &results) }
    let arena = alloc_counter_mallocs()
    #expect(plain > 10, "zxing-cpp made \(plain) allocations without the arena")
    #expect(arena == 0, "\(withArena.stats)")
    #expect(results.count == 1)
  }
}

/// The aiming aid's capture runs on the frame path: it must not allocate either.
@Suite struct SnapshotAllocationTests {
  @Test("capturing a snapshot frame (copy, codes, verdicts, geometry) allocates nothing")
  func captureDoesNotAllocate() throws {
    let clock = ManualClock()
    var engine = ScanEngine(
      settings: EngineSettings(), decoder: try ZXingDecoder(arenaBytes: 8 << 20, capacity: 8),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: clock, digester: SodiumDigester(), events: EventRing(capacity: 64), maxWidth: 640, maxHeight: 480)
    let frames = HotPathAllocationTests.frames()
    for round in 0..<3 {
      frames[1].withUnsafeBytes { raw in
        engine.captureSnapshot = true
        if round == 2 { alloc_counter_reset() }
        engine.process(LumaFrame(bytes: raw, geometry: .gray(width: 640, height: 480), captured: clock.now(), sequence: UInt64(round)))
      }
      clock.advance(milliseconds: 40)
    }
    let allocations = alloc_counter_mallocs()
    let symbols = engine.snapshot.symbolCount
    #expect(allocations == 0)
    #expect(symbols == 1)
  }
}

/// A libcamera camera's frames, counted: runs only where a camera is (the rig's vimc sets
/// SCANGATE_LIBCAMERA_CAMERA). The loop thread's count covers the Swift source, the shim and
/// the libcamera calls the shim makes on that thread (Request::reuse, Camera::queueRequest);
/// the process count adds libcamera's own threads (its pipeline handler and IPA proxy).
@Suite(.serialized) struct LibcameraAllocationTests {
  static let camera = getenv("SCANGATE_LIBCAMERA_CAMERA").map { String(cString: $0) }

  @Test("libcamera frames: allocations per frame after warm-up, on the loop thread and in all", .enabled(if: camera != nil))
  func libcameraFrames() throws {
    var settings = LibcameraSourceSettings(width: 640, height: 480, fps: 30, buffers: 4)
    settings.camera.camera = Self.camera ?? ""
    var source = try LibcameraFrameSource(settings)
    var checksum = 0
    func take(_ frames: Int) throws -> Int {
      var got = 0
      for _ in 0..<(frames * 20) where got < frames {
        if try source.withNextFrame(timeoutMilliseconds: 1_000, { checksum &+= Int($0.luma(x: 1, y: 1)) }) != nil { got += 1 }
      }
      return got
    }
    #expect(try take(20) == 20)  // warm-up
    let frames = 100
    let processBefore = alloc_counter_process_mallocs()
    alloc_counter_reset()
    let got = try take(frames)
    let loopThread = alloc_counter_mallocs(), loopBytes = alloc_counter_bytes()
    let process = alloc_counter_process_mallocs() - processBefore
    print(
      "libcamera \(LibcameraFrameSource.libraryVersion) \(source.summary): \(got) frames; allocations per frame: "
        + "loop thread \(Double(loopThread) / Double(max(got, 1))) (\(loopBytes / UInt64(max(got, 1))) bytes), "
        + "all threads \(Double(process) / Double(max(got, 1))); dropped \(source.droppedFrames)")
    #expect(got == frames)
  }
}
