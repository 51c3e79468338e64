import ScanBase

/// How a direction's output drives the turnstile (docs/turnstiles.md).
public enum TurnstileWiring: String, Sendable, CaseIterable {
  /// The line is the direction's unlock (a tripod's solenoid, a speed gate's "open" input held):
  /// active from the grant until the passage sensor reports the rotation, or the timeout.
  case held
  /// The line pulses the turnstile's own controller ("grant one passage" input), which locks
  /// itself after the rotation; the passage sensor still reports the rotation.
  case pulse
}

/// The turnstile, as configured in `[turnstile]`.
public struct TurnstileSettings: Equatable, Sendable {
  public var enabled = false
  public var wiring = TurnstileWiring.held
  /// `pulse` wiring: how long each grant's pulse lasts.
  public var pulseMilliseconds = 500
  /// `pulse` wiring: the pause between two queued grants' pulses, so the controller counts each.
  public var pulseGapMilliseconds = 100
  /// No passage this long after a grant: relocked, `granted-not-passed`.
  public var passageTimeoutMilliseconds = 7_000
  /// The passage and alarm inputs count once a level has held this long.
  public var debounceMilliseconds: UInt16 = 20
  /// Grants waiting for their passages, per direction (a group shows codes one after another).
  /// At most `TurnstileMachine.queueMax`.
  public var grantsQueuedMax = 2
  /// How long the alarm line sounds after a forced rotation or the alarm input.
  public var forcedAlarmMilliseconds = 10_000
  public init() {}
}
