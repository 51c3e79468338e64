import ScanCore
import ScanLinux

/// The feedback lamps as configured (`[feedback]`): libgpiod output lines on `gpio.chip`, or
/// simulated lines a test watches (`gpio.backend = "sim"`). No lamp wired: no participant.
public enum FeedbackSetup {
  /// The simulated lamps (`Service.Options.feedbackLines`; a test gives recording lines).
  public struct SimulatedLines {
    public let green: any OutputLine
    public let red: any OutputLine
    public let amber: any OutputLine
    public init(
      green: any OutputLine = SimulatedOutputLine(), red: any OutputLine = SimulatedOutputLine(),
      amber: any OutputLine = SimulatedOutputLine()
    ) {
      self.green = green
      self.red = red
      self.amber = amber
    }
  }

  /// The lamps, or nil when none is wired; throws when a configured line cannot be requested.
  /// `standing`: the fire release and a lockdown as the emergencies found them at start (a
  /// latch restored from its file records no event).
  public static func make(
    _ config: ScanConfig, ring: EventRing, simulated: SimulatedLines?, standing: (fire: Bool, lockdown: Bool)
  ) throws(GPIOError) -> FeedbackLights? {
    let f = config.feedback
    guard f.isWired else { return nil }
    switch config.gpio.backend {
    case .sim:
      let l = simulated ?? SimulatedLines()
      return FeedbackLights(
        settings: f, ring: ring, green: f.greenLine >= 0 ? l.green : nil, red: f.redLine >= 0 ? l.red : nil,
        amber: f.amberLine >= 0 ? l.amber : nil, backend: "sim", standing: standing)
    case .gpiod:
      func lamp(_ offset: Int, _ name: String) throws(GPIOError) -> (any OutputLine)? {
        guard offset >= 0 else { return nil }
        return GPIODOutputBox(
          try GPIODOutputLine(chip: config.gpio.chip, offset: UInt32(offset), activeLow: f.activeLow, consumer: "scangate-" + name))
      }
      return FeedbackLights(
        settings: f, ring: ring, green: try lamp(f.greenLine, "green"), red: try lamp(f.redLine, "red"),
        amber: try lamp(f.amberLine, "amber"), backend: "gpiod \(GPIODOutputLine.libraryVersion)", standing: standing)
    }
  }
}

extension Service {
  /// The lamps joined to the loop (nil: none wired); a line that cannot be requested stops the start.
  static func attachFeedback<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, options: Options, ring: EventRing, emergency: EmergencyController,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> FeedbackLights? {
    let standing = (fire: emergency.state.fireActive, lockdown: emergency.state.lockdownActive)
    do throws(GPIOError) {
      guard let lights = try FeedbackSetup.make(config, ring: ring, simulated: options.feedbackLines, standing: standing) else { return nil }
      loop.register(lights)
      return lights
    } catch {
      writeStandardError("scangate: cannot request the feedback lamps: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
  }
}
