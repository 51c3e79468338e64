import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The decode strategy against the real engine, on frames made by libqrencode (an encoder we
/// did not write): what each kind of attempt reads, and where its corners land.
@Suite struct StrategyTests {
  func decode(_ image: GrayImage, _ attempts: [DecodeAttempt], mode: VariantMode = .retry) -> [(String, DecodedSymbol)] {
    var settings = DecodeSettings()
    settings.attempts = attempts
    settings.variantMode = mode
    let decoder = try! ZXingDecoder(arenaBytes: 16 << 20, capacity: 8)
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: image.width, maxHeight: image.height)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    image.withFrame { pipeline.decode($0, into: &results) }
    return (0..<results.count).map { (String(decoding: results.payload($0), as: UTF8.self), results[$0]) }
  }

  /// Two identical codes side by side: pixels of a frame.
  func twoCodes(_ payload: String) -> GrayImage {
    let code = renderQRCode(Array(payload.utf8), scale: 4)!
    var pixels = [UInt8](repeating: 190, count: 640 * 480)
    for (ox, oy) in [(40, 100), (380, 140)] {
      for y in 0..<code.height { for x in 0..<code.width { pixels[(y + oy) * 640 + x + ox] = code.pixels[y * code.width + x] } }
    }
    return GrayImage(width: 640, height: 480, pixels: pixels)
  }

  @Test("two codes with one payload are both reported, at their own places")
  func duplicatesAtTwoPlaces() {
    let found = decode(twoCodes("SAME-7"), DecodeAttempt.readerDefault)
    #expect(found.count == 2, "\(found.map(\.0))")
    #expect(found.allSatisfy { $0.0 == "SAME-7" })
    let xs = found.map { Int($0.1.corners[0]) }.sorted()
    #expect(xs.count == 2 && xs[0] < 200 && xs[1] > 380, "\(xs)")
  }

  @Test("several attempts reading one code report it once")
  func oneCodeOnce() {
    let attempts = [DecodeAttempt(), DecodeAttempt(scale: .double), DecodeAttempt(scale: .divided(by: 2)), DecodeAttempt(binarizer: .fixedThreshold)]
    let found = decode(qrFrame("ONCE", scale: 6), attempts)
    #expect(found.count == 1)
    #expect(found.first?.0 == "ONCE")
  }

  @Test(
    "scaled and mirrored views map corners back to frame coordinates",
    arguments: ["x2", "/2", "/3", "x1 mirrored", "x2 inverted+mirrored", "x1 histogram", "x1 fixed"])
  func cornersMapBack(attempt text: String) throws {
    let attempt = try #require(DecodeAttempt(parsing: text))
    let variant: ImageVariant = attempt.variant
    // A module of 6 px: still 2 px at /3. The code (4-module quiet zone) starts at 124, 84.
    let found = decode(qrFrame("MAP", variant: variant, scale: 6, at: (100, 60)), [attempt])
    #expect(found.first?.0 == "MAP", "\(text)")
    if let c = found.first?.1.corners {
      let xs = [c[0], c[2], c[4], c[6]].map(Int.init), ys = [c[1], c[3], c[5], c[7]].map(Int.init)
      let size = 21 * 6
      #expect(abs(xs.min()! - 124) <= 6 && abs(xs.max()! - (124 + size - 1)) <= 6, "\(text): \(xs)")
      #expect(abs(ys.min()! - 84) <= 6 && abs(ys.max()! - (84 + size - 1)) <= 6, "\(text): \(ys)")
    }
  }

  @Test("a small code is read by the upscaled view only")
  func upscaleReadsSmallCodes() {
    // 1.5 px per module: below what the engine reads at 1:1, readable at 3 px per module.
    let code = renderQRCode(Array("TINY-CODE-42".utf8), scale: 3)!
    var pixels = [UInt8](repeating: 190, count: 640 * 480)
    for y in 0..<(code.height / 2) {
      for x in 0..<(code.width / 2) {
        let s = (2 * y) * code.width + 2 * x
        pixels[(y + 200) * 640 + x + 300] = UInt8(
          (Int(code.pixels[s]) + Int(code.pixels[s + 1]) + Int(code.pixels[s + code.width]) + Int(code.pixels[s + code.width + 1])) / 4)
      }
    }
    let frame = GrayImage(width: 640, height: 480, pixels: pixels)
    let plain = decode(frame, [DecodeAttempt()])
    let doubled = decode(frame, [DecodeAttempt(scale: .double)])
    #expect(doubled.first?.0 == "TINY-CODE-42")
    #expect(plain.count <= doubled.count)
  }

  @Test(
    "streamed frames: the first attempt runs first even while a code is tracked; a held code's region comes next, in the view the code was read in"
  )
  func trackedRegionAfterFirst() {
    var settings = DecodeSettings()
    settings.attempts = DecodeAttempt.readerDefault
    settings.variantMode = .alternate
    // The order is under test, not the speed: a budget no loaded machine spends (at 50 ms a
    // loaded 2-core CI machine ran out of budget before the region's turn).
    settings.budgetMicroseconds = 5_000_000
    var pipeline = DecodePipeline(
      decoder: try! ZXingDecoder(arenaBytes: 16 << 20, capacity: 8), settings: settings, maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
    let frame = qrFrame("HELD", scale: 6)
    let clock = SystemMonotonicClock()
    frame.withFrame { pipeline.decode($0, into: &results, clock: clock) }
    #expect(results.count == 1)
    #expect(pipeline.tracked.region != nil)
    #expect(pipeline.attemptRuns[1] == 0)
    frame.withFrame { pipeline.decode($0, into: &results, clock: clock) }
    #expect(results.count == 1)
    // The first attempt read it again (decided already), so the frame looked at its region too.
    #expect(pipeline.lastTrace.count == 2 && pipeline.lastTrace[0].attempt == 0 && pipeline.lastTrace[0].found == 1)
    #expect(pipeline.lastTrace[1].attempt == 1 && pipeline.attemptRuns[1] == 1)
    let dark = qrFrame("HELD", variant: .inverted, scale: 6)
    if ZXingDecoder.readsInvertedNatively {
      // zxing-cpp 2.x (trixie) reads light-on-dark in the first attempt itself: the code is
      // read there, and the region after it finds it decided already.
      dark.withFrame { pipeline.decode($0, into: &results, clock: clock) }
      #expect(results.count == 1, "\(ZXingDecoder.engineVersion)")
      #expect(pipeline.lastTrace.count >= 1 && pipeline.lastTrace[0].attempt == 0 && pipeline.lastTrace[0].found == 1)
      return
    }
    // The code turns light-on-dark (zxing-cpp 1.4's first attempt cannot read it): its region is
    // tried right after the first attempt, in the view it was last read in.
    dark.withFrame { pipeline.decode($0, into: &results, clock: clock) }
    #expect(pipeline.attemptRuns[1] == 2, "the tracked region ran after the first attempt")
    #expect(pipeline.lastTrace.count >= 2 && pipeline.lastTrace[0].attempt == 0 && pipeline.lastTrace[1].attempt == 1)
    #expect(results.count == 1, "a view of the rotation read it")
    // Held light-on-dark: the region is now looked at inverted, and reads it.
    dark.withFrame { pipeline.decode($0, into: &results, clock: clock) }
    #expect(results.count == 1 && results[0].variant == .inverted)
    #expect(pipeline.lastTrace.count == 2 && pipeline.lastTrace[1].attempt == 1 && pipeline.lastTrace[1].found == 1)
  }

  static func doorwayLevel(_ x: Int, _ y: Int) -> Int { (x < 60 || x > 580) ? 40 : 120 + y / 8 }

  @Test(
    "a still picture goes quiet after quiet_after: one attempt every other frame, each attempt in turn; sensor noise keeps it quiet; a code held up wakes it and is read on that frame"
  )
  func quietFrames() {
    var settings = DecodeSettings()
    settings.attempts = DecodeAttempt.readerDefault
    settings.variantMode = .alternate
    settings.budgetMicroseconds = 8_000
    settings.quietAfterMicroseconds = 1_000_000
    var pipeline = DecodePipeline(
      decoder: try! ZXingDecoder(arenaBytes: 16 << 20, capacity: 8), settings: settings, maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
    let clock = ManualClock()  // 33 ms a frame; attempts cost nothing on it, so a busy frame runs the whole turn
    var seed: UInt32 = 12_345
    // A doorway: a gradient with a dark frame edge, with ±10 levels of sensor noise on every frame.
    func doorway(_ code: GrayImage? = nil) -> GrayImage {
      var pixels = [UInt8](repeating: 0, count: 640 * 480)
      for y in 0..<480 {
        for x in 0..<640 {
          seed = seed &* 1_103_515_245 &+ 12_345
          let noise = Int((seed >> 16) % 21) - 10
          let base = code.map { Int($0.pixels[y * 640 + x]) } ?? Self.doorwayLevel(x, y)
          pixels[y * 640 + x] = UInt8(clamping: base + noise)
        }
      }
      return GrayImage(width: 640, height: 480, pixels: pixels)
    }
    var quiet: [Bool] = [], attempts: [Int] = []
    func show(_ image: GrayImage) {
      clock.advance(milliseconds: 33)
      image.withFrame(captured: clock.now()) { pipeline.decode($0, into: &results, clock: clock) }
      quiet.append(pipeline.lastFrame.quiet)
      attempts.append(pipeline.lastFrame.attempts)
    }
    for _ in 0..<70 { show(doorway()) }
    #expect(quiet.prefix(30).allSatisfy { !$0 }, "the first second is busy: \(quiet.prefix(30))")
    #expect(attempts.prefix(30).allSatisfy { $0 > 2 }, "busy frames spend the turn: \(attempts.prefix(30))")
    #expect(quiet.suffix(30).allSatisfy { $0 }, "then quiet, noise and all: \(quiet.suffix(30))")
    #expect(attempts.suffix(30).allSatisfy { $0 <= 1 } && attempts.suffix(30).reduce(0, +) == 15, "\(attempts.suffix(30))")
    // Every attempt but the tracked one comes round in the quiet turn (on this clock every
    // attempt costs nothing, so none is too dear for a quiet frame).
    let before = pipeline.attemptRuns
    for _ in 0..<(2 * pipeline.strategyCount) { show(doorway()) }
    for i in 0..<pipeline.strategyCount where pipeline.settings.attempts[i].area != .tracked {
      #expect(pipeline.attemptRuns[i] > before[i], "attempt \(i) (\(pipeline.settings.attempts[i])) ran while quiet")
    }
    #expect(quiet.suffix(2 * pipeline.strategyCount).allSatisfy { $0 })
    // A phone held up in the doorway (only its own patch of the picture changes): the frame it
    // appears on is busy and reads it.
    let code = renderQRCode(Array("QUIET-WAKE-1".utf8), scale: 4)!
    var still = doorway()
    for y in 0..<code.height { for x in 0..<code.width { still.pixels[(y + 150) * 640 + x + 250] = code.pixels[y * code.width + x] } }
    let phone = still
    #expect(code.width * code.height * 8 < 640 * 480, "the code covers under 1/8 of the frame")
    show(doorway(phone))
    #expect(quiet.last == false)
    #expect(results.count == 1 && String(decoding: results.payload(0), as: UTF8.self) == "QUIET-WAKE-1")
    // Held there, it keeps the reader busy (a code was read lately).
    for _ in 0..<40 { show(doorway(phone)) }
    #expect(quiet.suffix(40).allSatisfy { !$0 })
  }

  @Test(
    "a 1280×720 stream: a code held close is read on the first frame from the downscaled view; a distant one, too small for it, within a turn of the full-resolution tiles",
    arguments: [(1280, 720), (1920, 1080)])
  func largeFrames(size: (Int, Int)) {
    let (width, height) = size
    let attempts = DecodeAttempt.readerLarge(width: width)
    #expect(attempts.first == DecodeAttempt(scale: .divided(by: width / 640)))
    func stream(_ frame: GrayImage) -> (frames: Int, payload: String?) {
      var settings = DecodeSettings()
      settings.attempts = attempts
      settings.variantMode = .alternate
      settings.budgetMicroseconds = 200_000  // generous: what is tested is the order and the tiles, not this core
      var pipeline = DecodePipeline(
        decoder: try! ZXingDecoder(arenaBytes: 32 << 20, capacity: 8), settings: settings, maxWidth: width, maxHeight: height)
      var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
      let clock = SystemMonotonicClock()
      for n in 1...12 {
        frame.withFrame { pipeline.decode($0, into: &results, clock: clock) }
        if results.count > 0 { return (n, String(decoding: results.payload(0), as: UTF8.self)) }
      }
      return (12, nil)
    }
    let close = qrFrame("CLOSE-1", width: width, height: height, scale: 3 * width / 640)
    let near = stream(close)
    #expect(near.payload == "CLOSE-1" && near.frames == 1, "\(near)")
    // A 1-pixel module code in the lower right corner: at /2 or /3 it is below a pixel a module.
    let far = qrFrame("FAR-CODE-77", width: width, height: height, scale: 1 * width / 1280 + (width > 1280 ? 1 : 0), at: (width - 120, height - 110))
    #expect(decode(far, [attempts[0]]).isEmpty, "the downscaled view alone cannot read it")
    let distant = stream(far)
    #expect(distant.payload == "FAR-CODE-77" && distant.frames <= 6, "\(distant)")
  }

  @Test("a camera mode of 1280×720 and up gets the large-frame order; 640×480 keeps the reader's")
  func largeOrderFromConfig() throws {
    func attempts(_ text: String) throws -> [DecodeAttempt] {
      try ConfigSchema.build(try ConfigLoader.entries(fromTOML: Array(text.utf8))).get().engine.decode.attempts
    }
    #expect(try attempts("[camera]\nwidth = 640\nheight = 480\n") == DecodeAttempt.readerDefault)
    #expect(try attempts("[camera]\nwidth = 1280\nheight = 720\n") == DecodeAttempt.readerLarge(width: 1280))
    #expect(try attempts("[camera]\nwidth = 1920\nheight = 1080\n") == DecodeAttempt.readerLarge(width: 1920))
    #expect(try attempts("[camera]\nwidth = 1920\nheight = 1080\n[decoder]\nstrategy = \"none\"\n").isEmpty)
  }

  @Test("attempts parse from their names")
  func parsing() {
    #expect(DecodeAttempt(parsing: "x2 histogram") == DecodeAttempt(scale: .double, binarizer: .globalHistogram))
    #expect(DecodeAttempt(parsing: "tracked x2") == DecodeAttempt(.tracked, scale: .double))
    #expect(DecodeAttempt(parsing: "/4 inverted") == DecodeAttempt(scale: .divided(by: 4), variant: .inverted))
    #expect(DecodeAttempt(parsing: "x3") == nil)
    #expect(DecodeAttempt(parsing: "/9") == nil)
    for a in DecodeAttempt.readerDefault { #expect(DecodeAttempt(parsing: a.name) == a, "\(a.name)") }
  }
}
