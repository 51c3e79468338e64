import ScanReader

/// `[camera]`: where frames come from and at what size (docs/cameras.md).
public struct CameraConfig: Equatable, Sendable {
  public var source = CameraSourceKind.v4l2
  public var device = "/dev/video0"
  public var width = 640
  public var height = 480
  public var fps = 30
  public var format = CameraPixelFormat.auto
  public var buffers = 4
  public var mjpegHalfScale = false
  public var replayPath = ""
  public var replayFPS = 0
  public var replayLoop = true
  /// `camera.second`: a second camera decoded in turn with the first (a turnstile's exit
  /// camera): a device path, a libcamera id or a replay path, as `camera.source` says ("": none).
  public var second = ""
  /// Frame timeout and reopen backoff (`camera.frame_timeout_ms`, `camera.reopen_backoff_ms_max`).
  public var supervision = CameraSupervisor.Settings()
  public init() {}
}

/// `[decoder]`'s process settings: the arena, isolation and the worker's deadlines (the strategy
/// and budget are the engine's, `ScanConfig.engine.decode`).
public struct DecoderConfig: Equatable, Sendable {
  public var arenaKiB = 4_096
  /// `decoder.isolation`: decode in worker processes (the default) or on the loop's thread.
  public var isolation = DecoderIsolation.process
  /// `decoder.deadline_ms` (nil: `ScanConfig.decoderDeadlineMilliseconds`' default from the budget).
  public var deadlineSetting: Int? = nil
  /// `decoder.start_timeout_ms`: a worker not ready this long after its spawn (its warm-up
  /// decodes) is killed and started again; the service waits twice this for its first worker.
  public var startTimeoutMilliseconds = 10_000
  public init() {}
}

/// `[gpio]`: the chip and the reader's own relay and buzzer lines (the door's, the turnstile's
/// and the others' lines are in their sections).
public struct GPIOConfig: Equatable, Sendable {
  public var backend = GPIOBackend.gpiod
  public var chip = "gpiochip0"
  public var relayLine = 17
  public var relayActiveLow = false
  public var buzzerLine = 27
  public var buzzerActiveLow = false
  public init() {}
}
