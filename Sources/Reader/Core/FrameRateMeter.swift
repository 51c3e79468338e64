import ScanBase

/// The camera's frame rate over windows of at least a second: what STATUS, the snapshot's header
/// and the fleet's gauge show. The loop reports its frame count; nothing here reads a clock.
public struct FrameRateMeter: Sendable {
  /// Frames per second × 100 over the last window that closed (0 until one has).
  public private(set) var perSecondTimes100 = 0
  private var windowStart: Instant
  private var windowFrames: UInt64 = 0

  public init(start: Instant) { windowStart = start }

  /// `frames`: the count so far. Closes the window once a second has passed since it opened and
  /// returns true (the rate was measured again); false while it is open.
  public mutating func update(frames: UInt64, now: Instant) -> Bool {
    let elapsed = now.milliseconds(since: windowStart)
    guard elapsed >= 1_000 else { return false }
    perSecondTimes100 = Int((frames &- windowFrames) * 100_000 / UInt64(elapsed))
    windowStart = now
    windowFrames = frames
    return true
  }
}
