import ScanCore
import ScanLinux
import ScanService
import ScanSim

/// Codes shown to a door as a camera shows them: each scene's frame held for `hold` after `gap`
/// of an empty view, through the reader's engine (the strategy within its budget, presence,
/// decision, relay), in this process (no loop, no decoder worker). Measures, per scene, the time
/// from the first frame that shows the code to the first edge of its decision: the relay's for
/// a grant (every scene's payload is on the allow-list), the buzzer's when a code read differs
/// from the one expected. Frames come as fast as the engine takes them; the engine's
/// clock moves on by a frame period per frame as well (`StreamHarness.StreamClock`), so a code
/// read on the third frame at 15 fps costs two frame periods plus the decode.
enum SceneHarness {
  struct Scene {
    var name: String
    /// `width` × `height` gray pixels.
    var frame: [UInt8]
    /// Payloads put on the allow-list for this scene (its codes).
    var payloads: [[UInt8]]
  }

  struct Outcome {
    var name: String
    /// First frame shown to the first edge after it (nil: no decision while the code was in view).
    var microseconds: UInt64? = nil
    /// The decision granted (a relay edge).
    var granted = false
    /// What the scene's first frame's first decode call cost: one engine call on that frame.
    var firstCall: UInt64 = 0
    /// Frames shown until the edge (1: the first frame).
    var frames: Int? = nil
  }

  /// Per-frame figures of the strategy.
  struct FrameFigures {
    var microseconds: [Double] = []
    /// Frames that spent more than the budget plus their dearest attempt.
    var overBound = 0
    var maxOvershoot: UInt64 = 0
  }

  static func play(
    _ scenes: [Scene], width: Int, height: Int, empty: [UInt8], fps: Int, holdMilliseconds: Int, gapMilliseconds: Int,
    settings engineSettings: EngineSettings, trace: Bool
  ) throws(ParseError) -> (outcomes: [Outcome], frames: FrameFigures) {
    var settings = engineSettings
    // Short pulses, so every grant raises an edge of its own.
    settings.actuation.relayPulseMilliseconds = 100
    var playback = try Playback(scenes, width: width, height: height, fps: fps, settings: settings)
    let holdFrames = max(1, fps * holdMilliseconds / 1000), gapFrames = max(1, fps * gapMilliseconds / 1000)
    var outcomes: [Outcome] = []
    for _ in 0..<gapFrames { _ = playback.show(empty) }
    var previous: [[UInt8]] = []
    for scene in scenes {
      // The same code again: past the presence cooldown, as the demo does.
      if !scene.payloads.isEmpty && scene.payloads == previous {
        let extra = fps * (settings.presence.cooldownMilliseconds + settings.presence.leaveAfterMilliseconds) / 1000 + 1
        for _ in 0..<extra { _ = playback.show(empty) }
      }
      previous = scene.payloads
      outcomes.append(playback.hold(scene, frames: holdFrames, trace: trace))
      for f in 1...gapFrames {
        _ = playback.show(empty)
        if trace && f <= 3 { playback.traceLine("(empty after \(scene.name))", frame: f) }
      }
    }
    return (outcomes, playback.figures)
  }

  /// The engine `play` drives: zxing-cpp, recorded relay and buzzer, the stream clock.
  typealias Engine = ScanEngine<
    ZXingDecoder, RecordingOutputLine, RecordingOutputLine, StreamHarness.StreamClock, SystemWallClock, SodiumDigester
  >

  /// One run of `play`: the engine with its clock and recorded lines, and the figures of every
  /// frame shown to it.
  struct Playback: ~Copyable {
    let clock: StreamHarness.StreamClock
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    var engine: Engine
    let width: Int
    let height: Int
    let period: UInt64
    let budget: UInt64
    let attempts: [DecodeAttempt]
    var sequence: UInt64
    var figures: FrameFigures

    /// The engine for `settings` with every scene's payload on its allow-list.
    init(_ scenes: [Scene], width: Int, height: Int, fps: Int, settings: EngineSettings) throws(ParseError) {
      // Locals first, every stored property (none has a default) after the last throw: Swift
      // 6.2's SIL verifier aborts on a throw from this ~Copyable initializer once a property is
      // set, a default included (6.3 accepts it).
      let clock = StreamHarness.StreamClock()
      let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 4 * scenes.count + 16)
      let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 16 * scenes.count + 16)
      let decoder: ZXingDecoder
      do {
        decoder = try ZXingDecoder(
          arenaBytes: ScanConfig().decoder.arenaKiB * 1024, capacity: settings.resultsCapacity, tryHarder: settings.decode.tryHarder)
      } catch { throw ParseError(message: "\(error)") }
      var engine = ScanEngine(
        settings: settings, decoder: decoder, relay: relay, buzzer: buzzer, clock: clock, wall: SystemWallClock(),
        digester: SodiumDigester(), events: EventRing(capacity: 1024), maxWidth: width, maxHeight: height)
      let list = allowListText(scenes)
      if let error = engine.allowList.load(Array(list.utf8), digester: SodiumDigester(), nowUnixSeconds: SystemWallClock().unixSeconds()) {
        throw ParseError(message: "allow-list: \(error)")
      }
      sequence = 0
      figures = FrameFigures()
      self.clock = clock
      self.relay = relay
      self.buzzer = buzzer
      self.engine = engine
      self.width = width
      self.height = height
      period = 1_000_000_000 / UInt64(fps)
      budget = UInt64(settings.decode.budgetMicroseconds)
      attempts = settings.decode.attempts
    }

    /// The next frame: the clock moves on by a period, the engine takes `pixels`; returns when
    /// the frame was captured.
    mutating func show(_ pixels: [UInt8]) -> Instant {
      sequence += 1
      clock.frame(sequence, periodNanoseconds: period)
      let captured = clock.now()
      pixels.withUnsafeBytes { raw in
        engine.process(LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: captured, sequence: sequence))
      }
      let spent = engine.pipeline.lastFrame.microseconds
      figures.microseconds.append(Double(spent))
      let t = engine.pipeline.lastTrace
      var dearest: UInt64 = 0
      for k in 0..<min(t.count, AttemptTrace.capacity) { dearest = max(dearest, UInt64(t[k].microseconds)) }
      if budget > 0 && spent > budget + dearest {
        figures.overBound += 1
        figures.maxOvershoot = max(figures.maxOvershoot, spent - budget - dearest)
      }
      return captured
    }

    /// Shows `scene` for `holdFrames` frames: the time from its first frame to the first edge.
    mutating func hold(_ scene: Scene, frames holdFrames: Int, trace: Bool) -> Outcome {
      let relayBefore = relay.edgeCount, buzzerBefore = buzzer.edgeCount
      var outcome = Outcome(name: scene.name)
      var first: Instant? = nil
      for f in 1...holdFrames {
        let captured = show(scene.frame)
        if first == nil {
          first = captured
          let t = engine.pipeline.lastTrace
          outcome.firstCall = t.count > 0 ? UInt64(t[0].microseconds) : engine.pipeline.lastFrame.microseconds
        }
        if trace { traceLine(scene.name, frame: f) }
        if outcome.microseconds == nil, relay.edgeCount > relayBefore || buzzer.edgeCount > buzzerBefore, let first {
          let relayEdge = relay.edgeCount > relayBefore ? relay.edges[relayBefore].at : nil
          let buzzerEdge = buzzer.edgeCount > buzzerBefore ? buzzer.edges[buzzerBefore].at : nil
          let edge = min(relayEdge ?? buzzerEdge!, buzzerEdge ?? relayEdge!)
          outcome.microseconds = edge.microseconds(since: first)
          outcome.frames = f
          outcome.granted = relayEdge != nil
        }
      }
      return outcome
    }

    /// `--trace`: the last frame's time and each attempt it made.
    func traceLine(_ label: String, frame: Int) {
      let t = engine.pipeline.lastTrace
      var line = "  \(label) frame \(frame): \(engine.pipeline.lastFrame.microseconds) µs"
      if engine.pipeline.lastFrame.quiet { line += " quiet" }
      if engine.pipeline.lastFrame.budgetSpent {
        line += " budget spent" + (t.waiting >= 0 ? " (next: \(attempts[t.waiting].name), \(t.waitingEstimate) µs)" : "")
      }
      for k in 0..<min(t.count, AttemptTrace.capacity) {
        let e = t[k]
        line += "; \(attempts[e.attempt].name) \(e.microseconds)" + (e.found > 0 ? " found \(e.found)" : "")
      }
      print(line)
    }
  }

  /// The allow-list with every scene's payload once, by its SHA-256.
  static func allowListText(_ scenes: [Scene]) -> String {
    var list = ""
    var listed = Set<String>()
    for scene in scenes {
      for payload in scene.payloads {
        let line = "sha256:" + payload.withUnsafeBytes { Hex.string(SodiumDigester().sha256($0)) }
        if listed.insert(line).inserted { list += line + "\n" }
      }
    }
    return list
  }

  /// One line per scene (with `each`), then the summary.
  static func report(_ outcomes: [Outcome], _ figures: FrameFigures, fps: Int, budgetMicroseconds: Int, each: Bool) {
    if each {
      for o in outcomes {
        let verdict = o.granted ? "" : " (denied)"
        print("  \(o.name): " + (o.microseconds.map { "\(formatMilliseconds(Double($0) / 1000)) ms, frame \(o.frames ?? 0)\(verdict)" } ?? "not decided"))
      }
    }
    print(summary(outcomes, figures, fps: fps, budgetMicroseconds: budgetMicroseconds))
  }

  /// The summary line: scenes read, first frame to relay edge, frames to read, CPU per frame.
  static func summary(_ outcomes: [Outcome], _ figures: FrameFigures, fps: Int, budgetMicroseconds: Int) -> String {
    let read = outcomes.compactMap { $0.microseconds.map { Double($0) } }
    let frames = outcomes.compactMap { $0.frames.map { Double($0) } }
    let withinSecond = outcomes.filter { ($0.microseconds ?? .max) <= 1_000_000 }.count
    let granted = outcomes.filter(\.granted).count
    let firstCalls = outcomes.map { Double($0.firstCall) }
    func q(_ v: [Double], _ p: Double) -> Double {
      let s = v.sorted()
      return s.isEmpty ? 0 : s[min(s.count - 1, Int(Double(s.count) * p))]
    }
    let ms = { (v: Double) in formatMilliseconds(v / 1000) }
    return "scenes: \(outcomes.count) at \(fps) fps, \(read.count) decided (\(granted) granted), \(withinSecond) within 1 s; "
      + "first frame to edge ms p50 \(ms(q(read, 0.5))) p99 \(ms(q(read, 0.99))) max \(ms(q(read, 1)))"
      + " (one engine call on a first frame: p50 \(ms(q(firstCalls, 0.5))))"
      + "; frames to read p50 \(Int(q(frames, 0.5))) p90 \(Int(q(frames, 0.9))) max \(Int(q(frames, 1)))"
      + "; per-frame decode ms p50 \(ms(q(figures.microseconds, 0.5))) p99 \(ms(q(figures.microseconds, 0.99))) max \(ms(q(figures.microseconds, 1)))"
      + ", frames over budget (\(budgetMicroseconds / 1000) ms) + their dearest attempt: \(figures.overBound)"
      + (figures.overBound > 0 ? " (by up to \(ms(Double(figures.maxOvershoot))) ms)" : "")
  }
}
