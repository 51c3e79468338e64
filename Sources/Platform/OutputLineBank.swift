import ScanBase

/// Where a domain's output lines come from, chosen once at start (`gpio.backend`): the kernel's
/// GPIO chip through libgpiod, or simulated lines. A test hands in the simulated lines it wants
/// to watch, named by their config key (`"feedback.green_line"`); any other is a fresh
/// `SimulatedOutputLine`. A domain asks for its lines by key and offset and never learns which.
public struct OutputLineBank {
  public enum Backend {
    case gpiod(chip: String)
    case simulated([String: any OutputLine])
  }
  public let backend: Backend

  public init(_ backend: Backend) { self.backend = backend }

  /// "gpiod v2.2.1" or "sim": how the lines are driven, for STATUS.
  public var name: String {
    switch backend {
    case .gpiod: "gpiod \(GPIODOutputLine.libraryVersion)"
    case .simulated: "sim"
    }
  }

  /// The line `key` sets to `offset`, requested inactive (nil: -1, not wired); throws when the
  /// kernel refuses it. `consumer` is the name `gpioinfo` shows.
  public func output(_ key: String, offset: Int, activeLow: Bool, consumer: String) throws(GPIOError) -> (any OutputLine)? {
    guard offset >= 0 else { return nil }
    switch backend {
    case .gpiod(let chip):
      return GPIODOutputBox(try GPIODOutputLine(chip: chip, offset: UInt32(offset), activeLow: activeLow, consumer: consumer))
    case .simulated(let watched):
      return watched[key] ?? SimulatedOutputLine()
    }
  }
}
