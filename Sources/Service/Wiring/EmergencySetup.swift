import ScanCore
import ScanLinux

/// The emergencies as configured: the fire and lockdown inputs on `gpio.chip` (libgpiod), or the
/// simulated lines a script or test drives (`gpio.backend = "sim"`), and the latch file in the
/// state directory. The controller is always made: a console or fleet lockdown needs no input.
public enum EmergencySetup {
  /// The simulated fire and lockdown inputs (`Service.Options.emergencyLines`).
  public struct SimulatedLines {
    public let fire: SimulatedInputLine
    public let lockdown: SimulatedInputLine
    public init(fire: SimulatedInputLine = SimulatedInputLine(), lockdown: SimulatedInputLine = SimulatedInputLine()) {
      self.fire = fire
      self.lockdown = lockdown
    }
  }

  /// The controller; throws when a configured line cannot be requested.
  public static func make(
    _ config: ScanConfig, ring: EventRing, now: Instant, simulated: SimulatedLines?
  ) throws(GPIOError) -> EmergencyController {
    let e = config.emergency
    var lines: [(any InputLine)?] = [nil, nil]
    switch config.gpio.backend {
    case .sim:
      lines = [simulated?.fire, simulated?.lockdown]
    case .gpiod:
      for input in EmergencyInput.allCases {
        let c = e.input(input)
        guard c.line >= 0 else { continue }
        lines[input.rawValue] = try GPIODInputLine(
          chip: config.gpio.chip, offset: UInt32(c.line), activeLow: c.activeLow, bias: c.bias,
          debounceMilliseconds: Int(e.settings.debounceMilliseconds), consumer: "scangate-" + input.name)
      }
    }
    return EmergencyController(
      settings: e.settings, ring: ring, wall: SystemWallClock(), now: now, fire: lines[0], lockdown: lines[1],
      latchPath: config.statePath("lockdown"))
  }
}
