import ScanBase
import Synchronization

/// `gpio.backend = "sim"`: an output line that only holds its level (the engine records every
/// edge as an event, so the journal and the audit log show what a real line would have done).
/// A class with an atomic level, so the relay watchdog's thread may drive it too.
public final class SimulatedOutputLine: OutputLine, Sendable {
  private let raw = Atomic<UInt8>(LineLevel.inactive.rawValue)
  public init() {}
  public var level: LineLevel { LineLevel(rawValue: raw.load(ordering: .acquiring)) ?? .inactive }
  public func set(_ level: LineLevel) throws(GPIOError) { raw.store(level.rawValue, ordering: .releasing) }
}
