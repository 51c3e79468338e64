import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The libcamera source's plane handoff through the CCamera shim, on a tmpfs file standing in for a
/// frame buffer's dmabuf: the shim maps the plane in place (no copy), at an offset that is not
/// page-aligned, and the lent frame walks the luma samples of each format's layout.
@Suite struct LibcameraSourceTests {
  /// An unlinked tmpfs file of `size` bytes holding `bytes` at `offset`.
  static func memfd(size: Int, bytes: [UInt8], at offset: Int) throws -> Int32 {
    var template = Array("/dev/shm/scangate-plane-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    try #require(fd >= 0)
    unlink(template)
    try #require(ftruncate(fd, off_t(size)) == 0)
    try #require(pwrite(fd, bytes, bytes.count, off_t(offset)) == bytes.count)
    return fd
  }

  @Test("BGR888: the green byte of each pixel is the luma, read in place at an unaligned offset")
  func packedRGBGreenIsLuma() throws {
    let width = 6, height = 4, stride = 20  // 18 bytes of pixels, 2 bytes of row padding
    var bytes = [UInt8](repeating: 0, count: stride * height)
    for y in 0..<height {
      for x in 0..<width {
        bytes[y * stride + x * 3] = 1  // R
        bytes[y * stride + x * 3 + 1] = UInt8(10 * y + x)  // G
        bytes[y * stride + x * 3 + 2] = 2  // B
      }
    }
    let offset = 4096 + 100
    let fd = try Self.memfd(size: 3 * 4096, bytes: bytes, at: offset)
    defer { close(fd) }
    let plane = try MappedPlane(descriptor: fd, offset: UInt32(offset), length: UInt32(bytes.count))
    let seen = plane.withLuma(pixelFormat: "BGR888", width: width, height: height, rowStrideBytes: stride) { frame in
      (0..<height).flatMap { y in (0..<width).map { x in frame.luma(x: x, y: y) } }
    }
    #expect(seen == (0..<height).flatMap { y in (0..<width).map { x in UInt8(10 * y + x) } })

    // In place: what the camera writes into the buffer after mapping is what the frame shows.
    var changed: UInt8 = 99
    #expect(pwrite(fd, &changed, 1, off_t(offset + 2 * stride + 3 * 3 + 1)) == 1)
    let after = plane.withLuma(pixelFormat: "BGR888", width: width, height: height, rowStrideBytes: stride) {
      $0.luma(x: 3, y: 2)
    }
    #expect(after == 99)
  }

  @Test("NV12 and R8 lend plane 0 byte for byte; YUYV every other byte; UYVY from byte 1")
  func planarAndPackedYUV() throws {
    let width = 8, height = 2
    let bytes = (0..<(width * 2 * height)).map { UInt8($0) }
    let fd = try Self.memfd(size: 4096, bytes: bytes, at: 0)
    defer { close(fd) }
    let plane = try MappedPlane(descriptor: fd, offset: 0, length: UInt32(bytes.count))
    for format in ["NV12", "R8", "YUV420"] {
      let row1 = plane.withLuma(pixelFormat: format, width: width, height: height, rowStrideBytes: width) { f in
        (0..<width).map { f.luma(x: $0, y: 1) }
      }
      #expect(row1 == Array(bytes[width..<(2 * width)]), "\(format)")
    }
    let yuyv = plane.withLuma(pixelFormat: "YUYV", width: width, height: height, rowStrideBytes: 2 * width) { f in
      (0..<width).map { f.luma(x: $0, y: 1) }
    }
    #expect(yuyv == (0..<width).map { UInt8(2 * width + 2 * $0) })
    let uyvy = plane.withLuma(pixelFormat: "UYVY", width: width, height: height, rowStrideBytes: 2 * width) { f in
      f.luma(x: 0, y: 0)
    }
    #expect(uyvy == 1)
  }

  @Test("a format without a luma plane, or a geometry larger than the plane, is not lent")
  func refusals() throws {
    let fd = try Self.memfd(size: 4096, bytes: [1, 2, 3], at: 0)
    defer { close(fd) }
    let plane = try MappedPlane(descriptor: fd, offset: 0, length: 64)
    #expect(MappedPlane.lumaLayout("MJPEG") == nil)
    #expect(MappedPlane.lumaLayout("SRGGB10_CSI2P") == nil)
    #expect(plane.withLuma(pixelFormat: "MJPEG", width: 8, height: 8, rowStrideBytes: 8) { _ in 1 } == nil)
    #expect(plane.withLuma(pixelFormat: "R8", width: 8, height: 9, rowStrideBytes: 8) { _ in 1 } == nil)
    #expect(plane.withLuma(pixelFormat: "BGR888", width: 8, height: 3, rowStrideBytes: 24) { _ in 1 } == nil)
    #expect(throws: SystemError.self) { _ = try MappedPlane(descriptor: -1, offset: 0, length: 64) }
  }

  @Test("opening a camera that is not there fails as a lost device (retried), or says libcamera is not built")
  func missingCamera() {
    let settings = LibcameraSourceSettings(
      width: 640, height: 480, fps: 30, buffers: 4,
      camera: {
        var c = LibcameraSettings(); c.camera = "no-such-camera"; return c
      }())
    do {
      _ = try LibcameraFrameSource(settings)
      Issue.record("opened a camera that does not exist")
    } catch {
      if LibcameraFrameSource.isBuilt {
        #expect(error == .deviceLost(errno: .noDevice))
      } else {
        guard case .formatRejected(let message) = error else { Issue.record("\(error)"); return }
        #expect(message.contains("without libcamera"))
      }
    }
  }
}
