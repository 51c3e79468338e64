import ScanCore

/// A frame source that plays gray frames held in memory, with scripted failures: the
/// simulator's camera. Frames are copied in at init; lending one allocates nothing.
public struct ScriptedFrameSource: FrameSource {
  /// What the source does at one step of its script.
  public enum Step: Equatable, Sendable {
    /// Lend frame `index`.
    case frame(Int)
    /// Report no frame within the timeout.
    case timeout
    /// Fail as a camera that was unplugged would.
    case lost(errno: Int32)
  }

  public var width: Int { reel.width }
  public var height: Int { reel.height }
  private let reel: FrameReel
  private let script: [Step]
  private var position = 0
  public let loops: Bool
  private var sequence: UInt64 = 0
  private let clock: any MonotonicClock
  /// Advance the manual clock by this much per step (0 leaves it alone).
  public var advanceMicrosecondsPerStep = 0
  private let manual: ManualClock?
  public private(set) var droppedFrames: UInt64 = 0
  public private(set) var lentFrames: UInt64 = 0

  /// - Parameters:
  ///   - frames: gray frames, each `width * height` bytes.
  ///   - script: the order of frames and failures; nil plays every frame in order.
  public init(
    width: Int, height: Int, frames: [[UInt8]], script: [Step]? = nil, loops: Bool,
    clock: any MonotonicClock
  ) {
    reel = FrameReel(width: width, height: height, frames: frames)
    let count = frames.count
    self.script = script ?? (0..<count).map { Step.frame($0) }
    self.loops = loops
    self.clock = clock
    manual = clock as? ManualClock
  }

  public var isFinished: Bool { !loops && position >= script.count }

  public mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    if position >= script.count {
      guard loops else { throw .endOfStream }
      position = 0
    }
    let step = script[position]
    position += 1
    if advanceMicrosecondsPerStep > 0 { manual?.advance(microseconds: advanceMicrosecondsPerStep) }
    switch step {
    case .timeout: return nil
    case .lost(let code): throw .deviceLost(errno: Errno(code))
    case .frame(let index):
      sequence += 1
      lentFrames += 1
      return body(reel.frame(index, captured: clock.now(), sequence: sequence))
    }
  }
}

extension ScriptedFrameSource: LoopFrameSource {
  public var pollDescriptor: Int32 { -1 }
  public func millisecondsUntilReady(at now: Instant) -> Int { 0 }
  public var summary: String { "scripted \(width)x\(height), as fast as the loop takes frames" }
}
