import CCamera
import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// What a libcamera camera is opened with: the size, rate and buffers it shares with V4L2,
/// and the camera's own settings.
public struct LibcameraSourceSettings: Equatable, Sendable {
  public var width: Int
  public var height: Int
  public var fps: Int
  public var buffers: Int
  public var camera: LibcameraSettings
  public init(width: Int, height: Int, fps: Int, buffers: Int, camera: LibcameraSettings = LibcameraSettings()) {
    self.width = width; self.height = height; self.fps = fps; self.buffers = buffers; self.camera = camera
  }
}

/// What the libcamera camera was opened with.
public struct LibcameraDescription: Equatable, Sendable {
  public var id: String
  public var model: String
  public var pixelFormat: String
  public var width: Int
  public var height: Int
  public var buffers: Int
  /// Controls the camera took, and those asked for that it does not have (names).
  public var controlsApplied: [String]
  public var controlsMissing: [String]
}

/// A camera served by libcamera (Pi camera modules through the Pi's ISP, and any camera with
/// a libcamera pipeline handler), through the CCamera shim.
///
/// Buffers are allocated and their luma planes mapped at open; libcamera completes requests on
/// its own thread and the shim signals an eventfd, which the loop polls. `withNextFrame` lends
/// the newest frame's luma plane in place (older ones go straight back to the camera and count
/// as drops); `deinit` stops the camera and frees everything.
public struct LibcameraFrameSource: FrameSource, LoopFrameSource, ~Copyable {
  public let description: LibcameraDescription
  private let handle: OpaquePointer
  private let geometry: FrameGeometry
  private let lumaOffset: Int
  public private(set) var droppedFrames: UInt64 = 0

  /// Whether this build has libcamera (without it, opening fails with a message saying so).
  public static var isBuilt: Bool { sg_cam_built() != 0 }
  /// The libcamera version this build was compiled against.
  public static var libraryVersion: String { String(cString: sg_cam_library_version()) }
  /// Why a libcamera source cannot work in this build, or nil when it can.
  public static var unavailableReason: String? {
    guard !isBuilt else { return nil }
    var text = [CChar](repeating: 0, count: 256)
    _ = sg_cam_list(&text, text.count)
    return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
  }

  /// Opens the camera, allocates and maps its buffers and starts streaming. Throws
  /// `.deviceLost` when there is no such camera or libcamera fails (the loop retries with
  /// backoff), `.formatRejected` when it offers no usable format or size.
  public init(_ settings: LibcameraSourceSettings) throws(CaptureError) {
    var info = sg_cam_info()
    var error = [CChar](repeating: 0, count: 512)
    var opened: OpaquePointer? = nil
    let c = settings.camera
    let rc = c.camera.withCString { camera -> Int32 in
      var s = sg_cam_settings(
        camera: camera, width: UInt32(settings.width), height: UInt32(settings.height), fps: UInt32(settings.fps),
        buffers: UInt32(settings.buffers), exposure_us: Int32(c.exposureMicroseconds),
        exposure_max_us: Int32(c.exposureMaxMicroseconds), af_mode: Self.afMode(c.autofocus),
        lens_dioptres: c.lensDioptres ?? -1)
      return sg_cam_open(&s, &opened, &info, &error, error.count)
    }
    let message = error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    guard Int(rc) == SG_CAM_OK, let opened else {
      switch Int(rc) {
      case SG_CAM_FORMAT, SG_CAM_NOT_BUILT: throw .formatRejected(message)
      case SG_CAM_BUSY: throw .deviceLost(errno: .busy)
      case SG_CAM_NOT_FOUND: throw .deviceLost(errno: .noDevice)
      default: throw .deviceLost(errno: .ioError)
      }
    }
    handle = opened
    lumaOffset = Int(info.luma_offset)
    geometry = FrameGeometry(
      width: Int(info.width), height: Int(info.height), rowStrideBytes: Int(info.row_stride),
      pixelStrideBytes: Int(info.pixel_stride))
    description = LibcameraDescription(
      id: Self.text(&info.id), model: Self.text(&info.model), pixelFormat: Self.text(&info.pixel_format),
      width: Int(info.width), height: Int(info.height), buffers: Int(info.buffers),
      controlsApplied: Self.controlNames(info.controls_applied), controlsMissing: Self.controlNames(info.controls_missing))
  }

  deinit { sg_cam_close(handle) }

  /// Stops streaming and releases the camera now.
  public consuming func close() {}

  /// Frames the camera completed with an error (not lent).
  public var failedFrames: UInt64 { sg_cam_failed_frames(handle) }

  public var pollDescriptor: Int32 { sg_cam_event_fd(handle) }
  public func millisecondsUntilReady(at now: Instant) -> Int { 0 }
  public var summary: String {
    let d = description
    return "libcamera \(d.id)\(d.model.isEmpty ? "" : " \(d.model)") \(d.pixelFormat) \(d.width)x\(d.height) \(d.buffers) buffers"
  }

  public mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    if timeoutMilliseconds > 0 {
      var pfd = pollfd(fd: sg_cam_event_fd(handle), events: Int16(POLLIN), revents: 0)
      let ready: Int32
      do { ready = try syscall("poll camera", { poll(&pfd, 1, Int32(timeoutMilliseconds)) }) } catch {
        throw .deviceLost(errno: error.code)
      }
      if ready == 0 { return nil }
    }
    var plane: UnsafePointer<UInt8>? = nil
    var length = 0
    var timestamp: UInt64 = 0
    var sequence: UInt64 = 0
    let taken = sg_cam_take(handle, &plane, &length, &timestamp, &sequence, &droppedFrames)
    if Int(taken) == SG_CAM_LOST { throw .deviceLost(errno: .noDevice) }
    guard taken == 1, let plane, length > lumaOffset else { return nil }
    let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(plane) + lumaOffset, count: length - lumaOffset)
    let captured = Instant(nanoseconds: timestamp == 0 ? sg_monotonic_ns() : timestamp)
    let result = body(LumaFrame(bytes: bytes, geometry: geometry, captured: captured, sequence: sequence))
    if Int(sg_cam_return(handle)) == SG_CAM_LOST { throw .deviceLost(errno: .noDevice) }
    return result
  }

  /// libcamera's cameras and their modes, one text line each (for `scangate probe`); or why
  /// none can be listed.
  public static func list() -> (count: Int, text: String) {
    var text = [CChar](repeating: 0, count: 16_384)
    let n = sg_cam_list(&text, text.count)
    return (Int(n), text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
  }

  static func afMode(_ mode: AutofocusMode) -> Int32 {
    switch mode {
    case .default: Int32(SG_CAM_AF_DEFAULT)
    case .continuous: Int32(SG_CAM_AF_CONTINUOUS)
    case .manual: Int32(SG_CAM_AF_MANUAL)
    }
  }

  static func controlNames(_ bits: UInt32) -> [String] {
    let names: [(UInt32, String)] = [
      (UInt32(SG_CAM_CTRL_EXPOSURE), "exposure"), (UInt32(SG_CAM_CTRL_FRAME_DURATION), "frame-duration"),
      (UInt32(SG_CAM_CTRL_AF_MODE), "autofocus"), (UInt32(SG_CAM_CTRL_LENS_POSITION), "lens-position"),
    ]
    return names.filter { bits & $0.0 != 0 }.map(\.1)
  }

  static func text<T>(_ tuple: inout T) -> String {
    withUnsafeBytes(of: &tuple) { raw in
      String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
  }
}

/// One frame buffer's plane mapped in place through the shim (the open path maps every buffer
/// the same way), lent as a luma frame with the layout its pixel format has.
public struct MappedPlane: ~Copyable {
  private var plane: sg_cam_plane

  /// Maps `length` bytes at `offset` of `descriptor` (a dmabuf, or any mappable file) read-only.
  public init(descriptor: Int32, offset: UInt32, length: UInt32) throws(SystemError) {
    var mapped = sg_cam_plane()
    guard Int(sg_cam_map_plane(descriptor, offset, length, &mapped)) == SG_CAM_OK else {
      throw SystemError.current("map plane")
    }
    plane = mapped
  }

  deinit {
    var mapped = plane
    sg_cam_unmap_plane(&mapped)
  }

  /// The pixel stride and first-luma offset of a libcamera format name; nil when it has no
  /// usable luma plane.
  public static func lumaLayout(_ pixelFormat: String) -> (pixelStride: Int, offset: Int)? {
    var stride: UInt32 = 0, offset: UInt32 = 0
    guard Int(sg_cam_luma_layout(pixelFormat, &stride, &offset)) == SG_CAM_OK else { return nil }
    return (Int(stride), Int(offset))
  }

  /// Lends the plane as a frame of `pixelFormat` (nil: no luma in that format, or the plane
  /// is smaller than the geometry).
  public func withLuma<R>(
    pixelFormat: String, width: Int, height: Int, rowStrideBytes: Int, _ body: (LumaFrame) -> R
  ) -> R? {
    guard let layout = Self.lumaLayout(pixelFormat), let start = plane.plane else { return nil }
    let geometry = FrameGeometry(width: width, height: height, rowStrideBytes: rowStrideBytes, pixelStrideBytes: layout.pixelStride)
    guard geometry.spanBytes + layout.offset <= plane.plane_length else { return nil }
    let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(start) + layout.offset, count: plane.plane_length - layout.offset)
    return body(LumaFrame(bytes: bytes, geometry: geometry, captured: Instant(nanoseconds: 0), sequence: 0))
  }
}
