import ScanCore
import ScanLinux
import ScanLoop

/// The door's lines as configured: libgpiod inputs and alarm line on `gpio.chip`, or simulated
/// lines (`gpio.backend = "sim"`, scripted by the demo), and the controller the loop polls.
public enum DoorSetup {
  /// The simulated lines, handed to a script (the demo) before the loop runs.
  public struct SimulatedLines {
    public let contact: SimulatedInputLine
    public let exitButton: SimulatedInputLine
    public let tamper: SimulatedInputLine
    public let alarm: SimulatedOutputLine
  }

  /// The door controller, or nil when no door is configured. Throws when a line cannot be requested.
  public static func make(
    _ config: ScanConfig, ring: EventRing, now: Instant, driver: ((SimulatedLines, EventRing) -> any PollParticipant)?
  ) throws(GPIOError) -> (controller: DoorController, driver: (any PollParticipant)?)? {
    let d = config.door
    guard d.machine.enabled else { return nil }
    var settings = d.machine
    switch config.gpio.backend {
    case .sim:
      let lines = SimulatedLines(
        contact: SimulatedInputLine(), exitButton: SimulatedInputLine(), tamper: SimulatedInputLine(),
        alarm: SimulatedOutputLine())
      let controller = DoorController(
        settings: settings, ring: ring, wall: SystemWallClock(), now: now, contact: lines.contact,
        exitButton: lines.exitButton, tamper: lines.tamper, alarm: lines.alarm)
      return (controller, driver?(lines, ring))
    case .gpiod:
      var inputs: [GPIODInputLine?] = []
      for input in DoorInput.allCases {
        let c = d.input(input)
        guard c.line >= 0 else {
          inputs.append(nil)
          continue
        }
        let line = try GPIODInputLine(
          chip: config.gpio.chip, offset: UInt32(c.line), activeLow: c.activeLow, bias: c.bias,
          debounceMilliseconds: Int(settings.debounceMilliseconds[input.rawValue]), consumer: "scangate-" + input.name)
        // The kernel debounces this line: the machine takes its edges as they come.
        if line.kernelDebounce { settings.debounceMilliseconds[input.rawValue] = 0 }
        inputs.append(line)
      }
      var alarm: GPIODOutputBox? = nil
      if d.alarmLine >= 0 {
        alarm = GPIODOutputBox(
          try GPIODOutputLine(
            chip: config.gpio.chip, offset: UInt32(d.alarmLine), activeLow: d.alarmActiveLow, consumer: "scangate-alarm"))
      }
      var aux: GPIODOutputBox? = nil
      if d.auxRelayLine >= 0 {
        aux = GPIODOutputBox(
          try GPIODOutputLine(
            chip: config.gpio.chip, offset: UInt32(d.auxRelayLine), activeLow: d.auxRelayActiveLow,
            consumer: "scangate-aux-relay"))
      }
      let controller = DoorController(
        settings: settings, ring: ring, wall: SystemWallClock(), now: now, contact: inputs[0], exitButton: inputs[1],
        tamper: inputs[2], alarm: alarm, auxRelay: aux)
      return (controller, nil)
    }
  }
}
