/// Gray frames held in memory and lent in place, in a given order: the replay source's and the
/// simulator's storage. Frames are copied in once, at init; lending one allocates nothing.
public struct FrameReel {
  public let width: Int
  public let height: Int
  public let count: Int
  private let pixels: UnsafeMutableRawBufferPointer

  /// - Parameter frames: gray frames, each `width * height` bytes (at least one).
  public init(width: Int, height: Int, frames: [[UInt8]]) {
    precondition(!frames.isEmpty && frames.allSatisfy { $0.count == width * height })
    self.width = width
    self.height = height
    count = frames.count
    pixels = .allocate(byteCount: width * height * frames.count, alignment: 64)
    for (i, frame) in frames.enumerated() {
      frame.withUnsafeBytes { pixels.baseAddress!.advanced(by: i * width * height).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    }
  }

  /// Frees the storage. (A Copyable struct has no deinit.)
  public func release() { pixels.deallocate() }

  /// Frame `index` as a luma frame, valid until `release`.
  public func frame(_ index: Int, captured: Instant, sequence: UInt64) -> LumaFrame {
    precondition(index >= 0 && index < count)
    let start = index * width * height
    return LumaFrame(
      bytes: UnsafeRawBufferPointer(rebasing: pixels[start..<(start + width * height)]),
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
}
