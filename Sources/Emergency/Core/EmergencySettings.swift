import ScanBase

/// The emergencies, as configured in `[emergency]`.
public struct EmergencySettings: Equatable, Sendable {
  /// Exit buttons release the strike during a lockdown (life safety: egress stays free).
  public var exitDuringLockdown = true
  /// The fire and lockdown inputs count once a level has held this long.
  public var debounceMilliseconds: UInt16 = 50
  public init() {}
}
