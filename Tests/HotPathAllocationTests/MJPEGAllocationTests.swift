import CAllocCounter
import CImageIO
import CTestJPEG
import Glibc
import ScanCore
import ScanLinux
import ScanService
import Testing

/// The MJPEG camera path: the frame decoder (libjpeg with its per-image pool in a fixed arena)
/// turns camera-like JPEG frames into the gray plane and makes no heap allocation per frame.
/// The frames are encoded by libturbojpeg's encoder (independent of the decoder under test) and
/// checked by zxing-cpp after decoding.
@Suite(.serialized) struct MJPEGAllocationTests {
  static let width = 640, height = 480

  /// Camera-like frames: one YCbCr 4:2:2 and one gray JPEG per scene of HotPathAllocationTests.
  static func jpegFrames() -> [[UInt8]] {
    var out: [[UInt8]] = []
    for pixels in HotPathAllocationTests.frames() {
      for chroma: Int32 in [1, 0] {
        var jpeg = [UInt8](repeating: 0, count: 1 << 20)
        let size = pixels.withUnsafeBufferPointer { p in
          jpeg.withUnsafeMutableBufferPointer { j in
            test_jpeg_encode(p.baseAddress, Int32(width), Int32(height), 85, chroma, j.baseAddress, j.count)
          }
        }
        precondition(size > 0, "test JPEG encoding failed")
        out.append(Array(jpeg[0..<size]))
      }
    }
    return out
  }

  @Test("MJPEG frames decode to gray with 0 allocations over 1,200 frames after warm-up")
  func decodeDoesNotAllocate() throws {
    let frames = Self.jpegFrames()
    let handle = try #require(sg_jpeg_create(MemoryBudget.mjpegArenaBytes(width: Self.width)))
    defer { sg_jpeg_destroy(handle) }
    let plane = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Self.width * Self.height)
    defer { plane.deallocate() }
    var decoder = try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
    var w: Int32 = 0, h: Int32 = 0

    func decode(_ i: Int, scale: Int32 = 1) -> Int32 {
      frames[i].withUnsafeBufferPointer { j in
        sg_jpeg_decode_frame(handle, j.baseAddress, j.count, scale, plane.baseAddress, plane.count, &w, &h)
      }
    }
    for i in 0..<frames.count * 3 { #expect(decode(i % frames.count) == 0) }  // warm-up
    alloc_counter_reset()
    var failures = 0
    for i in 0..<1_200 where decode(i % frames.count) != 0 { failures += 1 }
    let allocations = alloc_counter_mallocs(), bytes = alloc_counter_bytes()
    #expect(allocations == 0, "\(allocations) allocations (\(bytes) bytes) in 1,200 MJPEG frames")
    #expect(failures == 0)
    var highWater = 0, overflows: UInt64 = 0, warnings: UInt64 = 0
    sg_jpeg_statistics(handle, &highWater, &overflows, &warnings)
    #expect(overflows == 0 && warnings == 0)
    #expect(highWater > 0 && highWater <= MemoryBudget.mjpegArenaBytes(width: Self.width), "arena high water \(highWater) bytes")
    print("MJPEG arena decoder: \(allocations) allocations in 1,200 frames; arena high water \(highWater) bytes")

    // The decoded planes are the frames: the listed code (4:2:2 and gray) reads back with zxing-cpp,
    // and the empty frame's pixels are within JPEG's error of the original.
    for i in [2, 3] {
      #expect(decode(i) == 0 && w == Int32(Self.width) && h == Int32(Self.height))
      results.removeAll()
      decoder.decode(
        LumaFrame(
          bytes: UnsafeRawBufferPointer(plane), geometry: .gray(width: Self.width, height: Self.height),
          captured: Instant(nanoseconds: 0), sequence: 0),
        formats: .qrCode, into: &results)
      #expect(results.count == 1)
      if results.count == 1 { #expect(Array(results.text(0)) == Array("ALICE-0001".utf8)) }
    }
    #expect(decode(0) == 0)
    #expect(plane.allSatisfy { abs(Int($0) - 180) <= 3 })
    // Half scale, as mjpeg_half_scale asks, from the same decoder.
    #expect(decode(2, scale: 2) == 0 && w == Int32(Self.width / 2) && h == Int32(Self.height / 2))
  }

  @Test(
    "the large camera modes: 1280×720 and 1920×1080 MJPEG frames decode in the arena the budget gives them, 0 allocations",
    arguments: [(1280, 720), (1920, 1080)])
  func largeModesDoNotAllocate(size: (Int, Int)) throws {
    let (width, height) = size
    let code = try #require(renderQRCode(Array("WIDE-0042".utf8), scale: 8))
    var pixels = [UInt8](repeating: 185, count: width * height)
    let ox = width * 2 / 3, oy = height / 3
    for y in 0..<code.height { for x in 0..<code.width { pixels[(oy + y) * width + ox + x] = code.pixels[y * code.width + x] } }
    var jpeg = [UInt8](repeating: 0, count: 8 << 20)
    let size = pixels.withUnsafeBufferPointer { p in
      jpeg.withUnsafeMutableBufferPointer { j in test_jpeg_encode(p.baseAddress, Int32(width), Int32(height), 85, 1, j.baseAddress, j.count) }
    }
    try #require(size > 0)
    jpeg.removeSubrange(size...)
    let budget = MemoryBudget.mjpegArenaBytes(width: width)
    let handle = try #require(sg_jpeg_create(budget))
    defer { sg_jpeg_destroy(handle) }
    let plane = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: width * height)
    defer { plane.deallocate() }
    var w: Int32 = 0, h: Int32 = 0
    func decode() -> Int32 {
      jpeg.withUnsafeBufferPointer { j in sg_jpeg_decode_frame(handle, j.baseAddress, j.count, 1, plane.baseAddress, plane.count, &w, &h) }
    }
    for _ in 0..<3 { #expect(decode() == 0) }
    alloc_counter_reset()
    var failures = 0
    for _ in 0..<200 where decode() != 0 { failures += 1 }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0 && failures == 0, "\(allocations) allocations, \(failures) failures in 200 \(width)×\(height) frames")
    var highWater = 0, overflows: UInt64 = 0, warnings: UInt64 = 0
    sg_jpeg_statistics(handle, &highWater, &overflows, &warnings)
    #expect(overflows == 0 && warnings == 0 && highWater <= budget, "arena high water \(highWater) of \(budget) bytes")
    #expect(w == Int32(width) && h == Int32(height))
    var decoder = try ZXingDecoder(arenaBytes: 32 << 20, capacity: 8)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 256)
    decoder.decode(
      LumaFrame(
        bytes: UnsafeRawBufferPointer(plane), geometry: .gray(width: width, height: height), captured: Instant(nanoseconds: 0),
        sequence: 0),
      formats: .qrCode, into: &results)
    #expect(results.count == 1 && Array(results.text(0)) == Array("WIDE-0042".utf8))
  }

  /// The counter sees allocations inside a C library's decoder: libturbojpeg, as the frame path
  /// used it before the arena (one handle kept), allocates on every frame.
  @Test("libturbojpeg's decompressor allocates per frame (what the arena removes), and it is counted")
  func turbojpegAllocates() throws {
    let frames = Self.jpegFrames()
    let handle = try #require(test_jpeg_turbo_create())
    defer { test_jpeg_turbo_destroy(handle) }
    var plane = [UInt8](repeating: 0, count: Self.width * Self.height)
    func decode(_ i: Int) -> Int32 {
      frames[i].withUnsafeBufferPointer { j in
        plane.withUnsafeMutableBufferPointer { test_jpeg_turbo_decode(handle, j.baseAddress, j.count, $0.baseAddress, Int32(Self.width), Int32(Self.height)) }
      }
    }
    for i in 0..<frames.count { #expect(decode(i) == 0) }
    alloc_counter_reset()
    for i in 0..<100 { #expect(decode(i % frames.count) == 0) }
    let perFrame = Double(alloc_counter_mallocs()) / 100
    print("libturbojpeg: \(perFrame) allocations per 640x480 frame")
    #expect(perFrame >= 1)
  }

  @Test("a corrupt or truncated MJPEG frame is refused or decoded partially, and the next frame decodes")
  func corruptFrames() throws {
    let frames = Self.jpegFrames()
    let handle = try #require(sg_jpeg_create(MemoryBudget.mjpegArenaBytes(width: Self.width)))
    defer { sg_jpeg_destroy(handle) }
    let plane = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: Self.width * Self.height)
    defer { plane.deallocate() }
    var w: Int32 = 0, h: Int32 = 0
    func decode(_ bytes: [UInt8]) -> Int32 {
      bytes.withUnsafeBufferPointer { j in
        sg_jpeg_decode_frame(handle, j.baseAddress, j.count, 1, plane.baseAddress, plane.count, &w, &h)
      }
    }
    #expect(decode(Array("not a jpeg".utf8)) == -1)
    #expect(decode([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) == -1)
    _ = decode(Array(frames[2][0..<(frames[2].count / 2)]))  // truncated: a warning, pixels up to the cut
    var garbled = frames[2]
    for i in stride(from: 700, to: garbled.count - 2, by: 97) { garbled[i] ^= 0x5A }
    _ = decode(garbled)
    #expect(decode(frames[2]) == 0 && w == Int32(Self.width))
    // Larger than the plane: refused before any pixel is written.
    let small = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 100)
    defer { small.deallocate() }
    let tooLarge = frames[0].withUnsafeBufferPointer { j in
      sg_jpeg_decode_frame(handle, j.baseAddress, j.count, 1, small.baseAddress, small.count, &w, &h)
    }
    #expect(tooLarge == -1)
  }

  @Test("an arena too small for the frame falls back to libjpeg's allocator, counted, with the same pixels")
  func arenaOverflow() throws {
    let frame = Self.jpegFrames()[2]
    let roomy = try #require(sg_jpeg_create(MemoryBudget.mjpegArenaBytes(width: Self.width)))
    let tiny = try #require(sg_jpeg_create(1024))
    defer { sg_jpeg_destroy(roomy); sg_jpeg_destroy(tiny) }
    var w: Int32 = 0, h: Int32 = 0
    func decode(_ handle: sg_jpeg_handle) -> [UInt8] {
      var plane = [UInt8](repeating: 0, count: Self.width * Self.height)
      let rc = frame.withUnsafeBufferPointer { j in
        plane.withUnsafeMutableBufferPointer { sg_jpeg_decode_frame(handle, j.baseAddress, j.count, 1, $0.baseAddress, $0.count, &w, &h) }
      }
      #expect(rc == 0)
      return plane
    }
    let a = decode(roomy), b = decode(tiny)
    var highWater = 0, overflows: UInt64 = 0, warnings: UInt64 = 0
    sg_jpeg_statistics(tiny, &highWater, &overflows, &warnings)
    #expect(overflows > 0 && highWater <= 1024)
    sg_jpeg_statistics(roomy, &highWater, &overflows, &warnings)
    #expect(overflows == 0)
    #expect(a == b)
  }
}
