/// Whether an output line would energise what it drives before ScanGate holds it (the "relay
/// clicks at boot" problem), from the line's state as `scangate probe` reads it.
public enum BootSafety {
  /// A Raspberry Pi's default pull at power-on for BCM `offset` on its main GPIO chip
  /// (`pinctrl-bcm2835`, `pinctrl-bcm2711`): GPIO 0-8 pull up, 9-27 pull down. nil elsewhere.
  public static func piDefaultPull(chipLabel: String, offset: Int) -> LineBias? {
    guard chipLabel.hasPrefix("pinctrl-bcm"), offset >= 0, offset <= 27 else { return nil }
    return offset <= 8 ? .pullUp : .pullDown
  }

  /// The physical level the line has while nothing drives it (1 high, 0 low, nil unknown).
  public static func idleLevel(bias: LineBias?, piDefault: LineBias?) -> Int? {
    switch bias ?? piDefault {
    case .pullUp: 1
    case .pullDown: 0
    default: nil
    }
  }

  /// Whether the load is energised at that level: active-high loads at 1, active-low at 0.
  public static func energised(level: Int?, activeLow: Bool) -> Bool? {
    guard let level else { return nil }
    return activeLow ? level == 0 : level == 1
  }

  /// The config.txt line that drives the pin to its inactive level from firmware boot on.
  public static func configLine(offset: Int, activeLow: Bool) -> String {
    "gpio=\(offset)=op,\(activeLow ? "dh" : "dl")"
  }
}
