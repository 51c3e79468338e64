import ScanBase

/// Gray frames held in memory and lent in place, in a given order: the replay source's and the
/// simulator's storage. Frames are copied in once, at init; lending one allocates nothing. The
/// storage is freed when the last copy of the reel goes away (a source dropped by the loop on a
/// reopen frees its frames: there is nothing to release by hand).
public struct FrameReel {
  public let width: Int
  public let height: Int
  public let count: Int
  private let storage: Storage

  /// The pixels, owned by one object so that every copy of a reel shares them and the last one frees them.
  private final class Storage {
    let pixels: UnsafeMutableRawBufferPointer
    init(byteCount: Int) { pixels = .allocate(byteCount: byteCount, alignment: 64) }
    deinit { pixels.deallocate() }
  }

  /// - Parameter frames: gray frames, each `width * height` bytes (at least one).
  public init(width: Int, height: Int, frames: [[UInt8]]) {
    precondition(!frames.isEmpty && frames.allSatisfy { $0.count == width * height })
    self.width = width
    self.height = height
    count = frames.count
    storage = Storage(byteCount: width * height * frames.count)
    for (i, frame) in frames.enumerated() {
      frame.withUnsafeBytes {
        storage.pixels.baseAddress!.advanced(by: i * width * height).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
      }
    }
  }

  /// Frame `index` as a luma frame, valid while this reel (or a copy of it) exists.
  public func frame(_ index: Int, captured: Instant, sequence: UInt64) -> LumaFrame {
    precondition(index >= 0 && index < count)
    let start = index * width * height
    return LumaFrame(
      bytes: UnsafeRawBufferPointer(rebasing: storage.pixels[start..<(start + width * height)]),
      geometry: .gray(width: width, height: height), captured: captured, sequence: sequence)
  }
}

/// A frame source the loop polls: a device with a descriptor, or a self-paced source (a replay)
/// that says when its next frame is due.
public protocol LoopFrameSource: FrameSource, ~Copyable {
  /// The descriptor to poll for a frame, or -1 for a self-paced source.
  var pollDescriptor: Int32 { get }
  /// Milliseconds until a self-paced source has its next frame (0: now).
  func millisecondsUntilReady(at now: Instant) -> Int
  /// One line for STATUS: device or path, format and size.
  var summary: String { get }
  /// Which camera lent the last frame, for a source of more than one (`CameraPair`); nil: one camera.
  var origin: FrameOrigin? { get }
}

extension LoopFrameSource where Self: ~Copyable {
  public var origin: FrameOrigin? { nil }
}

/// Which of a reader's cameras the frame being decided came from: 0 the first, 1 the second.
/// Set on the loop's thread (by the source as it lends a frame, and by the loop when a decoder
/// worker's reply is decided), read there by whoever acts on the decision (a turnstile's
/// direction): one reference shared by the source, the loop and the gate, no allocation per frame.
public final class FrameOrigin {
  public var camera = 0
  public init() {}
}
