import ScanConsole
import ScanCore

/// What the console server takes, from the configuration (`[console]`): the defaults are the
/// configuration's, so `ConsoleSettings()` is what a reader runs with.
public struct ConsoleSettings: Sendable {
  public var listen: [String]
  public var clientsMax: Int
  /// Connections one peer (a network, a local user) may hold before AUTH (`ConsoleAdmission`).
  public var clientsPerPeerMax: Int
  public var idleTimeoutSeconds: Int
  public var clientOutputBytes: Int
  public var serialPath: String
  public var serialBaud: Int
  public var secretFile: String
  /// A Unix socket for consoles on this host ("": none): the peer's credentials (SO_PEERCRED)
  /// say who connects; root and `unixOperators` are operators without AUTH, anyone else who may
  /// open the socket (its mode 0660: the service's group) starts as a viewer.
  public var unixPath: String
  public var unixOperators: [String]
  /// TLS for listeners that are not loopback, or that say "tls:" (see `ConsoleListener`).
  public var tlsCertFile: String
  public var tlsKeyFile: String
  public var tlsClientCAFile: String
  /// Lets a non-loopback listener speak plain text when no TLS is configured.
  public var allowPlaintextRemote: Bool
  /// A TLS client that has not finished its handshake by then is dropped (frees the slot).
  public var tlsHandshakeTimeoutMilliseconds = 10_000
  public var auth: AuthSettings
  public var limits: ConsoleLimits

  public init(_ c: ScanConfig = ScanConfig()) {
    listen = c.console.listen
    clientsMax = c.console.clientsMax
    clientsPerPeerMax = c.console.clientsPerPeerMax
    idleTimeoutSeconds = c.console.idleTimeoutSeconds
    clientOutputBytes = c.console.clientOutputBytes
    serialPath = c.console.serialPath
    serialBaud = c.console.serialBaud
    secretFile = c.console.secretFile
    unixPath = c.console.unixPath
    unixOperators = c.console.unixOperators
    tlsCertFile = c.console.tlsCertFile
    tlsKeyFile = c.console.tlsKeyFile
    tlsClientCAFile = c.console.tlsClientCAFile
    allowPlaintextRemote = c.console.allowPlaintextRemote
    auth = c.console.auth
    limits = c.console.limits
  }
}
