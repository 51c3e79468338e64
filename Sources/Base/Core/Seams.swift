/// The seams between ScanGate's pure core and the hardware and OS behind it.
///
/// Hot-loop code is generic over these protocols, so calls are statically dispatched; the
/// adapters (Sources/<Domain>/Linux) and the fakes in ScanSim conform to them.

/// A point on the monotonic clock, in nanoseconds since an arbitrary origin.
public struct Instant: Comparable, Hashable, Sendable {
  public var nanoseconds: UInt64
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
  public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

  /// This instant moved later by `milliseconds`.
  public func adding(milliseconds: Int) -> Instant {
    Instant(nanoseconds: nanoseconds &+ UInt64(max(0, milliseconds)) &* 1_000_000)
  }
  /// Microseconds from `earlier` to this instant (0 when `earlier` is later).
  public func microseconds(since earlier: Instant) -> UInt64 {
    nanoseconds > earlier.nanoseconds ? (nanoseconds - earlier.nanoseconds) / 1_000 : 0
  }
  /// Milliseconds from `earlier` to this instant (0 when `earlier` is later).
  public func milliseconds(since earlier: Instant) -> Int {
    Int(microseconds(since: earlier) / 1_000)
  }
}

/// Monotonic time: never goes backwards, unaffected by wall-clock changes.
public protocol MonotonicClock {
  func now() -> Instant
}

/// Wall-clock time for validity windows and log records: seconds since the Unix epoch.
public protocol WallClock {
  func unixSeconds() -> Int64
  /// Nanoseconds since the Unix epoch (defaults to whole seconds).
  func unixNanoseconds() -> Int64
}

extension WallClock {
  public func unixNanoseconds() -> Int64 { unixSeconds() * 1_000_000_000 }
}

/// Where a frame's luma bytes sit in memory, and how to walk them.
public struct FrameGeometry: Equatable, Sendable {
  public var width: Int
  public var height: Int
  /// Bytes from one row to the next.
  public var rowStrideBytes: Int
  /// Bytes from one pixel to the next: 1 for GREY, 2 for the Y bytes of YUYV.
  public var pixelStrideBytes: Int
  public init(width: Int, height: Int, rowStrideBytes: Int, pixelStrideBytes: Int) {
    self.width = width
    self.height = height
    self.rowStrideBytes = rowStrideBytes
    self.pixelStrideBytes = pixelStrideBytes
  }
  /// A tightly packed 8-bit gray image.
  public static func gray(width: Int, height: Int) -> FrameGeometry {
    FrameGeometry(width: width, height: height, rowStrideBytes: width, pixelStrideBytes: 1)
  }
  /// Bytes the image spans from its first to just past its last pixel.
  public var spanBytes: Int {
    width == 0 || height == 0 ? 0 : (height - 1) * rowStrideBytes + (width - 1) * pixelStrideBytes + 1
  }
}

/// One frame's luma plane, lent to a closure. The bytes are valid only inside that closure.
public struct LumaFrame {
  public var bytes: UnsafeRawBufferPointer
  public var geometry: FrameGeometry
  /// When the frame was captured (driver timestamp or read time), on the monotonic clock.
  public var captured: Instant
  /// The source's frame counter.
  public var sequence: UInt64
  public init(bytes: UnsafeRawBufferPointer, geometry: FrameGeometry, captured: Instant, sequence: UInt64) {
    precondition(bytes.count >= geometry.spanBytes, "frame bytes shorter than its geometry")
    self.bytes = bytes
    self.geometry = geometry
    self.captured = captured
    self.sequence = sequence
  }
  /// The luma value at (x, y).
  @inline(__always) public func luma(x: Int, y: Int) -> UInt8 {
    bytes[y * geometry.rowStrideBytes + x * geometry.pixelStrideBytes]
  }
}

/// Why a frame source could not deliver.
public enum CaptureError: Error, Equatable, Sendable {
  /// The device went away or failed (errno attached); the owner should reopen it.
  case deviceLost(errno: Errno)
  /// The device would not take the configured format or size.
  case formatRejected(String)
  /// A replay ran out of frames and does not loop.
  case endOfStream
}

/// A camera or a replay: lends the newest frame to `body`.
public protocol FrameSource: ~Copyable {
  /// Lends the newest frame to `body`; returns nil when no frame came within the timeout.
  mutating func withNextFrame<R>(
    timeoutMilliseconds: Int, _ body: (LumaFrame) -> R
  ) throws(CaptureError) -> R?
  /// Frames the source threw away because a newer one was ready.
  var droppedFrames: UInt64 { get }
}

/// The level of a digital output, before any active-low inversion the adapter applies.
public enum LineLevel: UInt8, Sendable {
  case inactive = 0
  case active = 1
}

/// How an input line is biased inside the chip.
public enum LineBias: String, Sendable, CaseIterable {
  /// Leave the chip's setting as it is.
  case asIs = "as-is"
  case disabled
  case pullUp = "pull-up"
  case pullDown = "pull-down"
}

/// Why an output line could not be driven.
public struct GPIOError: Error, Equatable, Sendable {
  public var errno: Errno
  public var operation: String
  public init(errno: Errno, operation: String) {
    self.errno = errno
    self.operation = operation
  }
}

/// One digital output: the door relay or the buzzer.
public protocol OutputLine: ~Copyable {
  mutating func set(_ level: LineLevel) throws(GPIOError)
}

/// Holds the relay's hard cap when the loop does not (the seam to the relay watchdog).
///
/// The engine arms it, with the instant by which the relay must be inactive (its period's cap
/// end plus `ActuationSettings.relayWatchdogMarginMilliseconds`), before it drives the relay
/// active, and disarms it once it has driven the relay inactive. If the deadline passes while it
/// is armed, the guard drives the relay inactive itself, on its own thread, and the engine's
/// next `tick` takes the trip: a `relay-watchdog` fault, the fault pattern, and the relay counted
/// inactive. The guard only ever drives the relay inactive. Deadlines are on the engine's
/// clock, which must then be the one the guard sleeps on (CLOCK_MONOTONIC on Linux).
/// `arm`, `disarm` and `takeTrip` run on the loop's thread, must not block or allocate.
public protocol RelayGuard: AnyObject {
  func arm(deadline: Instant)
  func disarm()
  /// When the guard drove the relay inactive, if it did since the last call (then cleared).
  func takeTrip() -> Instant?
}

/// SHA-256 of payload bytes (a crypto library does it, not the core).
public protocol PayloadDigester {
  func sha256(_ bytes: UnsafeRawBufferPointer) -> Digest
}

/// A 32-byte digest held inline.
public struct Digest: Hashable, Sendable {
  public var words: (UInt64, UInt64, UInt64, UInt64)
  public init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }
  public static let zero = Digest(words: (0, 0, 0, 0))
  public static func == (a: Digest, b: Digest) -> Bool {
    a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
  }
  public func hash(into hasher: inout Hasher) {
    hasher.combine(words.0)
    hasher.combine(words.1)
  }
  /// Builds a digest from 32 bytes in order.
  public init(bytes: UnsafeRawBufferPointer) {
    precondition(bytes.count == 32)
    func word(_ i: Int) -> UInt64 {
      var w: UInt64 = 0
      for k in 0..<8 { w = (w << 8) | UInt64(bytes[i * 8 + k]) }
      return w
    }
    words = (word(0), word(1), word(2), word(3))
  }
  /// The digest 64 hex digits spell; nil for anything else.
  public init?(hex: some StringProtocol) {
    let text = Array(hex.utf8)
    guard text.count == 64 else { return nil }
    var bytes = InlineArray<32, UInt8>(repeating: 0)
    let decoded = text.withUnsafeBytes { t in
      withUnsafeMutableBytes(of: &bytes) { out in (try? Hex.decode(t, into: out)) == 32 }
    }
    guard decoded else { return nil }
    self = withUnsafeBytes(of: bytes) { Digest(bytes: $0) }
  }
  /// Byte `index` (0..<32), in the order the digest was built from.
  public func byte(_ index: Int) -> UInt8 {
    let w: UInt64
    switch index / 8 {
    case 0: w = words.0
    case 1: w = words.1
    case 2: w = words.2
    default: w = words.3
    }
    return UInt8(truncatingIfNeeded: w >> UInt64(56 - (index % 8) * 8))
  }
  /// A well-mixed table index (SHA-256 output is already uniform).
  @inline(__always) package var bucketSeed: UInt64 { words.0 }
}
