/// The console's settings, which ScanConsole and the console server take whole, declared here
/// so that `ScanConfig` holds them as they are: one declaration and one set of defaults per
/// setting (ranges are only in the schema, ConfigSchema.swift).

/// Failed-AUTH accounting (`console.auth_*`): backoff, lockout, the global budget.
public struct AuthSettings: Equatable, Sendable {
  public var failuresMax = 5
  public var lockoutSeconds = 300
  public var firstBackoffMilliseconds = 1_000
  /// Failures from all network peers together within `globalWindowSeconds` before every
  /// network AUTH is refused for `lockoutSeconds` (the serial port is not affected).
  public var globalFailuresMax = 20
  public var globalWindowSeconds = 600
  public init() {}
}

/// Limits on what one console session may do.
public struct ConsoleLimits: Equatable, Sendable {
  /// Lines a session may send per second on average, and in one burst.
  public var linesPerSecond = 10
  public var lineBurst = 40
  /// CHECK attempts per minute and in one burst (guessing passes is slow work).
  public var checksPerMinute = 12
  public var checkBurst = 3
  /// An operator session on the serial port falls back to unauthenticated after this long
  /// without input (the next person on the cable must AUTH again). 0: never.
  public var serialOperatorIdleSeconds = 120
  public init() {}
}
