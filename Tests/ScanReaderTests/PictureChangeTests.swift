import ScanAccess
import ScanBase
import ScanReader
import Testing

/// The picture-change test behind quiet frames, on frames made here pixel by pixel.
@Suite struct PictureChangeTests {
  let width = 320, height = 240

  func frame(_ pixels: [UInt8], _ body: (LumaFrame) -> Bool) -> Bool {
    pixels.withUnsafeBytes { body(LumaFrame(bytes: $0, geometry: .gray(width: width, height: height), captured: Instant(nanoseconds: 0), sequence: 0)) }
  }

  func scene(noise: Int, seed: inout UInt32, square: (x: Int, y: Int, side: Int, level: UInt8)? = nil) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height)
    for y in 0..<height {
      for x in 0..<width {
        seed = seed &* 1_103_515_245 &+ 12_345
        let n = noise == 0 ? 0 : Int((seed >> 16) % UInt32(2 * noise + 1)) - noise
        var v = 100 + x / 4
        if let s = square, x >= s.x, x < s.x + s.side, y >= s.y, y < s.y + s.side { v = Int(s.level) }
        pixels[y * width + x] = UInt8(clamping: v + n)
      }
    }
    return pixels
  }

  @Test("the first frame and a change of size count as a change; the same picture again does not")
  func firstAndSame() {
    var change = PictureChange()
    var seed: UInt32 = 1
    let still = scene(noise: 0, seed: &seed)
    let full = Region(x: 0, y: 0, width: width, height: height)
    #expect(frame(still) { change.changed($0, region: full) })
    #expect(!frame(still) { change.changed($0, region: full) })
    #expect(frame(still) { change.changed($0, region: Region(x: 0, y: 0, width: 200, height: 200)) })
    #expect(!frame(still) { change.changed($0, region: Region(x: 0, y: 0, width: 200, height: 200)) })
  }

  @Test("sensor noise of ±12 levels is not a change; a dark square of 1/40 of the frame is")
  func noiseAndObject() {
    var change = PictureChange()
    var seed: UInt32 = 7
    let full = Region(x: 0, y: 0, width: width, height: height)
    _ = frame(scene(noise: 12, seed: &seed)) { change.changed($0, region: full) }
    for _ in 0..<50 { #expect(!frame(scene(noise: 12, seed: &seed)) { change.changed($0, region: full) }) }
    // 48 × 48 px of 320 × 240 (3 %): a small code at the edge of reading distance.
    let square = (x: 200, y: 100, side: 48, level: UInt8(20))
    #expect(frame(scene(noise: 12, seed: &seed, square: square)) { change.changed($0, region: full) })
    // It stays: no change on the next frames; it goes: a change.
    #expect(!frame(scene(noise: 12, seed: &seed, square: square)) { change.changed($0, region: full) })
    #expect(frame(scene(noise: 12, seed: &seed)) { change.changed($0, region: full) })
  }

  @Test("a change made slowly adds up while the reference is kept; without it, it goes unseen")
  func slowChange() {
    let full = Region(x: 0, y: 0, width: width, height: height)
    var kept = PictureChange(), rolling = PictureChange()
    var seed: UInt32 = 3
    _ = frame(scene(noise: 0, seed: &seed)) { kept.changed($0, region: full) }
    _ = frame(scene(noise: 0, seed: &seed)) { rolling.changed($0, region: full) }
    var keptSaw = false, rollingSaw = false
    // A dark square fading in by 4 levels a frame (a phone screen waking, a slow approach).
    for step in 1...30 {
      let pixels = scene(noise: 0, seed: &seed, square: (x: 100, y: 60, side: 80, level: UInt8(max(0, 130 - 4 * step))))
      if frame(pixels, { kept.changed($0, region: full, keepingReference: true) }) { keptSaw = true }
      if frame(pixels, { rolling.changed($0, region: full) }) { rollingSaw = true }
    }
    #expect(keptSaw)
    #expect(!rollingSaw, "frame to frame, 4 levels never cross the threshold")
  }

  @Test("a region of interest and a 2-byte pixel stride (YUYV): only that region's luma counts")
  func regionAndStride() {
    // 320 × 240 YUYV-like: luma at even bytes, chroma (changing wildly) at odd ones.
    func yuyv(square: Bool, chroma: UInt8) -> [UInt8] {
      var bytes = [UInt8](repeating: 0, count: width * height * 2)
      for y in 0..<height {
        for x in 0..<width {
          let inSquare = square && x >= 20 && x < 70 && y >= 20 && y < 70
          bytes[(y * width + x) * 2] = inSquare ? 10 : 150
          bytes[(y * width + x) * 2 + 1] = chroma &+ UInt8(truncatingIfNeeded: x)
        }
      }
      return bytes
    }
    func look(_ change: inout PictureChange, _ bytes: [UInt8], _ region: Region) -> Bool {
      bytes.withUnsafeBytes {
        change.changed(
          LumaFrame(
            bytes: $0, geometry: FrameGeometry(width: width, height: height, rowStrideBytes: width * 2, pixelStrideBytes: 2),
            captured: Instant(nanoseconds: 0), sequence: 0), region: region)
      }
    }
    let right = Region(x: 160, y: 0, width: 160, height: 240), left = Region(x: 0, y: 0, width: 160, height: 240)
    var r = PictureChange(), l = PictureChange()
    _ = look(&r, yuyv(square: false, chroma: 0), right)
    _ = look(&l, yuyv(square: false, chroma: 0), left)
    #expect(!look(&r, yuyv(square: false, chroma: 99), right), "chroma is not the picture")
    #expect(!look(&r, yuyv(square: true, chroma: 7), right), "the square is outside the right half")
    #expect(look(&l, yuyv(square: true, chroma: 7), left), "and inside the left one")
  }
}
