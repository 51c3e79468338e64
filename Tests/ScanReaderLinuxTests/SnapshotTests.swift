import CImageIO
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The aiming aid: what the PNG and the text view show, read back and checked pixel by pixel.
@Suite struct SnapshotTests {
  typealias Engine = ScanEngine<ZXingDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, SodiumDigester>

  /// Runs `image` through an engine with a snapshot requested; returns the engine.
  func capture(_ image: GrayImage, region: Region?, allowList: String) -> Engine {
    let clock = ManualClock()
    var settings = EngineSettings()
    settings.decode.region = region
    var engine = Engine(
      settings: settings, decoder: try! ZXingDecoder(arenaBytes: 8 << 20, capacity: 8),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: clock, digester: SodiumDigester(), events: EventRing(capacity: 64), maxWidth: image.width, maxHeight: image.height)
    _ = engine.allowList.load(Array(allowList.utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
    engine.captureSnapshot = true
    image.withFrame { engine.process($0) }
    let captured = engine.snapshotCaptured
    #expect(captured)
    return engine
  }

  func readBackRGB(_ png: [UInt8], width: Int, height: Int) -> [UInt8] {
    var rgb = [UInt8](repeating: 0, count: width * height * 3)
    let rc = png.withUnsafeBufferPointer { p in
      rgb.withUnsafeMutableBufferPointer { sg_image_decode_rgb(p.baseAddress, p.count, $0.baseAddress, $0.count, Int32(width), Int32(height)) }
    }
    #expect(rc == 0)
    return rgb
  }

  @Test(
    "PNG of a replayed corpus frame: outlines sit on the code's corners, outside the ROI is dimmed",
    .enabled(if: corpusRoot != nil, "../shared/corpus is absent"))
  func pngOnCorpusFrame() throws {
    let image = try ImageFileReader().read(corpusRoot! + "/zxing-cpp/qrcode-1/1.png").fitted(width: 640, height: 480)
    let region = Region(x: 20, y: 30, width: 600, height: 430)
    let engine = capture(image, region: region, allowList: "")
    let s = engine.snapshot
    #expect(s.symbolCount >= 1)
    let png = try #require(SnapshotRenderer.png(s))
    let rgb = readBackRGB(png, width: 640, height: 480)
    func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
      let i = (y * 640 + x) * 3
      return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
    }
    for i in 0..<s.symbolCount {
      let c = s[i].corners
      let color = s[i].verdict.isGranted ? SnapshotRenderer.grantedColor : SnapshotRenderer.deniedColor
      for k in 0..<4 {
        let p = pixel(Int(c[2 * k]), Int(c[2 * k + 1]))
        #expect(p == (Int(color.0), Int(color.1), Int(color.2)), "corner \(k) of code \(i + 1) is \(p)")
      }
    }
    // Outside the region: dimmed to 35 %, in gray. Inside, away from any overlay: untouched.
    for (x, y) in [(5, 470), (630, 200), (300, 475)] {
      let original = Int(image.pixels[y * 640 + x])
      let p = pixel(x, y)
      #expect(p.0 == original * SnapshotRenderer.dimPercent / 100 && p.0 == p.1 && p.1 == p.2, "(\(x), \(y)): \(p) from \(original)")
    }
    let inside = (region.x + 10, region.y + region.height - 10)
    #expect(pixel(inside.0, inside.1).0 == Int(image.pixels[inside.1 * 640 + inside.0]))
    // The region's frame is drawn just outside it.
    let frame = pixel(region.x - 1, region.y + 100)
    #expect(frame == (Int(SnapshotRenderer.regionColor.0), Int(SnapshotRenderer.regionColor.1), Int(SnapshotRenderer.regionColor.2)))
  }

  @Test(
    "the fleet's redacted copy: every located code blanked and its payload dropped, outline and verdict kept, the rest of the frame untouched",
    arguments: DecodeSettings().variants)
  func redactedCopy(variant: ImageVariant) throws {
    let image = qrFrame("FLEET-SNAP-1", variant: variant, at: (180, 100))
    let clock = ManualClock()
    var engine = Engine(
      settings: EngineSettings(), decoder: try ZXingDecoder(arenaBytes: 8 << 20, capacity: 8),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: clock, digester: SodiumDigester(), events: EventRing(capacity: 64), maxWidth: 640, maxHeight: 480)
    _ = engine.allowList.load(Array("text:FLEET-SNAP-1\n".utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
    // A held code: the strategy reaches the view it needs within a few frames.
    for _ in 0..<12 where engine.snapshot.symbolCount == 0 {
      engine.captureSnapshot = true
      image.withFrame { engine.process($0) }
      clock.advance(milliseconds: 33)
    }
    let s = engine.snapshot
    try #require(s.symbolCount == 1, "the \(variant.name) code was not located")
    let fleet = SnapshotBuffer(maxWidth: 640, maxHeight: 480)
    fleet.copy(from: s)
    #expect(fleet.width == 640 && fleet.height == 480 && fleet.symbolCount == 1)
    #expect(Array(fleet.pixels[0..<640 * 480]) == image.pixels)
    #expect(fleet[0].withPayload { Array($0) } == Array("FLEET-SNAP-1".utf8))
    fleet.redact()
    #expect(fleet[0].payloadCount == 0 && fleet[0].verdict == s[0].verdict && fleet[0].verdict.isGranted)
    #expect(fleet[0].format == s[0].format && (0..<8).allSatisfy { fleet[0].corners[$0] == s[0].corners[$0] })
    // The code (at 180 + 24, 100 + 24, 21 modules of 6 px) is grey, quiet zone and all; beyond
    // its box and margin nothing changed.
    let redacted = Array(fleet.pixels[0..<640 * 480])
    #expect((124..<250).allSatisfy { y in (204..<330).allSatisfy { x in redacted[y * 640 + x] == 128 } })
    var changedOutside = 0
    for y in 0..<480 {
      for x in 0..<640 where redacted[y * 640 + x] != image.pixels[y * 640 + x] {
        if x < 180 || x >= 354 || y < 100 || y >= 274 { changedOutside += 1 }
      }
    }
    #expect(changedOutside == 0)
    // And nothing reads in it, through any view.
    let decoder = try ZXingDecoder(arenaBytes: 8 << 20, capacity: 8)
    var settings = DecodeSettings()
    settings.variants = ImageVariant.allCases
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    GrayImage(width: 640, height: 480, pixels: redacted).withFrame { pipeline.decode($0, into: &results) }
    #expect(results.count == 0)
    GrayImage(width: 640, height: 480, pixels: image.pixels).withFrame { pipeline.decode($0, into: &results) }
    #expect(results.count == 1, "the unredacted frame reads (the check above can fail)")
  }

  @Test("the fleet's redaction fails closed: a code the reader did not locate is found by the second look and blanked")
  func secondLook() throws {
    // Two codes; the reader's snapshot lists only the first (its decode stopped there).
    let seen = try #require(renderQRCode(Array("SEEN-1".utf8), scale: 6))
    let unseen = try #require(renderQRCode(Array("UNSEEN-2".utf8), scale: 6))
    var pixels = [UInt8](repeating: 190, count: 640 * 480)
    for (code, ox, oy) in [(seen, 60, 100), (unseen, 380, 140)] {
      for y in 0..<code.height { for x in 0..<code.width { pixels[(y + oy) * 640 + x + ox] = code.pixels[y * code.width + x] } }
    }
    let image = GrayImage(width: 640, height: 480, pixels: pixels)
    let engineSnapshot = SnapshotBuffer(maxWidth: 640, maxHeight: 480)
    image.withFrame { engineSnapshot.copy($0) }
    var symbol = SnapshotSymbol()
    symbol.format = .qrCode
    let side = Int32(seen.width - 48)  // the symbol without its 4-module quiet zone
    for (k, (x, y)) in [(0, 0), (side - 1, 0), (side - 1, side - 1), (0, side - 1)].enumerated() {
      symbol.corners[2 * k] = 84 + x
      symbol.corners[2 * k + 1] = 124 + y
    }
    engineSnapshot.append(symbol)

    func read(_ gray: [UInt8]) -> [String] {
      var decoder = try! ZXingDecoder(arenaBytes: 0, capacity: 8)
      var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
      GrayImage(width: 640, height: 480, pixels: gray).withFrame { decoder.decode($0, formats: .all, into: &results) }
      return (0..<results.count).map { String(decoding: results.text($0), as: UTF8.self) }
    }
    // Blanking only what the reader located leaves the other code readable ...
    let located = SnapshotBuffer(maxWidth: 640, maxHeight: 480)
    #expect(located.copy(from: engineSnapshot))
    located.redact()
    #expect(read(Array(located.pixels[0..<640 * 480])) == ["UNSEEN-2"])
    // ... the fleet's snapshot reads nothing: the PNG it would publish, decoded back.
    let fleet = FleetSnapshot(policy: .redacted, maxWidth: 640, maxHeight: 480)
    #expect(fleet.deliver(engineSnapshot) && fleet.generation == 1)
    func gray(_ png: [UInt8]) -> [UInt8] {
      let rgb = readBackRGB(png, width: 640, height: 480)
      var out = [UInt8](repeating: 0, count: 640 * 480)
      for i in 0..<out.count {
        let sum: Int = Int(rgb[3 * i]) + Int(rgb[3 * i + 1]) + Int(rgb[3 * i + 2])
        out[i] = UInt8(sum / 3)
      }
      return out
    }
    #expect(read(gray(try fleet.render().get().png)).isEmpty)
    // The same with the second look in decoder workers (the service's default: it never parses
    // the camera's pixels itself).
    let isolated = FleetSnapshot(policy: .redacted, maxWidth: 640, maxHeight: 480)
    isolated.makeWorkers = {
      try? FleetSnapshot.secondLookWorkers(
        maxWidth: 640, maxHeight: 480, arenaBytes: 8 << 20, supervision: DecoderSupervisor.Settings(), executable: scangateBinary)
    }
    #expect(isolated.deliver(engineSnapshot))
    #expect(read(gray(try isolated.render().get().png)).isEmpty)
    // A second look that cannot run (no worker starts) sends nothing: fail closed.
    let unchecked = FleetSnapshot(policy: .redacted, maxWidth: 640, maxHeight: 480)
    unchecked.makeWorkers = { nil }
    #expect(unchecked.deliver(engineSnapshot))
    #expect(throws: EnvelopeRefusal.self) { try unchecked.render().get() }
    // And `full` sends both as they are.
    let full = FleetSnapshot(policy: .full, maxWidth: 640, maxHeight: 480)
    #expect(full.deliver(engineSnapshot))
    #expect(Set(read(gray(try full.render().get().png))) == ["SEEN-1", "UNSEEN-2"])
  }

  @Test("text view of a generated frame: corner digits and region borders land in the right cells")
  func textView() {
    let image = qrFrame("ALICE", scale: 6, at: (160, 120))
    let region = Region(x: 80, y: 60, width: 480, height: 360)
    let engine = capture(image, region: region, allowList: "text:ALICE label=alice\n")
    let s = engine.snapshot
    #expect(s.symbolCount == 1 && s[0].verdict == .granted)
    let text = withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer -> String in
      var w = ByteWriter(buffer)
      _ = SnapshotText.write(s, into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
    let lines = text.split(separator: "\n").map { Array($0.dropFirst(2).utf8) }
    #expect(text.contains("code 1 qr granted payload=ALICE"))
    let picture = Array(lines.suffix(40))
    // 78 columns: with `| ` a row fills an 80-column terminal.
    #expect(picture.count == 40 && picture.allSatisfy { $0.count == 78 })
    // 640×480 in 78×40 cells: 9 × 12 pixels per cell (rounded up: the whole frame is shown).
    let c = s[0].corners
    for k in 0..<4 {
      let column = Int(c[2 * k]) / 9, row = Int(c[2 * k + 1]) / 12
      #expect(picture[row][column] == UInt8(ascii: "1"), "corner \(k) at cell \(column),\(row)")
    }
    #expect(picture[region.y / 12][region.x / 9 + 20] == UInt8(ascii: "_"))
    #expect(picture[region.y / 12 + 10][region.x / 9] == UInt8(ascii: "|"))
    #expect(picture[region.y / 12 + 10][(region.x + region.width - 1) / 9] == UInt8(ascii: "|"))
    #expect(text.utf8.allSatisfy { $0 == 0x0A || ($0 >= 0x20 && $0 < 0x7F) })
  }

  @Test("aiming hints: pixels per module follow the code's scale; blur lowers sharpness", arguments: [2, 3, 4, 6, 8])
  func geometry(scale: Int) {
    let sharp = qrFrame("SIZE", scale: scale, at: (100, 100))
    let engine = capture(sharp, region: nil, allowList: "")
    let snapshot = engine.snapshot
    guard snapshot.symbolCount == 1 else { Issue.record("no code at scale \(scale)"); return }
    let g = snapshot[0].geometry
    let estimate = Double(g.modulePixelsTimes10) / 10
    #expect(abs(estimate - Double(scale)) <= max(0.6, Double(scale) * 0.15), "scale \(scale): \(estimate)")
    #expect(g.sharpnessPercent >= 80)
    // A 5×5 box blur: edges spread over several pixels.
    var blurred = sharp.pixels
    for y in 2..<478 {
      for x in 2..<638 {
        var sum = 0
        for dy in -2...2 { for dx in -2...2 { sum += Int(sharp.pixels[(y + dy) * 640 + x + dx]) } }
        blurred[y * 640 + x] = UInt8(sum / 25)
      }
    }
    let soft = capture(GrayImage(width: 640, height: 480, pixels: blurred), region: nil, allowList: "")
    let softSnapshot = soft.snapshot
    if scale >= 4, softSnapshot.symbolCount == 1 {
      #expect(softSnapshot[0].geometry.sharpnessPercent < g.sharpnessPercent - 30)
    }
  }

  @Test("exposure: mean brightness and clipped fraction")
  func exposure() {
    var pixels = [UInt8](repeating: 128, count: 64 * 64)
    for i in 0..<(64 * 32) { pixels[i] = 255 }  // top half blown out
    let e = GrayImage(width: 64, height: 64, pixels: pixels).withFrame { ExposureMetrics($0, step: 1) }
    #expect(e.meanBrightness == (255 + 128) / 2)
    #expect(e.clippedPerMille == 500)
  }

  @Test("base64 body lines decode back to the PNG bytes")
  func base64() {
    let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
    for n in [0, 1, 2, 3, 57, 58, 1000] {
      let encoded = withUnsafeTemporaryAllocation(byteCount: 2_000, alignment: 1) { buffer -> String in
        var w = ByteWriter(buffer)
        bytes.prefix(n).withUnsafeBytes { w.writeBase64($0) }
        return String(decoding: w.written, as: UTF8.self)
      }
      #expect(encoded.count == (n + 2) / 3 * 4)
      #expect(decodeBase64ForTest(encoded) == Array(bytes.prefix(n)))
    }
  }

  @Test("a code's corners outside the picture (from an untrusted decoder) draw nothing and never trap")
  func cornersOutside() {
    let buffer = SnapshotBuffer(maxWidth: 64, maxHeight: 48)
    let pixels = [UInt8](repeating: 200, count: 64 * 48)
    pixels.withUnsafeBytes { raw in
      buffer.copy(LumaFrame(bytes: raw, geometry: .gray(width: 64, height: 48), captured: Instant(nanoseconds: 0), sequence: 1))
    }
    var symbol = SnapshotSymbol()
    for (k, v) in [1_000, 1_000, 1_100, 1_000, 1_100, 1_100, 1_000, 1_100].enumerated() { symbol.corners[k] = Int32(v) }
    buffer.append(symbol)
    let png = SnapshotRenderer.png(buffer)
    #expect(png != nil)
    #expect(readBackRGB(png ?? [], width: 64, height: 48).count == 64 * 48 * 3)
  }
}

/// An independent base64 decoder (the oracle for the writer).
func decodeBase64ForTest(_ text: String) -> [UInt8] {
  let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
  var out: [UInt8] = []
  var bits = 0, value = 0
  for c in text.utf8 where c != UInt8(ascii: "=") {
    value = value << 6 | alphabet.firstIndex(of: c)!
    bits += 6
    if bits >= 8 {
      bits -= 8
      out.append(UInt8((value >> bits) & 0xFF))
    }
  }
  return out
}
