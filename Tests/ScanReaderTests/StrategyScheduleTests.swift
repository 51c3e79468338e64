import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

/// A clock the scripted decoder moves: a decode call costs what its view's size says, and a
/// frame period passes between frames.
final class CostClock: MonotonicClock {
  var nanoseconds: UInt64 = 1_000_000_000
  func now() -> Instant { Instant(nanoseconds: nanoseconds) }
  func advance(microseconds: UInt64) { nanoseconds += microseconds * 1_000 }
}

/// What the scripted decoder was asked, call by call.
final class CallLog {
  struct Call {
    var width: Int
    var height: Int
    var microseconds: UInt64
    var found: [UInt8]
  }
  var calls: [Call] = []
}

/// A decoder for the strategy's schedule, on 320×240 frames (small, so a debug build runs it
/// quickly): a call costs 1 µs per 76.8 pixels of its view (the whole frame: 1 ms, a tile at x2:
/// 1.56 ms, the whole frame at x2: 4 ms), on `clock`. It reads "codes": blocks of one gray level
/// 1...9 (code 1...9) at least 40 pixels wide in the view it is given (a 30-pixel block needs an
/// upscaled view). An inverted view shows a block of level 255 - k as level k, so a light-on-dark
/// code needs the inverted view.
struct ScriptedCostDecoder: CodeDecoder {
  let clock: CostClock
  let log: CallLog

  mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {
    let g = view.geometry
    let cost = UInt64(g.width * g.height) * 10 / 768
    clock.advance(microseconds: cost)
    // Bounding boxes of levels 1...9, sampled every other pixel.
    var x0 = [Int](repeating: Int.max, count: 10), x1 = [Int](repeating: -1, count: 10)
    var y0 = [Int](repeating: Int.max, count: 10), y1 = [Int](repeating: -1, count: 10)
    for y in stride(from: 0, to: g.height, by: 2) {
      for x in stride(from: 0, to: g.width, by: 2) {
        let v = Int(view.luma(x: x, y: y))
        guard v >= 1 && v <= 9 else { continue }
        x0[v] = min(x0[v], x); x1[v] = max(x1[v], x); y0[v] = min(y0[v], y); y1[v] = max(y1[v], y)
      }
    }
    var found: [UInt8] = []
    for v in 1...9 where x1[v] >= 0 && x1[v] - x0[v] + 2 >= 40 && results.count < results.capacity {
      let payload = Array("CODE-\(v)".utf8)
      let storage = results.payloadStorage(results.count)
      payload.withUnsafeBytes { storage.copyMemory(from: $0) }
      var symbol = DecodedSymbol()
      symbol.format = .qrCode
      symbol.byteCount = payload.count
      symbol.corners = [
        Int32(x0[v]), Int32(y0[v]), Int32(x1[v]), Int32(y0[v]), Int32(x1[v]), Int32(y1[v]), Int32(x0[v]), Int32(y1[v]),
      ]
      if results.commit(symbol) { found.append(UInt8(v)) }
    }
    log.calls.append(.init(width: g.width, height: g.height, microseconds: cost, found: found))
  }
}

/// The reader's schedule (`alternate` within a budget) against the scripted decoder: which
/// attempt runs first on a frame, what a frame may spend, and that what is read does not depend
/// on the frame rate.
@Suite struct StrategyScheduleTests {
  static let width = 320, height = 240

  /// A block code: level `code` (1...9), or 255 - `code` for a light-on-dark one.
  struct Block {
    var code: Int
    var x: Int, y: Int, side: Int
    var inverted = false
  }

  static func frame(_ blocks: [Block]) -> [UInt8] {
    var pixels = [UInt8](repeating: 128, count: width * height)
    for b in blocks {
      for y in b.y..<(b.y + b.side) {
        for x in b.x..<(b.x + b.side) { pixels[y * width + x] = UInt8(b.inverted ? 255 - b.code : b.code) }
      }
    }
    return pixels
  }

  /// A pipeline with the reader's order, budget and quiet time, on a cost clock.
  struct Reader: ~Copyable {
    let clock = CostClock()
    let log = CallLog()
    var pipeline: DecodePipeline<ScriptedCostDecoder>
    var results = DecodeResults(capacity: 8, payloadBytesMax: 64)
    let periodMicroseconds: UInt64
    var sequence: UInt64 = 0

    init(budgetMicroseconds: Int = 8_000, fps: Int = 30) {
      var settings = DecodeSettings()
      settings.attempts = DecodeAttempt.readerDefault
      settings.variantMode = .alternate
      settings.budgetMicroseconds = budgetMicroseconds
      settings.quietAfterMicroseconds = 1_000_000
      pipeline = DecodePipeline(
        decoder: ScriptedCostDecoder(clock: clock, log: log), settings: settings, maxWidth: StrategyScheduleTests.width,
        maxHeight: StrategyScheduleTests.height)
      periodMicroseconds = UInt64(1_000_000 / fps)
    }

    /// Shows one frame; returns its calls and the codes read.
    mutating func show(_ pixels: [UInt8]) -> (calls: [CallLog.Call], read: Set<String>) {
      let before = log.calls.count
      clock.advance(microseconds: periodMicroseconds)
      sequence += 1
      let frameStart = clock.now()
      pixels.withUnsafeBytes { raw in
        let frame = LumaFrame(
          bytes: raw, geometry: .gray(width: StrategyScheduleTests.width, height: StrategyScheduleTests.height),
          captured: frameStart, sequence: sequence)
        pipeline.decode(frame, into: &results, clock: clock)
      }
      var read = Set<String>()
      for i in 0..<results.count { read.insert(String(decoding: results.payload(i), as: UTF8.self)) }
      return (Array(log.calls[before...]), read)
    }
  }

  @Test("a code tracked from the last person: the next person's code is read by the frame's first attempt, at one call's cost")
  func newCodeFirst() {
    var reader = Reader()
    let alice = Block(code: 1, x: 30, y: 30, side: 60)
    for _ in 0..<6 { #expect(reader.show(Self.frame([alice])).read == ["CODE-1"]) }
    // Alice leaves, Bob steps up within the second her region is tracked.
    for _ in 0..<4 { _ = reader.show(Self.frame([])) }
    #expect(reader.pipeline.tracked.region != nil, "alice's region is still tracked")
    let bob = reader.show(Self.frame([Block(code: 2, x: 200, y: 140, side: 60)]))
    #expect(bob.read == ["CODE-2"])
    #expect(bob.calls.count == 1, "one call: \(bob.calls.map { "\($0.width)x\($0.height)" })")
    #expect(bob.calls.first.map { $0.width == 320 && $0.height == 240 && $0.found == [2] } == true)
    #expect(reader.pipeline.lastFrame.microseconds == 1_000, "\(reader.pipeline.lastFrame.microseconds) µs")
  }

  @Test(
    "a small code read only in its tracked region stays read; a second person's code beside it is decided on the first call, and both are read from the next frame on"
  )
  func secondPersonBesideTrackedCode() {
    var reader = Reader()
    // 30 pixels: the engine needs the upscaled views for it.
    let small = Block(code: 3, x: 40, y: 40, side: 30)
    var firstRead: Int? = nil
    for n in 1...10 where reader.show(Self.frame([small])).read == ["CODE-3"] && firstRead == nil { firstRead = n }
    #expect(firstRead != nil && firstRead! <= 3, "the small code was read on frame \(String(describing: firstRead))")
    let held = reader.show(Self.frame([small]))
    #expect(held.read == ["CODE-3"], "held, it is read in its region")
    #expect(held.calls.count == 2 && held.calls[1].found == [3], "\(held.calls.map(\.found))")
    let both = Self.frame([small, Block(code: 4, x: 190, y: 130, side: 70)])
    let arrival = reader.show(both)
    #expect(arrival.calls.count == 1 && arrival.calls[0].width == 320 && arrival.calls[0].found == [4], "the newcomer is read by the first call, alone")
    let next = reader.show(both)
    #expect(next.read == ["CODE-3", "CODE-4"], "then the held code is read beside it: \(next.read)")
    #expect(next.calls.count == 2 && next.calls[0].found == [4] && next.calls[1].found.contains(3), "\(next.calls.map(\.found))")
  }

  /// Scenes of codes, each held `hold` frames after `gap` empty ones, at `fps`: when each was
  /// first read (frame within its scene), and every frame's spending against its calls.
  func play(fps: Int, budgetMicroseconds: Int = 8_000, holdMilliseconds: Int = 600) -> (firstRead: [Int?], overBound: [String]) {
    var reader = Reader(budgetMicroseconds: budgetMicroseconds, fps: fps)
    let scenes: [[Block]] = [
      [Block(code: 1, x: 50, y: 50, side: 75)],
      [Block(code: 2, x: 150, y: 60, side: 50, inverted: true)],
      [Block(code: 3, x: 100, y: 100, side: 30)],
      [Block(code: 4, x: 60, y: 70, side: 80)],
      [Block(code: 5, x: 180, y: 100, side: 45, inverted: true)],
      [Block(code: 6, x: 20, y: 150, side: 36)],
      [Block(code: 7, x: 210, y: 20, side: 100)],
    ]
    let hold = max(1, fps * holdMilliseconds / 1000), gap = max(1, fps)
    var firstRead: [Int?] = []
    var overBound: [String] = []
    func check(_ calls: [CallLog.Call], _ label: String) {
      let spent = reader.pipeline.lastFrame.microseconds
      let dearest = calls.map(\.microseconds).max() ?? 0
      let total = calls.reduce(0) { $0 + $1.microseconds }
      if spent != total { overBound.append("\(label): \(spent) µs spent, calls \(total)") }
      if spent > UInt64(budgetMicroseconds) + dearest {
        overBound.append("\(label): \(spent) µs > budget + \(dearest) (\(calls.map { "\($0.width)x\($0.height)" }))")
      }
    }
    let empty = Self.frame([])
    for f in 0..<gap { check(reader.show(empty).calls, "gap \(f)") }
    for (n, scene) in scenes.enumerated() {
      var first: Int? = nil
      let pixels = Self.frame(scene)
      for f in 1...hold {
        let shown = reader.show(pixels)
        check(shown.calls, "scene \(n) frame \(f)")
        if first == nil && shown.read.contains("CODE-\(scene[0].code)") { first = f }
      }
      firstRead.append(first)
      for f in 0..<gap { check(reader.show(empty).calls, "gap \(f) after scene \(n)") }
    }
    return (firstRead, overBound)
  }

  @Test("what is read does not depend on the frame rate: each code on the same frame of its scene at 5, 10, 15 and 30 fps")
  func frameRate() {
    var byRate: [Int: [Int?]] = [:]
    for fps in [5, 10, 15, 30] {
      let (firstRead, overBound) = play(fps: fps)
      byRate[fps] = firstRead
      #expect(overBound.isEmpty, "\(fps) fps: \(overBound)")
      #expect(firstRead.allSatisfy { $0 != nil && $0! <= 3 }, "first read at frame \(firstRead) at \(fps) fps")
    }
    #expect(Set(byRate.values.map { "\($0)" }).count == 1, "\(byRate.sorted { $0.key < $1.key })")
  }

  @Test("no frame spends more than the budget plus one attempt's cost", arguments: [1_000, 2_000, 8_000])
  func budgetBound(budget: Int) {
    let (firstRead, overBound) = play(fps: 30, budgetMicroseconds: budget, holdMilliseconds: 1_000)
    #expect(overBound.isEmpty, "\(overBound)")
    // With room beside the first attempt (which costs 1 ms), every view comes round within a
    // second; at 1 ms the first attempt alone fills the budget and frames alternate.
    if budget >= 2_000 {
      #expect(firstRead.allSatisfy { $0 != nil }, "first read at frame \(firstRead) with a budget of \(budget) µs")
    } else {
      #expect(firstRead.compactMap { $0 }.count >= 5, "first read at frame \(firstRead) with a budget of \(budget) µs")
    }
  }
}
