import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Synchronization

/// `scangate soak`: the fixed-memory soak benchmark. Replays generated 640×480 scenes (listed,
/// unknown and inverted QR codes between empty frames) through the real loop (poll, replay
/// source, zxing-cpp, presence, decisions, simulated GPIO) as fast as it will go, and prints
/// resident memory every `--every` frames as CSV, then throughput and latency percentiles.
public enum SoakCommand {
  public static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try SoakOptions(arguments)
      let width = 640, height = 480
      let directory = DemoCommand.makeTemporaryDirectory()
      defer { DemoCommand.removeDirectory(directory) }
      var config = ScanConfig()
      let (frames, steps) = try prepare(options, in: directory, config: &config, width: width, height: height)
      let clock = SystemMonotonicClock()
      let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 16)
      let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 16)
      var engine = ScanEngine(
        settings: config.engine,
        decoder: try Service.makeDecoder(config),
        relay: relay, buzzer: buzzer, clock: clock, wall: SystemWallClock(), digester: SodiumDigester(),
        events: EventRing(capacity: config.eventRingCapacity), maxWidth: width, maxHeight: height)
      var settings = Service.loopSettings(config, maxFrames: 0)
      settings.watchAllowList = false
      engine.tagger = TagKey.ephemeral()  // every decision keyed as the service does
      config.allowListWatch = false
      let consoleClients = options.consoleClients
      let (console, load) = consoleClients >= 0 ? try loadedConsole(idle: consoleClients, clock: clock) : (nil, nil)
      var loop = RunLoop(engine: engine, settings: settings, console: console) { () throws(CaptureError) in
        ScriptedFrameSource(width: width, height: height, frames: frames, script: steps, loops: true, clock: clock)
      }
      Service.installCredentials(config, loop: &loop)
      if let error = loop.reloadAllowList() { throw ParseError(message: "allow-list: \(error)") }
      print("frames,rss_kib,seconds,grants,denies")
      load?.start()
      let (s, seconds, rssFirst) = measure(&loop, options: options, clock: clock)
      load?.stop()
      if let load {
        print(
          "# console: \(consoleClients) idle clients, 1 watching (\(load.watchedLines.load(ordering: .relaxed)) event lines), "
            + "STATUS round trips \(formatMilliseconds(Double(load.commands.load(ordering: .relaxed)) / seconds)) per second")
      }
      let rssLast = residentKiB()
      report(
        s, seconds: seconds, rss: (rssFirst, rssLast), arena: loop.engine.pipeline.decoder.stats,
        views: config.engine.decode.variantMode.rawValue)
      if let path = options.histogram { try writeHistogram(s, to: path) }
      loop.finish()
      return 0
    } catch {
      writeStandardError("scangate soak: \(error)\n")
      return 2
    }
  }

  /// The soak's command-line options.
  struct SoakOptions {
    /// Idle console clients (-1: no console).
    var consoleClients: Int
    var frameLimit: Int
    /// Frames between memory reports.
    var every: Int
    /// `--passes`, `--variants` and `--histogram` as given (checked where they are used).
    var passes: String?
    var variants: String?
    var histogram: String?

    /// Parses `arguments`: unknown options and out-of-range numbers are errors.
    init(_ arguments: [String]) throws(ParseError) {
      let options = try Options(
        arguments, valued: ["frames", "every", "variants", "histogram", "console-clients", "passes"], known: [])
      consoleClients = try options.integer("console-clients", default: -1, range: -1...1_000)
      frameLimit = try options.integer("frames", default: 100_000, range: 1...100_000_000)
      every = try options.integer("every", default: max(1, frameLimit / 20), range: 1...100_000_000)
      passes = options.value("passes")
      variants = options.value("variants")
      histogram = options.value("histogram")
    }
  }

  /// The loop the soak drives: replayed scenes, zxing-cpp, recorded relay and buzzer.
  typealias SoakLoop = RunLoop<
    ScriptedFrameSource, ZXingDecoder, RecordingOutputLine, RecordingOutputLine, SystemMonotonicClock, SystemWallClock,
    SodiumDigester
  >

  /// The scenes (with `--passes`, signed ones) and the allow-list written into `directory`, and
  /// the soak's settings in `config`; returns the frames and their script.
  static func prepare(
    _ options: SoakOptions, in directory: String, config: inout ScanConfig, width: Int, height: Int
  ) throws -> ([[UInt8]], [ScriptedFrameSource.Step]) {
    var (frameImages, script) = scenes(width: width, height: height)
    // --passes signed|rotating: the same scenes with signed passes instead of the static
    // entries (the verification cost on the frame-to-edge path, measured against the same run
    // with the allow-list).
    if let passes = options.passes, passes != "allow-list" {
      guard passes == "signed" || passes == "rotating" else { throw ParseError(message: "--passes allow-list|signed|rotating") }
      (frameImages, script) = try SoakPasses.scenes(rotating: passes == "rotating", in: directory, config: &config, width: width, height: height)
    }
    try writeFileAtomically(directory + "/allow-list.txt", Array("text:ALICE-0001\ntext:DAVE-0004\n".utf8))

    config.gpio.backend = .sim
    config.allowListPath = directory + "/allow-list.txt"
    config.allowListWatch = false
    config.engine.presence.leaveAfterMilliseconds = 50
    config.engine.presence.cooldownMilliseconds = 0
    config.engine.actuation.relayPulseMilliseconds = 100
    if let mode = options.variants {
      guard let m = VariantMode(rawValue: mode) else { throw ParseError(message: "--variants is upright, retry or alternate") }
      config.engine.decode.variantMode = m
    }
    return (frameImages, script)
  }

  /// The timed run: the loop until `--frames`, a CSV line of resident memory every `--every`
  /// frames; returns the stats, the seconds it took and the first resident size.
  static func measure(_ loop: inout SoakLoop, options: SoakOptions, clock: SystemMonotonicClock) -> (ScanStats, Double, Int) {
    let start = clock.now()
    var nextReport: UInt64 = 0
    var rssFirst = 0
    while loop.engine.stats.frames < UInt64(options.frameLimit) && !loop.stopRequested {
      loop.runOnce(maximumWaitMilliseconds: 10)
      let done = loop.engine.stats.frames
      if done >= nextReport {
        let rss = residentKiB()
        if nextReport == 0 { rssFirst = rss }
        let s = loop.engine.stats
        print("\(done),\(rss),\(formatMilliseconds(Double(clock.now().microseconds(since: start)) / 1_000_000)),\(s.grants),\(s.denies)")
        flushStandardOutput()
        nextReport += UInt64(options.every)
      }
    }
    let s = loop.engine.stats
    let seconds = Double(clock.now().microseconds(since: start)) / 1_000_000
    return (s, seconds, rssFirst)
  }

  /// Three codes, each in view for 10 frames, then long enough away (> leave_after_ms) to leave.
  static func scenes(width: Int, height: Int) -> ([[UInt8]], [ScriptedFrameSource.Step]) {
    let empty = DemoCommand.background(width: width, height: height)
    var frameImages = [empty]
    var script: [ScriptedFrameSource.Step] = []
    let scenes: [(String, ImageVariant)] = [("ALICE-0001", .upright), ("MALLORY-9999", .upright), ("DAVE-0004", .inverted)]
    for (n, scene) in scenes.enumerated() {
      let code = renderQRCode(Array(scene.0.utf8), scale: 6)!
      frameImages.append(DemoCommand.place(code, variant: scene.1, on: empty, width: width, height: height, shift: n * 30))
      script += Array(repeating: .frame(n + 1), count: 10)
      script += Array(repeating: .frame(0), count: 200)
    }
    return (frameImages, script)
  }

  /// A console on a loopback port with `idle` idle clients, a watcher and a STATUS stream.
  static func loadedConsole(idle: Int, clock: SystemMonotonicClock) throws -> (ConsoleServer<SystemMonotonicClock>?, ConsoleLoad?) {
    var consoleSettings = ConsoleSettings()
    consoleSettings.listen = ["127.0.0.1:0"]
    consoleSettings.clientsMax = idle + 2
    // The load generator measures what serving the console costs, so its STATUS stream is
    // not throttled by the per-session line budget.
    consoleSettings.limits.linesPerSecond = 1_000_000
    consoleSettings.limits.lineBurst = 1_000_000
    let server = try ConsoleServer(settings: consoleSettings, clock: clock)
    let port = UInt16(server.boundAddresses[0].split(separator: ":").last!)!
    return (server, ConsoleLoad(port: port, idle: idle))
  }

  static func report(_ s: ScanStats, seconds: Double, rss: (Int, Int), arena: DecoderStats, views: String) {
    print(
      "# \(s.frames) frames in \(formatMilliseconds(seconds * 1000)) ms: \(formatMilliseconds(Double(s.frames) / seconds)) frames/s on one core, views \(views)"
    )
    print("# rss first \(rss.0) KiB, last \(rss.1) KiB; decisions \(s.grants) granted, \(s.denies) denied")
    print(
      "# decode p50 \(s.decode.percentile(0.5)) µs p99 \(s.decode.percentile(0.99)) µs; frame-to-decision p50 \(s.frameToDecision.percentile(0.5)) µs p99 \(s.frameToDecision.percentile(0.99)) µs; frame-to-edge p50 \(s.frameToEdge.percentile(0.5)) µs p99 \(s.frameToEdge.percentile(0.99)) µs"
    )
    print(
      "# decoder arena: high water \(arena.arenaHighWaterBytes / 1024) KiB of \(arena.arenaCapacityBytes / 1024) KiB, pinned \(arena.arenaPinnedBytes / 1024) KiB, overflows \(arena.arenaOverflows)"
    )
  }

  static func writeHistogram(_ s: ScanStats, to path: String) throws {
    var text = "upper_us,frame_to_edge,decode\n"
    var rows: [UInt64: (UInt32, UInt32)] = [:]
    for (bound, n) in s.frameToEdge.nonEmptyBuckets { rows[bound, default: (0, 0)].0 = n }
    for (bound, n) in s.decode.nonEmptyBuckets { rows[bound, default: (0, 0)].1 = n }
    for bound in rows.keys.sorted() { text += "\(bound),\(rows[bound]!.0),\(rows[bound]!.1)\n" }
    try writeFileAtomically(path, Array(text.utf8))
  }

  /// Resident set size from /proc/self/statm, in KiB.
  public static func residentKiB() -> Int {
    guard let bytes = try? readWholeFile("/proc/self/statm", maxBytes: 4096) else { return 0 }
    let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
  }
}
