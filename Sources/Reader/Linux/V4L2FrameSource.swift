import CImageIO
import CLinux
import CV4L2
import Glibc
import ScanCore
import ScanPlatform

/// What the camera was opened with.
public struct CameraDescription: Equatable, Sendable {
  public var path: String
  public var driver: String
  public var card: String
  public var fourcc: String
  public var width: Int
  public var height: Int
  public var buffers: Int
}

/// Settings for opening a V4L2 camera.
public struct CameraSettings: Equatable, Sendable {
  public var path: String
  public var width: Int
  public var height: Int
  public var fps: Int
  public var format: CameraPixelFormat
  public var buffers: Int
  public var mjpegHalfScale: Bool
  public init(path: String, width: Int, height: Int, fps: Int, format: CameraPixelFormat, buffers: Int, mjpegHalfScale: Bool = false) {
    self.path = path; self.width = width; self.height = height; self.fps = fps
    self.format = format; self.buffers = buffers; self.mjpegHalfScale = mjpegHalfScale
  }
}

/// A V4L2 camera streaming into mmap'd driver buffers through libv4l2 (or the C library's calls
/// under an LD_PRELOAD layer such as `libcamerify`), in a native format: GREY, YUYV, planar
/// YUV 4:2:0 (YU12, NV12, NV21: the luma plane) and packed RGB (RGB3, BGR3: the green bytes as
/// luma) are read in place; MJPEG is decoded to gray into a plane allocated at open.
///
/// `withNextFrame` drains the queue and lends only the newest frame (older ones go straight
/// back to the driver and count as drops). `deinit` stops streaming, unmaps and closes.
public struct V4L2FrameSource: FrameSource, ~Copyable {
  public let description: CameraDescription
  public let descriptor: Int32
  private let fourcc: UInt32
  private let bytesPerLine: Int
  /// The luma bytes in place: the first one's offset in a buffer, and the step between them.
  private let lumaOffset: Int
  private let pixelStride: Int
  /// The driver's buffers mapped into this process (address, length), one per buffer index.
  typealias Mappings = UnsafeMutableBufferPointer<(address: UnsafeMutableRawPointer, length: Int)>
  private let mappings: Mappings
  private let grayPlane: UnsafeMutableRawBufferPointer
  private let jpeg: sg_jpeg_handle?
  private let halfScale: Bool
  public private(set) var droppedFrames: UInt64 = 0
  public private(set) var corruptFrames: UInt64 = 0

  /// Opens, negotiates and starts streaming. Throws `.deviceLost` (with errno) when the device
  /// is missing or fails, `.formatRejected` when it has no usable native format.
  public init(_ settings: CameraSettings) throws(CaptureError) {
    let fd: Int32
    do { fd = try syscall("open \(settings.path)", { sg_v4l2_open(settings.path) }) } catch {
      throw .deviceLost(errno: error.code)
    }
    var driver = [CChar](repeating: 0, count: 32), card = [CChar](repeating: 0, count: 64)
    var streaming: Int32 = 0
    func fail(_ error: CaptureError) -> CaptureError { _ = sg_v4l2_close(fd); return error }
    /// Runs one driver call under the errno policy; a failure closes the device.
    func check(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(CaptureError) -> Int32 {
      do { return try syscall(operation(), call) } catch { throw fail(.deviceLost(errno: error.code)) }
    }
    _ = try check("VIDIOC_QUERYCAP", { sg_v4l2_query(fd, &driver, driver.count, &card, card.count, &streaming) })
    guard streaming != 0 else { throw fail(.formatRejected("\(settings.path) cannot capture with mmap streaming")) }

    let format: Format
    do { format = try Self.setFormat(fd, settings) } catch { throw fail(error) }
    let (chosen, w, h, bpl) = (format.fourcc, format.width, format.height, format.bytesPerLine)
    let isJPEG = chosen == SG_PIX_FMT_MJPEG || chosen == SG_PIX_FMT_JPEG
    let layout = Self.layout(chosen) ?? (bytesPerPixel: 1, lumaOffset: 0)
    // Buggy-driver paranoia (the kernel's capture example does the same).
    let minimumLine = Int(w) * layout.bytesPerPixel
    let rowBytes = isJPEG ? Int(w) : max(Int(bpl), minimumLine)
    _ = try? syscall("VIDIOC_S_PARM", { sg_v4l2_set_fps(fd, UInt32(settings.fps)) })  // optional: not every driver sets a rate
    let granted = try check("VIDIOC_REQBUFS", { sg_v4l2_request_buffers(fd, UInt32(settings.buffers)) })
    guard granted >= 2 else { throw fail(.deviceLost(errno: .noMemory)) }
    let maps: Mappings
    do {
      maps = try Self.mapBuffers(
        fd, count: Int(granted), frameBytes: isJPEG ? nil : (Int(h) - 1) * rowBytes + minimumLine, width: w, height: h)
    } catch { throw fail(error) }
    /// A driver call after buffers are mapped: a failure unmaps them too.
    func checkMapped(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(CaptureError) {
      do { _ = try syscall(operation(), call) } catch {
        Self.release(maps)
        throw fail(.deviceLost(errno: error.code))
      }
    }
    for i in 0..<Int(granted) { try checkMapped("VIDIOC_QBUF", { sg_v4l2_queue(fd, UInt32(i)) }) }
    try checkMapped("VIDIOC_STREAMON", { sg_v4l2_stream(fd, 1) })
    descriptor = fd
    fourcc = chosen
    bytesPerLine = rowBytes
    lumaOffset = layout.lumaOffset
    pixelStride = layout.bytesPerPixel
    mappings = maps
    halfScale = settings.mjpegHalfScale
    grayPlane = .allocate(byteCount: isJPEG ? Int(w) * Int(h) : 1, alignment: 64)
    grayPlane.initializeMemory(as: UInt8.self, repeating: 0)
    jpeg = isJPEG ? sg_jpeg_create(MemoryBudget.mjpegArenaBytes(width: Int(w))) : nil
    let driverName = driver.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    let cardName = card.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    description = CameraDescription(
      path: settings.path, driver: driverName, card: cardName, fourcc: Self.name(chosen),
      width: Int(w) / (isJPEG && settings.mjpegHalfScale ? 2 : 1), height: Int(h) / (isJPEG && settings.mjpegHalfScale ? 2 : 1),
      buffers: Int(granted))
    self.width = Int(w)
    self.height = Int(h)
  }

  /// The format the driver set: its fourcc, frame size and bytes per line.
  typealias Format = (fourcc: UInt32, width: UInt32, height: UInt32, bytesPerLine: UInt32)

  /// Chooses a native format and sets it (VIDIOC_S_FMT), refused when the driver switches it or
  /// sets a larger size than configured; the caller closes the device on a failure.
  private static func setFormat(_ fd: Int32, _ settings: CameraSettings) throws(CaptureError) -> Format {
    let chosen = try chooseFormat(fd, settings)
    var gotFourcc: UInt32 = 0, w: UInt32 = 0, h: UInt32 = 0, bpl: UInt32 = 0, sizeImage: UInt32 = 0
    do {
      _ = try syscall(
        "VIDIOC_S_FMT", { sg_v4l2_set_format(fd, chosen, UInt32(settings.width), UInt32(settings.height), &gotFourcc, &w, &h, &bpl, &sizeImage) })
    } catch { throw .deviceLost(errno: error.code) }
    guard gotFourcc == chosen else { throw .formatRejected("driver switched \(name(chosen)) to \(name(gotFourcc))") }
    guard Int(w) <= settings.width && Int(h) <= settings.height else {
      throw .formatRejected(
        "driver chose \(w)×\(h), larger than the configured \(settings.width)×\(settings.height); configure a size the camera offers (scangate probe lists them)"
      )
    }
    return (chosen, w, h, bpl)
  }

  /// Maps the `count` buffers the driver granted, each checked to hold `frameBytes` (a
  /// `width`×`height` frame; nil: any size, a JPEG); on a failure what was mapped is unmapped.
  static func mapBuffers(
    _ fd: Int32, count: Int, frameBytes: Int?, width w: UInt32, height h: UInt32
  ) throws(CaptureError) -> Mappings {
    let maps = Mappings.allocate(capacity: count)
    var mapped = 0
    func unwind() { release(maps, mapped: mapped) }
    for i in 0..<count {
      var address: UnsafeMutableRawPointer? = nil
      var length = 0
      do { _ = try syscall("map buffer \(i)", { sg_v4l2_map_buffer(fd, UInt32(i), &address, &length) }) } catch {
        unwind()
        throw .deviceLost(errno: error.code)
      }
      guard let address else {
        unwind()
        throw .deviceLost(errno: .noMemory)
      }
      if let frameBytes, length < frameBytes {
        _ = sg_v4l2_unmap(address, length)
        unwind()
        throw .formatRejected("driver buffer of \(length) bytes is smaller than a \(w)×\(h) frame")
      }
      maps[i] = (address, length)
      mapped += 1
    }
    return maps
  }

  /// Unmaps the first `mapped` buffers of `maps` (all of them by default) and frees the table.
  static func release(_ maps: Mappings, mapped: Int? = nil) {
    for i in 0..<(mapped ?? maps.count) { _ = sg_v4l2_unmap(maps[i].address, maps[i].length) }
    maps.deallocate()
  }

  private let width: Int
  private let height: Int

  /// The first native format the device offers, in ScanGate's order of preference.
  private static func chooseFormat(_ fd: Int32, _ settings: CameraSettings) throws(CaptureError) -> UInt32 {
    var offered: Set<UInt32> = []
    var index: UInt32 = 0
    var code: UInt32 = 0
    while index < 256 && sg_v4l2_enum_format(fd, index, &code) == 0 {
      if code != 0 { offered.insert(code) }
      index += 1
    }
    let wanted: [UInt32]
    switch settings.format {
    case .auto:
      wanted = [
        SG_PIX_FMT_GREY, SG_PIX_FMT_YUYV, SG_PIX_FMT_YUV420, SG_PIX_FMT_NV12, SG_PIX_FMT_NV21, SG_PIX_FMT_MJPEG,
        SG_PIX_FMT_JPEG, SG_PIX_FMT_RGB24, SG_PIX_FMT_BGR24,
      ]
    case .grey: wanted = [SG_PIX_FMT_GREY]
    case .yuyv: wanted = [SG_PIX_FMT_YUYV]
    case .yuv420: wanted = [SG_PIX_FMT_YUV420, SG_PIX_FMT_NV12, SG_PIX_FMT_NV21]
    case .rgb: wanted = [SG_PIX_FMT_RGB24, SG_PIX_FMT_BGR24]
    case .mjpeg: wanted = [SG_PIX_FMT_MJPEG, SG_PIX_FMT_JPEG]
    }
    guard let chosen = wanted.first(where: { offered.contains($0) }) else {
      throw .formatRejected(
        "\(settings.path) offers none of the formats asked for (\(settings.format.rawValue)); it offers \(offered.map(Self.name).sorted().joined(separator: ", "))"
      )
    }
    return chosen
  }

  /// How an uncompressed format's luma is read in place: bytes per pixel in a row (the step
  /// between luma bytes) and the first luma byte's offset; nil for JPEG.
  static func layout(_ fourcc: UInt32) -> (bytesPerPixel: Int, lumaOffset: Int)? {
    switch fourcc {
    case SG_PIX_FMT_GREY, SG_PIX_FMT_YUV420, SG_PIX_FMT_NV12, SG_PIX_FMT_NV21: (1, 0)
    case SG_PIX_FMT_YUYV: (2, 0)
    case SG_PIX_FMT_RGB24, SG_PIX_FMT_BGR24: (3, 1)  // green, the channel closest to luma
    default: nil
    }
  }

  deinit {
    _ = sg_v4l2_stream(descriptor, 0)
    Self.release(mappings)
    grayPlane.deallocate()
    sg_jpeg_destroy(jpeg)
    _ = sg_v4l2_close(descriptor)
  }

  /// Stops streaming and releases the device now.
  public consuming func close() {}

  static func name(_ fourcc: UInt32) -> String {
    var out: (CChar, CChar, CChar, CChar, CChar) = (0, 0, 0, 0, 0)
    return withUnsafeMutableBytes(of: &out) { raw in
      let p = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
      sg_v4l2_fourcc_name(fourcc, p)
      return String(cString: p)
    }
  }

  public mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    let ready: Int32
    do { ready = try syscall("poll camera", { poll(&pfd, 1, Int32(timeoutMilliseconds)) }) } catch {
      throw .deviceLost(errno: error.code)
    }
    if ready == 0 { return nil }
    if pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && pfd.revents & Int16(POLLIN) == 0 {
      throw .deviceLost(errno: .noDevice)
    }
    // Drain: keep only the newest buffer, requeue the rest at once. Each further DQBUF only
    // after poll says one is ready (libv4l2 logs every EAGAIN to stderr).
    var newest: Dequeued? = nil
    for attempt in 0..<mappings.count {
      if attempt > 0 {
        pfd.revents = 0
        let more: Int32
        do { more = try syscall("poll camera", { poll(&pfd, 1, 0) }) } catch {
          if let older = newest { _ = sg_v4l2_queue(descriptor, older.index) }
          throw .deviceLost(errno: error.code)
        }
        guard more == 1, pfd.revents & Int16(POLLIN) != 0 else { break }
      }
      var index: UInt32 = 0, used: UInt32 = 0, timestamp: UInt64 = 0, sequence: UInt32 = 0
      let outcome: IOResult<Int32>
      do { outcome = try syscallRetrying("VIDIOC_DQBUF", { sg_v4l2_dequeue(descriptor, &index, &used, &timestamp, &sequence) }) } catch {
        if let older = newest { _ = sg_v4l2_queue(descriptor, older.index) }
        throw .deviceLost(errno: error.code)
      }
      guard case .done = outcome else { break }
      precondition(Int(index) < mappings.count, "driver returned buffer index out of range")
      if let older = newest {
        droppedFrames &+= 1
        try requeue(older.index)
      }
      newest = (index, used, timestamp, sequence)
    }
    guard let frame = newest else { return nil }
    let result = lend(frame, body)
    try requeue(frame.index)
    return result
  }

  /// A dequeued buffer: its index, bytes used, capture time (0: none) and driver sequence.
  typealias Dequeued = (index: UInt32, used: UInt32, timestamp: UInt64, sequence: UInt32)

  /// Lends `frame`'s buffer to `body`: read in place, or for MJPEG decoded to gray first (nil,
  /// counted as corrupt, when it does not decode). The caller requeues the buffer.
  private mutating func lend<R>(_ frame: Dequeued, _ body: (LumaFrame) -> R) -> R? {
    let captured = Instant(nanoseconds: frame.timestamp == 0 ? sg_monotonic_ns() : frame.timestamp)
    let mapping = mappings[Int(frame.index)]
    let result: R?
    if let jpeg {
      var w: Int32 = 0, h: Int32 = 0
      let rc = sg_jpeg_decode_frame(
        jpeg, mapping.address.assumingMemoryBound(to: UInt8.self), Int(frame.used),
        halfScale ? 2 : 1, grayPlane.baseAddress!.assumingMemoryBound(to: UInt8.self),
        grayPlane.count, &w, &h)
      if rc != 0 {
        corruptFrames &+= 1
        result = nil
      } else {
        result = body(
          LumaFrame(
            bytes: UnsafeRawBufferPointer(rebasing: grayPlane[0..<(Int(w) * Int(h))]),
            geometry: .gray(width: Int(w), height: Int(h)), captured: captured, sequence: UInt64(frame.sequence)))
      }
    } else {
      let geometry = FrameGeometry(width: width, height: height, rowStrideBytes: bytesPerLine, pixelStrideBytes: pixelStride)
      result = body(
        LumaFrame(
          bytes: UnsafeRawBufferPointer(start: mapping.address + lumaOffset, count: mapping.length - lumaOffset),
          geometry: geometry, captured: captured, sequence: UInt64(frame.sequence)))
    }
    return result
  }

  private func requeue(_ index: UInt32) throws(CaptureError) {
    do { _ = try syscall("VIDIOC_QBUF", { sg_v4l2_queue(descriptor, index) }) } catch {
      throw .deviceLost(errno: error.code)
    }
  }
}
