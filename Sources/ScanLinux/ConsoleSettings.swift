import ScanConsole
import ScanCore

/// What the console server takes, from the configuration (`[console]`): the defaults are the
/// configuration's, so `ConsoleSettings()` is what a reader runs with.
public struct ConsoleSettings: Sendable {
  public var listen: [String]
  public var clientsMax: Int
  public var idleTimeoutSeconds: Int
  public var clientOutputBytes: Int
  public var serialPath: String
  public var serialBaud: Int
  public var secretFile: String
  public var auth: AuthSettings
  public var limits: ConsoleLimits

  public init(_ c: ScanConfig = ScanConfig()) {
    listen = c.consoleListen
    clientsMax = c.consoleClientsMax
    idleTimeoutSeconds = c.consoleIdleTimeoutSeconds
    clientOutputBytes = c.consoleClientOutputBytes
    serialPath = c.consoleSerialPath
    serialBaud = c.consoleSerialBaud
    secretFile = c.consoleSecretFile
    auth = c.consoleAuth
    limits = c.consoleLimits
  }
}
