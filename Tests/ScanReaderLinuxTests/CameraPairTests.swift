import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanSim
import ScanTestSupport
import Testing

/// Two cameras as one frame source (`CameraPair`): frames in turn, the camera named while each
/// frame is lent, a silent camera loses the pair, either camera's error is the pair's, and the
/// epoll set is readable when either camera's descriptor is.
@Suite struct CameraPairTests {
  static let width = 16, height = 8

  /// A frame whose every pixel is `value`: which camera (and which frame) lent it.
  static func frame(_ value: UInt8) -> [UInt8] { [UInt8](repeating: value, count: width * height) }

  static func source(_ values: [UInt8], script: [ScriptedFrameSource.Step]? = nil, clock: ManualClock) -> ScriptedFrameSource {
    ScriptedFrameSource(width: width, height: height, frames: values.map(frame), script: script, loops: true, clock: clock)
  }

  /// Takes `count` frames: (camera the origin named while lending, the frame's first pixel).
  static func take(_ pair: inout CameraPair<ScriptedFrameSource>, _ count: Int) throws(CaptureError) -> [(Int, UInt8)] {
    var seen: [(Int, UInt8)] = []
    let origin = pair.origin!
    for _ in 0..<count {
      if let got = try pair.withNextFrame(timeoutMilliseconds: 0, { frame in (origin.camera, frame.bytes[0]) }) { seen.append(got) }
    }
    return seen
  }

  @Test("both cameras delivering: frames alternate, each named by the camera that lent it")
  func alternates() throws {
    let clock = ManualClock()
    var pair = try CameraPair(
      first: Self.source([10, 11], clock: clock), second: Self.source([20, 21], clock: clock), staleAfterMilliseconds: 1_000,
      origin: FrameOrigin())
    let seen = try Self.take(&pair, 6)
    #expect(seen.map(\.0) == [0, 1, 0, 1, 0, 1])
    #expect(seen.map(\.1) == [10, 20, 11, 21, 10, 20])
    #expect(pair.pollDescriptor == -1, "two self-paced sources: no descriptor, due when either is")
    #expect(pair.summary.contains("1) scripted") && pair.summary.contains("2) scripted"))
  }

  @Test("a camera with no frame now: the other's is lent, and the turn comes back to it")
  func oneWaits() throws {
    let clock = ManualClock()
    var pair = try CameraPair(
      first: Self.source([10], script: [.timeout, .frame(0)], clock: clock), second: Self.source([20], clock: clock),
      staleAfterMilliseconds: 1_000, origin: FrameOrigin())
    // First's turn: it has none, so second lends; then first's turn again (it has one now).
    let seen = try Self.take(&pair, 3)
    #expect(seen.map(\.1) == [20, 10, 20])
  }

  @Test("a camera silent longer than the stale time while the other delivers: the pair is lost, naming it")
  func silentCameraLosesThePair() throws {
    let clock = ManualClock()
    var first = Self.source([10], script: [.frame(0)] + Array(repeating: .timeout, count: 100), clock: clock)
    first.advanceMicrosecondsPerStep = 0
    var second = Self.source([20], clock: clock)
    second.advanceMicrosecondsPerStep = 50_000  // 50 ms per frame
    var pair = try CameraPair(first: first, second: second, staleAfterMilliseconds: 1_000, origin: FrameOrigin())
    var lost: CaptureError? = nil
    var frames = 0
    do throws(CaptureError) {
      for _ in 0..<200 {
        if try pair.withNextFrame(timeoutMilliseconds: 0, { _ in true }) != nil { frames += 1 }
      }
    } catch { lost = error }
    #expect(lost == .deviceLost(errno: .timedOut))
    #expect(pair.stalledCamera == 0)
    // Lost after about a second of the second camera's frames (50 ms each), not at once, not never.
    #expect(frames >= 15 && frames <= 25, "\(frames) frames before the pair was lost")
  }

  @Test("either camera's error is the pair's")
  func errorsPropagate() throws {
    let clock = ManualClock()
    var pair = try CameraPair(
      first: Self.source([10], clock: clock), second: Self.source([20], script: [.lost(errno: ENODEV)], clock: clock),
      staleAfterMilliseconds: 1_000, origin: FrameOrigin())
    #expect(try pair.withNextFrame(timeoutMilliseconds: 0, { $0.bytes[0] }) == 10)
    var lost: CaptureError? = nil
    do throws(CaptureError) { _ = try pair.withNextFrame(timeoutMilliseconds: 0, { $0.bytes[0] }) } catch { lost = error }
    #expect(lost == .deviceLost(errno: .noDevice))
  }

  /// A source polled through a pipe: readable when the test writes to it.
  struct PipeSource: LoopFrameSource, ~Copyable {
    let read: Int32
    let frame: [UInt8]
    var droppedFrames: UInt64 { 3 }
    var pollDescriptor: Int32 { read }
    func millisecondsUntilReady(at now: Instant) -> Int { 0 }
    var summary: String { "pipe \(read)" }
    mutating func withNextFrame<R>(timeoutMilliseconds: Int, _ body: (LumaFrame) -> R) throws(CaptureError) -> R? {
      var byte: UInt8 = 0
      guard Glibc.read(read, &byte, 1) == 1 else { return nil }
      return frame.withUnsafeBytes { body(LumaFrame(bytes: $0, geometry: .gray(width: 16, height: 8), captured: Instant(nanoseconds: 1), sequence: 1)) }
    }
  }

  @Test("two descriptor sources: the pair's epoll descriptor is readable when either camera is, and lends that camera's frame")
  func epollSet() throws {
    var a: [Int32] = [0, 0], b: [Int32] = [0, 0]
    #expect(pipe(&a) == 0 && pipe(&b) == 0)
    for fd in [a[0], b[0]] { _ = sg_fcntl_int(fd, F_SETFL, O_NONBLOCK) }
    defer { for fd in a + b { close(fd) } }
    var pair = try CameraPair(
      first: PipeSource(read: a[0], frame: Self.frame(1)), second: PipeSource(read: b[0], frame: Self.frame(2)),
      staleAfterMilliseconds: 60_000, origin: FrameOrigin())
    let fd = pair.pollDescriptor
    #expect(fd >= 0 && fd != a[0] && fd != b[0])
    func readable() -> Bool {
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLIN) != 0
    }
    #expect(!readable())
    var one: UInt8 = 1
    #expect(write(b[1], &one, 1) == 1)
    #expect(readable())
    #expect(try pair.withNextFrame(timeoutMilliseconds: 0, { $0.bytes[0] }) == 2)
    #expect(!readable())
    #expect(write(a[1], &one, 1) == 1)
    #expect(readable())
    #expect(try pair.withNextFrame(timeoutMilliseconds: 0, { $0.bytes[0] }) == 1)
    #expect(pair.droppedFrames == 6)
  }
}
