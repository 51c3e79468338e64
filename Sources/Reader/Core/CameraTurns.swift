import ScanBase

/// Two cameras served in turn by one decoder (a turnstile's entry and exit; issue 41): a camera
/// whose frame the decoder took last waits while the other delivers (a frame from it within the
/// last 500 ms), so that two cameras in phase, with decodes longer than a frame, are each read:
/// the second's frame would otherwise always find the decoder busy with the first's. One camera
/// always takes its turn. Pure: the loop says what happened and when; nothing reads a clock.
public struct CameraTurns: Sendable {
  /// How long a camera that delivered nothing still counts as delivering.
  public static let patienceMilliseconds: Int64 = 500
  /// The camera whose frame the decoder took last (-1: none yet), and the one it has now.
  public private(set) var lastDecoded = -1
  public private(set) var inFlight = 0
  private var lastFrameAt = InlineArray<2, Instant>(repeating: Instant(nanoseconds: 0))

  public init() {}

  /// Whether `camera`'s frame, delivered at `now`, may go to the decoder (`paired`: the source
  /// has two cameras; otherwise every frame may).
  public func takesTurn(_ camera: Int, now: Instant, paired: Bool) -> Bool {
    guard paired, camera == lastDecoded, camera < 2 else { return true }
    let other = lastFrameAt[1 - camera]
    return other.nanoseconds == 0 || now.milliseconds(since: other) > Self.patienceMilliseconds
  }

  /// `camera` delivered a frame at `now`.
  public mutating func delivered(_ camera: Int, at now: Instant) {
    if camera >= 0 && camera < 2 { lastFrameAt[camera] = now }
  }

  /// The decoder took `camera`'s frame: its reply is that camera's.
  public mutating func submitted(_ camera: Int) {
    inFlight = camera
    lastDecoded = camera
  }
}
