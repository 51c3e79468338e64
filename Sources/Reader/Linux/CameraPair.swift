import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// Two cameras as the loop's one frame source: a turnstile's entry and exit cameras (two USB
/// cameras, or a Pi 5's two CSI ports), their frames decoded in turn by the one engine.
///
/// Fair: after a frame from one camera the other is asked first, so a camera that always has a
/// frame never starves the other (at 30 fps each the loop decodes up to 60 frames a second,
/// within the one frame budget; a decoder that is busy skips frames of both alike). Polled as
/// one descriptor: an epoll set of both cameras' descriptors (level-triggered: readable while
/// either has a frame); two self-paced sources (replays) are due when the first of them is.
///
/// Both or neither: the pair opens both cameras and is lost when either is (its error, or no
/// frame from one camera for `staleAfterMilliseconds` while the other delivers), so the camera
/// supervisor reopens both with its backoff, records one `camera-lost` and shows it on STATUS.
/// A turnstile with one direction blind is a fault to see, not a reader that quietly serves
/// half its people. Lending a frame allocates nothing.
public struct CameraPair<Member: LoopFrameSource & ~Copyable>: LoopFrameSource, ~Copyable {
  private var first: Member
  private var second: Member
  /// An epoll set of both members' descriptors (-1: both are self-paced).
  private let epoll: Int32
  private var secondFirst = false
  private var lastFrame: (Instant?, Instant?) = (nil, nil)
  private let staleNanoseconds: UInt64
  private let camera: FrameOrigin
  /// Which camera went silent, when the pair was lost for it (0 or 1).
  public private(set) var stalledCamera: Int? = nil

  public init(
    first: consuming Member, second: consuming Member, staleAfterMilliseconds: Int, origin: FrameOrigin
  ) throws(CaptureError) {
    let descriptors = (first.pollDescriptor, second.pollDescriptor)
    var set: Int32 = -1
    if descriptors.0 >= 0 && descriptors.1 >= 0 {
      do throws(SystemError) {
        set = try syscall("epoll_create1") { sg_epoll_open() }
        for fd in [descriptors.0, descriptors.1] {
          _ = try syscall("epoll_ctl") { sg_epoll_add_readable(set, fd) }
        }
      } catch {
        if set >= 0 { closeDescriptor(set) }
        throw .deviceLost(errno: error.code)
      }
    }
    self.first = first
    self.second = second
    epoll = set
    staleNanoseconds = UInt64(max(staleAfterMilliseconds, 1)) * 1_000_000
    camera = origin
  }

  deinit {
    if epoll >= 0 { closeDescriptor(epoll) }
  }

  public var origin: FrameOrigin? { camera }
  public var droppedFrames: UInt64 { first.droppedFrames + second.droppedFrames }
  public var pollDescriptor: Int32 { epoll }
  public func millisecondsUntilReady(at now: Instant) -> Int {
    min(first.millisecondsUntilReady(at: now), second.millisecondsUntilReady(at: now))
  }
  public var summary: String { "two cameras: 1) \(first.summary); 2) \(second.summary)" }

  /// Lends the next frame of the camera whose turn it is, else of the other (which may wait up
  /// to the timeout); `origin.camera` says which while `body` runs.
  public mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    let turn = secondFirst ? 1 : 0
    if let result = try take(turn, timeoutMilliseconds: 0, body) { return result }
    return try take(1 - turn, timeoutMilliseconds: timeoutMilliseconds, body)
  }

  private mutating func take<R>(
    _ index: Int, timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R? {
    let otherLast = index == 0 ? lastFrame.1 : lastFrame.0
    let taken =
      index == 0
      ? try Self.lend(&first, index, timeoutMilliseconds, otherLast, staleNanoseconds, camera, body)
      : try Self.lend(&second, index, timeoutMilliseconds, otherLast, staleNanoseconds, camera, body)
    guard let captured = taken.captured else { return nil }
    if taken.silent {
      stalledCamera = 1 - index
      throw .deviceLost(errno: .timedOut)
    }
    // The other camera's silence is timed from this camera's first frame.
    if index == 0 {
      lastFrame = (captured, lastFrame.1 ?? captured)
    } else {
      lastFrame = (lastFrame.0 ?? captured, captured)
    }
    secondFirst = index == 0
    return taken.result
  }

  /// One member's next frame, lent to `body` unless the other member has been silent too long
  /// (then `silent`). The closure is passed straight on: nothing it captures is boxed.
  private static func lend<R>(
    _ member: inout Member, _ index: Int, _ timeoutMilliseconds: Int, _ otherLast: Instant?, _ stale: UInt64,
    _ origin: FrameOrigin, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> (result: R?, captured: Instant?, silent: Bool) {
    var captured: Instant? = nil
    var silent = false
    let result: R?? = try member.withNextFrame(timeoutMilliseconds: timeoutMilliseconds) { frame -> R? in
      captured = frame.captured
      // The other camera has been silent while this one delivers: the pair is lost.
      if let otherLast, frame.captured.nanoseconds > otherLast.nanoseconds &+ stale {
        silent = true
        return nil
      }
      origin.camera = index
      return body(frame)
    }
    return (result ?? nil, captured, silent)
  }
}
