import ScanConsole
import ScanCore
import ScanPlatform

extension ConsoleServer {
  /// Bytes a console with `settings` allocates at start (the memory budget's console line):
  /// per slot (TCP clients and the serial port) a line framer, a line queue, an output buffer
  /// and a session.
  public static func bytes(settings: ConsoleSettings) -> Int {
    let slots = settings.clientsMax + 1
    return slots * (lineBytesMax + queueBytes + settings.clientOutputBytes + MemoryLayout<ConsoleSession>.stride)
  }
}

extension MemoryBudget {
  /// The budget with the console's line, when one is configured.
  public static func withConsole(_ c: ScanConfig) -> MemoryBudget {
    var budget = MemoryBudget(c)
    guard !c.console.listen.isEmpty || !c.console.serialPath.isEmpty || !c.console.unixPath.isEmpty else { return budget }
    let settings = ConsoleSettings(c)
    budget.lines.append(
      (
        "console (\(settings.clientsMax) TCP + 1 serial client, \(settings.clientOutputBytes) B output each)",
        ConsoleServer<SystemMonotonicClock>.bytes(settings: settings)
      ))
    return budget
  }
}

/// The console cannot push a decision out of the event ring: every console event (an operator
/// command, an AUTH outcome) costs a line of its session's budget, and read-only commands and
/// bad lines add none, so all sessions together add at most (clients_max + 1) × (line_burst +
/// lines_per_second) events in any second. The ring must hold that while the log writer drains
/// it (every commit interval; a second covers a slow flush). Returns why the configuration
/// breaks this, or nil.
public func consoleRingProblem(_ c: ScanConfig) -> String? {
  guard !c.console.listen.isEmpty || !c.console.serialPath.isEmpty || !c.console.unixPath.isEmpty else { return nil }
  let limits = ConsoleLimits()
  let worst = (c.console.clientsMax + 1) * (limits.lineBurst + limits.linesPerSecond)
  let ring = EventRing.roundedCapacity(c.eventRingCapacity)
  guard ring < worst else { return nil }
  return "events.ring_capacity \(ring) is too small for console.clients_max \(c.console.clientsMax): \(worst) console "
    + "events in a second could overwrite decisions before the log writes them; use at least \(EventRing.roundedCapacity(worst))"
}
