import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

@Suite struct DecoderTests {
  func decode(_ image: GrayImage, settings: DecodeSettings = DecodeSettings(), arenaBytes: Int = 4 << 20) -> [(String, DecodedSymbol)] {
    let decoder = try! ZXingDecoder(arenaBytes: arenaBytes, capacity: 8)
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: image.width, maxHeight: image.height)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    image.withFrame { pipeline.decode($0, into: &results) }
    return (0..<results.count).map { (String(decoding: results.payload($0), as: UTF8.self), results[$0]) }
  }

  @Test("reads a libqrencode QR code, with its corners in frame coordinates")
  func readsGeneratedQR() {
    let frame = qrFrame("DOOR-42", at: (100, 60))
    let found = decode(frame)
    #expect(found.count == 1)
    #expect(found.first?.0 == "DOOR-42")
    #expect(found.first?.1.format == .qrCode)
    // The code (with a 4-module quiet zone at 6 px) starts at 100 + 24, 60 + 24.
    if let corners = found.first?.1.corners {
      #expect(abs(Int(corners[0]) - 124) <= 3 && abs(Int(corners[1]) - 84) <= 3)
    }
  }

  @Test("inverted and mirrored codes are read through the pipeline's views", arguments: [ImageVariant.inverted, .mirrored, .invertedMirrored])
  func variants(variant: ImageVariant) {
    let frame = qrFrame("PHONE-\(variant.rawValue)", variant: variant, at: (300, 100))
    var settings = DecodeSettings()
    settings.variants = [.upright, .inverted, .mirrored, .invertedMirrored]
    let found = decode(frame, settings: settings)
    #expect(found.first?.0 == "PHONE-\(variant.rawValue)")
    // Corners map back to frame coordinates whatever view read the code.
    if let c = found.first?.1.corners {
      let xs = [c[0], c[2], c[4], c[6]].map(Int.init)
      #expect(xs.min()! >= 300 && xs.max()! <= 300 + 29 * 6 + 48, "\(xs)")
    }
  }

  @Test("upright-only mode reads an inverted code only when the engine does so itself (2.x)")
  func uprightOnly() {
    var settings = DecodeSettings()
    settings.variantMode = .upright
    let found = decode(qrFrame("DARK", variant: .inverted), settings: settings)
    #expect(found.isEmpty != ZXingDecoder.readsInvertedNatively, "\(ZXingDecoder.engineVersion)")
  }

  @Test("alternate mode covers every view within as many frames")
  func alternate() {
    var settings = DecodeSettings()
    settings.variantMode = .alternate
    let image = qrFrame("ALT", variant: .inverted)
    let decoder = try! ZXingDecoder(arenaBytes: 1 << 22, capacity: 4)
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 4, payloadBytesMax: 256)
    var hits = 0
    for _ in 0..<3 {
      image.withFrame { pipeline.decode($0, into: &results) }
      hits += results.count
    }
    // zxing-cpp 1.4 reads it in the inverted view only; 2.x reads it in every view.
    #expect(hits == (ZXingDecoder.readsInvertedNatively ? 3 : 1))
    #expect(pipeline.decodeCalls == 3)
  }

  @Test("a YUYV frame is read in place through pixel stride 2")
  func yuyvInPlace() {
    let gray = qrFrame("YUYV-OK")
    var yuyv = [UInt8](repeating: 128, count: 640 * 480 * 2)
    for i in 0..<(640 * 480) { yuyv[2 * i] = gray.pixels[i] }
    let decoder = try! ZXingDecoder(arenaBytes: 1 << 22, capacity: 4)
    var pipeline = DecodePipeline(decoder: decoder, settings: DecodeSettings(), maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 4, payloadBytesMax: 256)
    yuyv.withUnsafeBytes { raw in
      pipeline.decode(
        LumaFrame(
          bytes: raw, geometry: FrameGeometry(width: 640, height: 480, rowStrideBytes: 1280, pixelStrideBytes: 2),
          captured: Instant(nanoseconds: 0), sequence: 1), into: &results)
    }
    #expect(results.count == 1)
    #expect(String(decoding: results.payload(0), as: UTF8.self) == "YUYV-OK")
  }

  @Test("a region of interest excludes codes outside it and keeps frame coordinates")
  func regionOfInterest() {
    let frame = qrFrame("LEFT", at: (10, 10))
    var settings = DecodeSettings()
    settings.region = Region(x: 320, y: 0, width: 320, height: 480)
    #expect(decode(frame, settings: settings).isEmpty)
    settings.region = Region(x: 0, y: 0, width: 320, height: 320)
    #expect(decode(frame, settings: settings).first?.0 == "LEFT")
  }

  @Test("downscale 2 reads a large code and maps corners back")
  func downscale() {
    var settings = DecodeSettings()
    settings.downscale = 2
    let found = decode(qrFrame("BIG", scale: 10, at: (200, 100)), settings: settings)
    #expect(found.first?.0 == "BIG")
    if let c = found.first?.1.corners { #expect(abs(Int(c[0]) - 240) <= 6, "\(c[0])") }
  }

  @Test("payloads longer than the slot are truncated and flagged, never overflowed")
  func truncation() {
    let long = String(repeating: "X", count: 300)
    let decoder = try! ZXingDecoder(arenaBytes: 1 << 22, capacity: 2)
    var pipeline = DecodePipeline(decoder: decoder, settings: DecodeSettings(), maxWidth: 640, maxHeight: 480)
    var results = DecodeResults(capacity: 2, payloadBytesMax: 100)
    qrFrame(long, scale: 5).withFrame { pipeline.decode($0, into: &results) }
    #expect(results.count == 1)
    #expect(results[0].truncated)
    #expect(results.payload(0).count == 100)
  }

  @Test("decoding through the arena gives the same results as through malloc, and counts its use")
  func arena() {
    let frame = qrFrame("ARENA")
    #expect(decode(frame, arenaBytes: 0).first?.0 == "ARENA")
    var decoder = try! ZXingDecoder(arenaBytes: 8 << 20, capacity: 4)
    var results = DecodeResults(capacity: 4, payloadBytesMax: 256)
    for _ in 0..<5 { frame.withFrame { decoder.decode($0, formats: .qrCode, into: &results) } }
    #expect(String(decoding: results.payload(0), as: UTF8.self) == "ARENA")
    let stats = decoder.stats
    #expect(stats.decodes == 5)
    #expect(stats.arenaAllocations > 0)
    #expect(stats.arenaOverflows == 0)
    #expect(stats.arenaHighWaterBytes > 0 && stats.arenaHighWaterBytes < 8 << 20)
  }

  @Test("an arena too small overflows to malloc, counted, and still decodes")
  func arenaOverflow() {
    var decoder = try! ZXingDecoder(arenaBytes: 4096, capacity: 4)
    var results = DecodeResults(capacity: 4, payloadBytesMax: 256)
    // The first decode is the warm-up, on the heap; the second runs in the arena.
    for _ in 0..<2 { qrFrame("TINY").withFrame { decoder.decode($0, formats: .qrCode, into: &results) } }
    #expect(results.count == 1)
    #expect(decoder.stats.arenaOverflows > 0)
  }

  @Test("SHA-256 through libsodium matches the FIPS 180 test vector")
  func sha256() {
    let d = Array("abc".utf8).withUnsafeBytes { SodiumDigester().sha256($0) }
    #expect(EventText.digestPrefix(d) == "ba7816bf8f01cfea")
  }
}

@Suite struct ImageFileTests {
  let reader = ImageFileReader(maxPixels: 50_000_000)

  @Test(
    "bad files give a clear error and no crash",
    arguments: [
      ("empty", [UInt8](), "empty file"),
      ("garbage", Array("hello world".utf8), "not a JPEG"),
      ("truncated PNG", Array([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]), ""),
      ("truncated JPEG", [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10], ""),
      ("huge PGM header", Array("P5\n20000 20000\n255\n".utf8) + [0, 0, 0], "larger than"),
    ])
  func badFiles(name: String, bytes: [UInt8], reason: String) {
    do {
      _ = try reader.decode(bytes, path: name)
      Issue.record("\(name) decoded")
    } catch {
      #expect(error.reason.contains(reason), "\(error)")
      #expect(!error.reason.isEmpty)
    }
  }

  @Test("a truncated real PNG and JPEG are refused or decoded partially, never crash")
  func truncatedReal() throws {
    guard let corpus = corpusRoot else { return }
    for path in [corpus + "/zxing-cpp/qrcode-1/1.png", corpus + "/boofcv-dev/nominal/image001.jpg"] {
      let bytes = try readWholeFile(path, maxBytes: 1 << 24)
      for cut in [bytes.count / 2, 100, 20] {
        _ = try? reader.decode(Array(bytes[0..<cut]), path: path)
      }
    }
  }

  @Test("a 1×1 image decodes to one pixel")
  func onePixel() throws {
    let image = try reader.decode(Array("P5\n1 1\n255\n".utf8) + [77], path: "1x1")
    #expect(image.width == 1 && image.pixels == [77])
  }

  @Test("a directory and a missing file are clear errors")
  func notFiles() {
    #expect(throws: ImageFileError.self) { try reader.read("/tmp") }
    do { _ = try reader.read("/nonexistent/x.png") } catch { #expect(error.reason.contains("No such file")) }
  }

  @Test("a PNG written and read back keeps its pixels")
  func pngRoundTrip() throws {
    let dir = temporaryDirectory()
    defer { removeTree(dir) }
    let image = qrFrame("PNG")
    #expect(writePNG(path: dir + "/a.png", pixels: image.pixels, width: 640, height: 480, components: 1))
    #expect(try reader.read(dir + "/a.png").pixels == image.pixels)
  }
}
