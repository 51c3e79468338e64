import ScanConsole
import ScanCore

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
    guard !c.consoleListen.isEmpty || !c.consoleSerialPath.isEmpty else { return budget }
    let settings = ConsoleSettings(c)
    budget.lines.append(("console (\(settings.clientsMax) TCP + 1 serial client, \(settings.clientOutputBytes) B output each)",
                         ConsoleServer<SystemMonotonicClock>.bytes(settings: settings)))
    return budget
  }
}
