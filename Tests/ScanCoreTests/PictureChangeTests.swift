import ScanCore
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
}
