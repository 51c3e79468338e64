/// Autofocus for cameras whose lens has it (Camera Module 3).
public enum AutofocusMode: String, Sendable, CaseIterable {
  /// Whatever the camera starts in (no control sent).
  case `default`
  /// The lens keeps refocusing on its own.
  case continuous
  /// The lens stays where `focusMillimetres` puts it (a reader with a fixed scan distance).
  case manual
}

/// What a libcamera camera (`camera.source = "libcamera"`) is opened with beyond the size,
/// rate and buffer count it shares with V4L2.
public struct LibcameraSettings: Equatable, Sendable {
  /// The camera: its libcamera id or its index in `scangate probe`'s list ("" = the first).
  public var camera = ""
  /// Fixed exposure time in microseconds, auto exposure off (0 = auto exposure).
  public var exposureMicroseconds = 0
  /// Auto exposure: the longest frame, and so exposure, it may use; the frame rate drops to
  /// match in the dark (0 = one frame time at the configured rate).
  public var exposureMaxMicroseconds = 0
  public var autofocus = AutofocusMode.default
  /// Manual focus: the distance the lens focuses at, in millimetres (0 = leave the lens).
  public var focusMillimetres = 0
  public init() {}

  /// The lens position libcamera takes (dioptres, 1/metres) for `focusMillimetres`; nil: leave it.
  public var lensDioptres: Float? {
    focusMillimetres > 0 ? 1_000 / Float(focusMillimetres) : nil
  }
}
