import ScanCore
import ScanPlatform

extension V4L2FrameSource: LoopFrameSource {
  public var pollDescriptor: Int32 { descriptor }
  public func millisecondsUntilReady(at now: Instant) -> Int { 0 }
  public var summary: String {
    "\(description.path) \(description.card) \(description.fourcc) \(description.width)x\(description.height) \(description.buffers) buffers"
  }
}

/// Replays image files (a directory, sorted by name) or a raw 8-bit gray file (frames of
/// width × height back to back) at a frame rate, or as fast as the loop takes them; looped or once.
/// Files are decoded and fitted to the frame size once, at open.
public struct ReplayFrameSource: LoopFrameSource {
  private let reel: FrameReel
  private let loops: Bool
  private var position = 0
  private var sequence: UInt64 = 0
  public let path: String
  public let framesPerSecond: Int
  private let clock: any MonotonicClock
  private var nextDue: Instant
  public let frameCount: Int

  public init(
    path: String, width: Int, height: Int, framesPerSecond: Int, loops: Bool, clock: any MonotonicClock
  ) throws(CaptureError) {
    let images: [[UInt8]]
    if isDirectory(path) {
      let names: [String]
      do { names = try listDirectory(path) } catch { throw .formatRejected(error.description) }
      let reader = ImageFileReader()
      var loaded: [[UInt8]] = []
      for name in names where Self.isImageName(name) {
        do { loaded.append(try reader.read(path + "/" + name).fitted(width: width, height: height).pixels) } catch {
          throw .formatRejected(error.description)
        }
      }
      images = loaded
    } else {
      let bytes: [UInt8]
      do { bytes = try readWholeFile(path, maxBytes: Self.rawBytesMax) } catch { throw .formatRejected(error.description) }
      let size = width * height
      guard bytes.count >= size, bytes.count % size == 0 else {
        throw .formatRejected("\(path): \(bytes.count) bytes is not a whole number of \(width)×\(height) gray frames")
      }
      images = stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<($0 + size)]) }
    }
    guard !images.isEmpty else { throw .formatRejected("\(path): no frames to replay") }
    reel = FrameReel(width: width, height: height, frames: images)
    self.loops = loops
    self.path = path
    self.framesPerSecond = framesPerSecond
    self.clock = clock
    nextDue = clock.now()
    frameCount = images.count
  }

  /// The largest raw gray file replayed.
  public static let rawBytesMax = 1 << 30

  /// Whether a folder's file `name` is replayed (by its extension); each such file must be a
  /// regular file (`readWholeFile`), or the source is refused.
  public static func isImageName(_ name: String) -> Bool {
    guard let dot = name.lastIndex(of: ".") else { return false }
    return ["png", "jpg", "jpeg", "pgm", "ppm", "gif", "bmp"].contains(name[name.index(after: dot)...].lowercased())
  }

  public var droppedFrames: UInt64 { 0 }
  public var pollDescriptor: Int32 { -1 }
  public var summary: String {
    "replay \(path) \(frameCount) frames \(reel.width)x\(reel.height) at \(framesPerSecond == 0 ? "full speed" : "\(framesPerSecond) fps")"
  }

  public func millisecondsUntilReady(at now: Instant) -> Int {
    framesPerSecond == 0 || nextDue <= now ? 0 : max(1, (Int(nextDue.nanoseconds - now.nanoseconds) + 999_999) / 1_000_000)
  }

  public mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    let now = clock.now()
    if framesPerSecond > 0 {
      guard nextDue <= now else { return nil }
      let period = UInt64(1_000_000_000 / framesPerSecond)
      nextDue.nanoseconds += period
      if nextDue < now { nextDue = now }  // fell behind: do not burst to catch up
    }
    if position == reel.count {
      guard loops else { throw .endOfStream }
      position = 0
    }
    position += 1
    sequence += 1
    return body(reel.frame(position - 1, captured: now, sequence: sequence))
  }

}
