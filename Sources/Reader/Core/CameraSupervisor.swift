import ScanBase

/// The camera's state as the loop sees it.
public enum CameraState: UInt8, Sendable {
  case starting, streaming, degraded, finished
  public var name: String {
    switch self {
    case .starting: "starting"
    case .streaming: "streaming"
    case .degraded: "degraded"
    case .finished: "finished"
    }
  }
}

/// What the owner records when the camera's state changes.
public enum CameraTransition: Equatable, Sendable {
  /// First open succeeded.
  case started
  /// Reopened after a loss.
  case restored
  /// Lost (or the first open failed): record a fault, play the fault pattern.
  case lost
}

/// The camera's supervision as a pure state machine on the monotonic clock: when to (re)open,
/// backoff after failures (doubling up to a cap, reset by a good open), frame timeout, counts.
/// The loop owns the device and tells the supervisor what happened; the supervisor says when
/// to act and what to record. Tested on a manual clock.
public struct CameraSupervisor: Sendable {
  public struct Settings: Equatable, Sendable {
    public var frameTimeoutMilliseconds = 2_000
    public var reopenBackoffMillisecondsMax = 1_000
    public var firstBackoffMilliseconds = 100
    public init() {}
  }

  public let settings: Settings
  public private(set) var state = CameraState.starting
  public private(set) var reopenAttempts: UInt64 = 0
  public private(set) var losses: UInt64 = 0
  public private(set) var lastError: CaptureError? = nil
  public private(set) var reopenAt: Instant
  public private(set) var lastFrameAt: Instant
  private var backoffMilliseconds: Int

  public init(settings: Settings, now: Instant) {
    precondition(settings.firstBackoffMilliseconds > 0 && settings.reopenBackoffMillisecondsMax >= settings.firstBackoffMilliseconds)
    self.settings = settings
    reopenAt = now
    lastFrameAt = now
    backoffMilliseconds = settings.firstBackoffMilliseconds
  }

  /// Whether the owner should try to open the camera now (it has none).
  public func shouldOpen(at now: Instant) -> Bool { state != .finished && now >= reopenAt }

  /// When the supervisor next needs the loop: the reopen time without a camera, the frame
  /// timeout with one.
  public func deadline(hasCamera: Bool) -> Instant? {
    if state == .finished { return nil }
    if !hasCamera { return reopenAt }
    return state == .streaming ? lastFrameAt.adding(milliseconds: settings.frameTimeoutMilliseconds) : nil
  }

  public mutating func opening() { reopenAttempts &+= 1 }

  public mutating func opened(at now: Instant) -> CameraTransition {
    let transition: CameraTransition = state == .degraded ? .restored : .started
    state = .streaming
    lastFrameAt = now
    backoffMilliseconds = settings.firstBackoffMilliseconds
    lastError = nil
    return transition
  }

  /// An open failed: retry after the backoff, which doubles up to the cap.
  public mutating func openFailed(_ error: CaptureError, at now: Instant) -> CameraTransition? {
    lastError = error
    let first = state != .degraded
    state = .degraded
    reopenAt = now.adding(milliseconds: backoffMilliseconds)
    backoffMilliseconds = min(backoffMilliseconds * 2, settings.reopenBackoffMillisecondsMax)
    return first ? .lost : nil
  }

  public mutating func frameArrived(at now: Instant) { lastFrameAt = now }

  /// Whether a streaming camera has been silent past the frame timeout.
  public func timedOut(at now: Instant) -> Bool {
    state == .streaming && now.milliseconds(since: lastFrameAt) >= settings.frameTimeoutMilliseconds
  }

  /// The device failed or went silent: the owner closes it; reopen after the first backoff.
  public mutating func lost(_ error: CaptureError, at now: Instant) -> CameraTransition {
    losses &+= 1
    lastError = error
    state = .degraded
    backoffMilliseconds = settings.firstBackoffMilliseconds
    reopenAt = now.adding(milliseconds: backoffMilliseconds)
    return .lost
  }

  /// A replay ran out.
  public mutating func finished() { state = .finished }
}
