/// `[console]`: the technicians' line protocol on TCP, a Unix socket and a serial port
/// (docs/console.md). ScanConsole's `ConsoleSettings` is made from it.
public struct ConsoleConfig: Equatable, Sendable {
  public var listen = ["127.0.0.1:4570"]
  public var clientsMax = 16
  public var clientsPerPeerMax = 4
  public var idleTimeoutSeconds = 300
  public var clientOutputBytes = 16_384
  public var serialPath = ""
  public var serialBaud = 115_200
  public var secretFile = ""
  /// A Unix socket for consoles on this host ("": none); the peer's user gives the role.
  public var unixPath = ""
  /// Users who are operators on the Unix socket without AUTH (root always is).
  public var unixOperators: [String] = []
  public var auth = AuthSettings()
  public var limits = ConsoleLimits()
  public var tlsCertFile = ""
  public var tlsKeyFile = ""
  public var tlsClientCAFile = ""
  public var allowPlaintextRemote = false
  public init() {}
}

/// `[admin]`: the web admin page (docs/admin.md).
public struct AdminConfig: Equatable, Sendable {
  /// The page's accounts (`scangate admin user ...`): name, role, Argon2id hash.
  public var usersFile = "/etc/scangate/admin-users"
  /// Where `scangate admin` serves HTTPS ("host:port", "[v6]:port"; "" = off).
  public var listen = ""
  /// The page's certificate (PEM) and its key (a secret file).
  public var tlsCertFile = "/etc/scangate/admin.crt"
  public var tlsKeyFile = "/etc/scangate/admin.key"
  /// A session unused this long is signed out.
  public var sessionIdleMinutes = 30
  /// A secret file holding `/metrics`' bearer token ("": no /metrics).
  public var metricsTokenFile = ""
  /// An issuer's secret key ("": none): the page issues guest passes with it. Only on a host that
  /// runs no reader (console.unix_path ""; `scangate run` refuses such a configuration).
  public var issuerKeyFile = ""
  /// The issuer key's id in the readers' trust files.
  public var issuerKid = ""
  /// A reader on another host that the page drives through its TLS console.
  public var reader = AdminReaderSettings()
  public init() {}
}
