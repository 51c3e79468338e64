import ScanBase

/// What a reader does when it has heard nothing from the fleet (no bundle, no broker) for
/// longer than `FleetSettings.maxOfflineSeconds`.
public enum FleetOfflinePolicy: String, Sendable, CaseIterable {
  /// Keep deciding with the lists it has (and say so on STATUS).
  case keepGoing = "keep-going"
  /// Deny every code but the static entries of the allow-list file (and say so on STATUS).
  case denyAllButStatic = "deny-all-but-static"
}

/// What a signed `snapshot` command over the fleet may return. A snapshot is a picture of
/// whatever is held up to the camera, so a code in it is a credential: `redacted` blanks every
/// code the reader located and drops their payloads; `full` returns the frame as the console's
/// SNAPSHOT does (for a site whose broker ACLs keep the snapshot topic to its operators).
public enum FleetSnapshotPolicy: String, Sendable, CaseIterable {
  case off, redacted, full
}

/// The fleet link (`[fleet]` in config.toml): one MQTT broker connection per reader that
/// publishes every audit record at least once and takes signed bundles and commands.
public struct FleetSettings: Equatable, Sendable {
  /// `mqtt://host:port` or `mqtts://host:port`, tried in turn; empty: no fleet link.
  public var brokers: [String] = []
  /// MQTT protocol level: 4 (3.1.1) or 5.
  public var protocolVersion = 5
  /// The broker's CA (PEM): verifies the broker's certificate and host name (mqtts only).
  public var tlsCAFile = ""
  /// The reader's client certificate and key (PEM); the key is a secret file.
  public var tlsCertFile = ""
  public var tlsKeyFile = ""
  /// Optional MQTT user name and a secret file holding the password.
  public var username = ""
  public var passwordFile = ""
  /// This reader's name on the fleet: topic level and MQTT client id ([A-Za-z0-9_-], 1–64).
  public var readerID = ""
  /// Topics live under `<prefix>/<reader id>/`.
  public var topicPrefix = "scangate"
  public var keepaliveSeconds = 30
  /// Records published and not yet acknowledged at most (one batch).
  public var batchRecords = 100
  /// Records published per second at most (catch-up after an outage is paced by this).
  public var eventsPerSecondMax = 500
  /// The highest acknowledged audit sequence; empty: `<log.path>.fleet`.
  public var stateFile = ""
  /// Past this long without the broker, `offlinePolicy` applies. 0: never.
  public var maxOfflineSeconds = 86_400
  public var offlinePolicy = FleetOfflinePolicy.keepGoing
  /// Publish Home Assistant MQTT discovery under this prefix; empty: none.
  public var homeAssistantPrefix = "homeassistant"
  /// Bundles and commands over this size are dropped unread.
  public var messageBytesMax = 1 << 20
  /// What a signed snapshot command returns.
  public var snapshot = FleetSnapshotPolicy.redacted
  /// Home Assistant's command entities this reader announces and obeys (none by default).
  public var homeAssistantCommands: [HomeAssistantCommand] = []
  /// A secret file holding the code Home Assistant's door lock must send (4 to 12 digits);
  /// empty: no code.
  public var homeAssistantCodeFile = ""
  /// The site key the readers of a site share (a secret file, the same on every reader): keys
  /// counted uses (`credentials.uses_scope = "site"`) and, when `turnstile.site_key_file` is
  /// empty, site-wide anti-passback. "" = none.
  public var siteKeyFile = ""

  public init() {}

  /// Whether a fleet link is configured.
  public var isEnabled: Bool { !brokers.isEmpty }

  /// Why a reader id is not acceptable (topic level and client id), or nil.
  public static func readerIDProblem(_ id: String) -> String? {
    let bytes = Array(id.utf8)
    guard (1...64).contains(bytes.count) else { return "wants 1 to 64 characters" }
    for b in bytes {
      let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
      if !ok { return "only letters, digits, '-' and '_' (it is an MQTT topic level)" }
    }
    return nil
  }

  /// Why a topic prefix is not acceptable, or nil.
  public static func topicPrefixProblem(_ prefix: String) -> String? {
    let bytes = Array(prefix.utf8)
    guard (1...128).contains(bytes.count) else { return "wants 1 to 128 characters" }
    if bytes.first == 0x2F || bytes.last == 0x2F { return "must not start or end with '/'" }
    if bytes.contains(where: { $0 == 0x23 || $0 == 0x2B || $0 < 0x21 || $0 > 0x7E }) {
      return "no '#', '+', spaces or non-ASCII characters"
    }
    return nil
  }
}

/// One broker address from `fleet.brokers`.
public struct BrokerAddress: Equatable, Sendable {
  public var host: String
  public var port: Int
  public var tls: Bool

  public init(host: String, port: Int, tls: Bool) {
    self.host = host
    self.port = port
    self.tls = tls
  }

  /// Parses `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883); `host` may be
  /// `[v6 address]`.
  public init?(_ url: String) {
    let rest: Substring
    if url.hasPrefix("mqtts://") {
      tls = true
      rest = url.dropFirst(8)
    } else if url.hasPrefix("mqtt://") {
      tls = false
      rest = url.dropFirst(7)
    } else {
      return nil
    }
    var hostPart = rest
    var portPart: Substring? = nil
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else { return nil }
      hostPart = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else { return nil }
        portPart = after.dropFirst()
      }
    } else if let colon = rest.lastIndex(of: ":") {
      hostPart = rest[..<colon]
      portPart = rest[rest.index(after: colon)...]
    }
    guard !hostPart.isEmpty, !hostPart.contains("/"), !hostPart.contains(" ") else { return nil }
    host = String(hostPart)
    if let portPart {
      guard let p = Int(portPart), (1...65_535).contains(p) else { return nil }
      port = p
    } else {
      port = tls ? 8883 : 1883
    }
  }
}

extension FleetSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<FleetSettings>

  /// `[fleet]`'s keys.
  package static let configKeys: [ConfigKey<FleetSettings>] = [
    Key(name: "fleet.brokers", kind: .strings(count: 0...8)) { $0.brokers = $1.asStrings },
    Key(name: "fleet.protocol", kind: .choice(["3.1.1", "5"])) { $0.protocolVersion = $1.asString == "5" ? 5 : 4 },
    Key(name: "fleet.tls_ca_file", kind: .string) { $0.tlsCAFile = $1.asString },
    Key(name: "fleet.tls_cert_file", kind: .string) { $0.tlsCertFile = $1.asString },
    Key(name: "fleet.tls_key_file", kind: .string) { $0.tlsKeyFile = $1.asString },
    Key(name: "fleet.username", kind: .string) { $0.username = $1.asString },
    Key(name: "fleet.password_file", kind: .string) { $0.passwordFile = $1.asString },
    Key(name: "fleet.reader_id", kind: .string) { $0.readerID = $1.asString },
    Key(name: "fleet.topic_prefix", kind: .string) { $0.topicPrefix = $1.asString },
    Key(name: "fleet.keepalive_s", kind: .integer(5...3_600)) { $0.keepaliveSeconds = $1.asInt },
    Key(name: "fleet.batch_records", kind: .integer(1...1_000)) { $0.batchRecords = $1.asInt },
    Key(name: "fleet.events_per_second_max", kind: .integer(1...100_000)) { $0.eventsPerSecondMax = $1.asInt },
    Key(name: "fleet.state_file", kind: .string) { $0.stateFile = $1.asString },
    Key(name: "fleet.max_offline_s", kind: .integer(0...31_536_000)) { $0.maxOfflineSeconds = $1.asInt },
    Key(name: "fleet.offline_policy", kind: .choice(FleetOfflinePolicy.allCases.map(\.rawValue))) {
      $0.offlinePolicy = FleetOfflinePolicy(rawValue: $1.asString)!
    },
    Key(name: "fleet.home_assistant_prefix", kind: .string) { $0.homeAssistantPrefix = $1.asString },
    Key(name: "fleet.message_bytes_max", kind: .integer(1_024...16_777_216)) { $0.messageBytesMax = $1.asInt },
    Key(name: "fleet.snapshot", kind: .choice(FleetSnapshotPolicy.allCases.map(\.rawValue))) {
      $0.snapshot = FleetSnapshotPolicy(rawValue: $1.asString)!
    },
    Key(name: "fleet.home_assistant_commands", kind: .choices(HomeAssistantCommand.allCases.map(\.rawValue), count: 0...4)) {
      $0.homeAssistantCommands = $1.asStrings.compactMap(HomeAssistantCommand.init(rawValue:))
    },
    Key(name: "fleet.home_assistant_code_file", kind: .string) { $0.homeAssistantCodeFile = $1.asString },
    Key(name: "fleet.site_key_file", kind: .string) { $0.siteKeyFile = $1.asString },
  ]

  /// What is inconsistent in `[fleet]` (each naming its key), given the audit log's path (the
  /// link publishes it) and the file's line lookup.
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] {
    let f = self
    guard f.isEnabled else { return [] }
    var errors: [ConfigError] = []
    func add(_ key: String, _ reason: String) { errors.append(ConfigError(key: key, line: line(key), reason: reason)) }
    for url in f.brokers where BrokerAddress(url) == nil {
      add("fleet.brokers", "'\(url)' is not mqtt://host[:port] or mqtts://host[:port]")
    }
    if let problem = FleetSettings.readerIDProblem(f.readerID) {
      add("fleet.reader_id", f.readerID.isEmpty ? "fleet.brokers is set: a reader id is needed" : problem)
    }
    if let problem = FleetSettings.topicPrefixProblem(f.topicPrefix) { add("fleet.topic_prefix", problem) }
    if !f.homeAssistantPrefix.isEmpty, let problem = FleetSettings.topicPrefixProblem(f.homeAssistantPrefix) {
      add("fleet.home_assistant_prefix", problem)
    }
    if f.brokers.contains(where: { $0.hasPrefix("mqtts://") }) && f.tlsCAFile.isEmpty {
      add("fleet.tls_ca_file", "an mqtts:// broker needs the CA that signed its certificate")
    }
    if f.tlsCertFile.isEmpty != f.tlsKeyFile.isEmpty {
      add("fleet.tls_key_file", "fleet.tls_cert_file and fleet.tls_key_file go together")
    }
    if facts.logPath.isEmpty {
      add("fleet.brokers", "the fleet link publishes the audit log: log.path must be set")
    }
    errors += commandProblems(line: line)
    return errors
  }
}

extension FleetSettings {
  /// Whether commands from `broker` may be obeyed: a broker on this reader's own loopback, or
  /// one reached over TLS (its certificate checked against `tls_ca_file`) that knows who this
  /// reader is (a client certificate or a user name and password), so its ACL decides who may
  /// publish on the command topics.
  public func isAuthenticated(_ broker: BrokerAddress) -> Bool {
    if broker.isLoopback { return true }
    return broker.tls && !tlsCAFile.isEmpty && (!tlsCertFile.isEmpty || (!username.isEmpty && !passwordFile.isEmpty))
  }

  /// `home_assistant_commands` and its code file: each broker authenticated, the discovery
  /// prefix set (Home Assistant finds the entities there), no command named twice.
  func commandProblems(line: ConfigLineLookup) -> [ConfigError] {
    guard !homeAssistantCommands.isEmpty || !homeAssistantCodeFile.isEmpty else { return [] }
    var errors: [ConfigError] = []
    let key = "fleet.home_assistant_commands"
    if !homeAssistantCodeFile.isEmpty && !homeAssistantCommands.contains(.open) {
      // Only the lock asks for a code (Home Assistant's switch and button have none): a code
      // file without "open" would guard nothing.
      errors.append(
        ConfigError(
          key: "fleet.home_assistant_code_file", line: line("fleet.home_assistant_code_file"),
          reason: "the code guards the door's open only: list \"open\" in home_assistant_commands, or remove the code file"))
    }
    if Set(homeAssistantCommands).count != homeAssistantCommands.count {
      errors.append(ConfigError(key: key, line: line(key), reason: "a command is named twice"))
    }
    if homeAssistantPrefix.isEmpty {
      errors.append(ConfigError(key: key, line: line(key), reason: "command entities need Home Assistant discovery: set home_assistant_prefix"))
    }
    for url in brokers {
      guard let address = BrokerAddress(url), !isAuthenticated(address) else { continue }
      errors.append(
        ConfigError(
          key: key, line: line(key),
          reason:
            "'\(url)' is not an authenticated broker: commands are obeyed only over mqtts:// with tls_ca_file and a client certificate or username and password_file, or from a broker on this reader's loopback"
        ))
    }
    return errors
  }
}

extension Character {
  fileprivate var isASCIIDigitByte: Bool { isASCII && isNumber }
}

extension BrokerAddress {
  /// A broker on this host's loopback: `localhost`, `::1` or a dotted IPv4 address in
  /// 127.0.0.0/8 (a name such as `127.0.0.1.example.net` is not).
  public var isLoopback: Bool {
    if host == "localhost" || host == "::1" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[0] == "127" else { return false }
    return parts.allSatisfy { p in p.count <= 3 && !p.isEmpty && p.allSatisfy(\.isASCIIDigitByte) && Int(p)! <= 255 }
  }
}
