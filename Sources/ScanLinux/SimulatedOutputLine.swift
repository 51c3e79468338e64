import ScanCore

/// `gpio.backend = "sim"`: an output line that only holds its level (the engine records every
/// edge as an event, so the journal and the audit log show what a real line would have done).
public struct SimulatedOutputLine: OutputLine {
  public private(set) var level = LineLevel.inactive
  public init() {}
  public mutating func set(_ level: LineLevel) throws(GPIOError) { self.level = level }
}
