import ScanBase

/// Signed messages the fleet sends a reader: bundles (files to replace) and commands. Both
/// travel as a signed envelope (COSE_Sign1 by an issuer or operator key, verified by a
/// `SignedEnvelopeVerifier`); these are the forms of the payload inside, parsed strictly —
/// anything not exactly the form is refused whole, and the reader keeps what it has.
///
/// A bundle:
/// ```
/// scangate-bundle 1
/// reader <reader id or *>
/// version <decimal, greater than the last applied>
/// file <name> <byte count>
/// <exactly that many bytes>
/// (more file sections)
/// ```
/// A command:
/// ```
/// scangate-command 1
/// reader <reader id>
/// command open|reload|status|snapshot|lockdown-on|lockdown-off|occupancy-reset|passback-forgive
/// nonce <16 to 64 hex digits, never used before>
/// expires <unix seconds: at most 300 s ahead>
/// [pulse_ms <milliseconds>]   (open only)
/// tag <16 hex digits>           (passback-forgive only: the credential's tag on its passage events)
/// ```

/// Why a signed envelope was not accepted.
public struct EnvelopeRefusal: Error, Equatable, Sendable, CustomStringConvertible {
  public var reason: String
  public init(_ reason: String) { self.reason = reason }
  public var description: String { reason }
}

/// A verified envelope: the signed payload and the key that signed it.
public struct VerifiedEnvelope: Sendable, Equatable {
  public var payload: [UInt8]
  public var keyID: String
  public init(payload: [UInt8], keyID: String) {
    self.payload = payload
    self.keyID = keyID
  }
}

/// Checks a signed envelope (COSE_Sign1, Ed25519, `kid` in the protected header, the key in
/// the trust file and valid at `now`): the payload, or why not. The fleet link takes any
/// implementation; the credential issuer keys' verifier is the one the reader uses.
public protocol SignedEnvelopeVerifier: AnyObject {
  func verify(_ envelope: [UInt8], nowUnixSeconds: Int64) -> Result<VerifiedEnvelope, EnvelopeRefusal>
}

/// The parsed bundle.
public struct FleetBundle: Equatable, Sendable {
  public var reader: String
  public var version: Int64
  public var files: [(name: String, bytes: [UInt8])]
  public static let filesMax = 8

  public init(reader: String, version: Int64, files: [(name: String, bytes: [UInt8])]) {
    self.reader = reader
    self.version = version
    self.files = files
  }
  /// File names a bundle may carry.
  public static let names = ["allow-list", "revocation", "trust", "schedules"]

  public static func == (a: FleetBundle, b: FleetBundle) -> Bool {
    a.reader == b.reader && a.version == b.version && a.files.map(\.name) == b.files.map(\.name)
      && a.files.map(\.bytes) == b.files.map(\.bytes)
  }

  /// Parses a bundle payload (fuzzable: any bytes parse or are refused).
  public static func parse(_ bytes: [UInt8]) -> Result<FleetBundle, EnvelopeRefusal> {
    var r = LineReader(bytes)
    guard r.line() == "scangate-bundle 1" else { return .failure(EnvelopeRefusal("not a scangate-bundle 1")) }
    guard let reader = r.field("reader") else { return .failure(EnvelopeRefusal("no reader line")) }
    guard let v = r.field("version"), let version = Int64(v), version > 0, v.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
      return .failure(EnvelopeRefusal("no valid version line"))
    }
    var bundle = FleetBundle(reader: reader, version: version, files: [])
    while !r.atEnd {
      guard let header = r.field("file") else { return .failure(EnvelopeRefusal("expected a file line")) }
      let parts = header.split(separator: " ", omittingEmptySubsequences: false)
      guard parts.count == 2, let count = Int(parts[1]), count >= 0, count <= r.remaining else {
        return .failure(EnvelopeRefusal("bad file line '\(header.prefix(60))'"))
      }
      let name = String(parts[0])
      guard names.contains(name) else { return .failure(EnvelopeRefusal("unknown file '\(name.prefix(40))'")) }
      guard !bundle.files.contains(where: { $0.name == name }) else { return .failure(EnvelopeRefusal("file '\(name)' twice")) }
      guard bundle.files.count < filesMax else { return .failure(EnvelopeRefusal("too many files")) }
      bundle.files.append((name, r.take(count)))
    }
    guard !bundle.files.isEmpty else { return .failure(EnvelopeRefusal("a bundle with no file")) }
    return .success(bundle)
  }

  /// The payload form (what an issuer signs).
  public var bytes: [UInt8] {
    var out = Array("scangate-bundle 1\nreader \(reader)\nversion \(version)\n".utf8)
    for f in files {
      out += Array("file \(f.name) \(f.bytes.count)\n".utf8)
      out += f.bytes
    }
    return out
  }
}

/// The parsed command.
public struct FleetCommand: Equatable, Sendable {
  /// `lockdown-on`/`lockdown-off`: the fleet latches or lifts a lockdown (docs/turnstiles.md); a
  /// lockdown the fleet latched is lifted only by the fleet.
  public enum Action: String, Sendable, CaseIterable {
    case open, reload, status, snapshot
    case lockdownOn = "lockdown-on"
    case lockdownOff = "lockdown-off"
    /// The turnstile's occupancy to 0; one credential's anti-passback forgiven (`tag`).
    case occupancyReset = "occupancy-reset"
    case passbackForgive = "passback-forgive"
  }
  public var reader: String
  public var action: Action
  public var nonce: String
  public var expiresUnixSeconds: Int64
  public var pulseMilliseconds: Int?
  /// passback-forgive: the credential's tag (its first 8 bytes, as events show them).
  public var tag: UInt64?
  /// How far ahead a command may expire: a captured command is useless after this.
  public static let lifetimeSecondsMax: Int64 = 300

  public init(reader: String, action: Action, nonce: String, expiresUnixSeconds: Int64, pulseMilliseconds: Int? = nil) {
    self.reader = reader
    self.action = action
    self.nonce = nonce
    self.expiresUnixSeconds = expiresUnixSeconds
    self.pulseMilliseconds = pulseMilliseconds
  }

  public static func parse(_ bytes: [UInt8]) -> Result<FleetCommand, EnvelopeRefusal> {
    guard bytes.count <= 1_024 else { return .failure(EnvelopeRefusal("command over 1024 bytes")) }
    var r = LineReader(bytes)
    guard r.line() == "scangate-command 1" else { return .failure(EnvelopeRefusal("not a scangate-command 1")) }
    guard let reader = r.field("reader") else { return .failure(EnvelopeRefusal("no reader line")) }
    guard let a = r.field("command"), let action = Action(rawValue: a) else { return .failure(EnvelopeRefusal("no valid command line")) }
    guard let nonce = r.field("nonce"), (16...64).contains(nonce.utf8.count),
      nonce.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
    else { return .failure(EnvelopeRefusal("no valid nonce line (16 to 64 lowercase hex digits)")) }
    guard let e = r.field("expires"), let expires = Int64(e), expires > 0 else { return .failure(EnvelopeRefusal("no valid expires line")) }
    var command = FleetCommand(reader: reader, action: action, nonce: nonce, expiresUnixSeconds: expires)
    if action == .passbackForgive {
      guard let t = r.field("tag"), t.utf8.count == 16, let tag = UInt64(t, radix: 16),
        t.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
      else { return .failure(EnvelopeRefusal("passback-forgive needs a tag line (16 lowercase hex digits)")) }
      command.tag = tag
    } else if !r.atEnd {
      guard action == .open, let p = r.field("pulse_ms"), let ms = Int(p), (1...60_000).contains(ms) else {
        return .failure(EnvelopeRefusal("unexpected line after expires"))
      }
      command.pulseMilliseconds = ms
    }
    guard r.atEnd else { return .failure(EnvelopeRefusal("unexpected line at the end")) }
    return .success(command)
  }

  public var bytes: [UInt8] {
    var s = "scangate-command 1\nreader \(reader)\ncommand \(action.rawValue)\nnonce \(nonce)\nexpires \(expiresUnixSeconds)\n"
    if let pulseMilliseconds { s += "pulse_ms \(pulseMilliseconds)\n" }
    if let tag {
      let hex = String(tag, radix: 16)
      s += "tag " + String(repeating: "0", count: 16 - hex.count) + hex + "\n"
    }
    return Array(s.utf8)
  }
}

/// Nonces of commands acted on, until they expire: a replayed command is refused. Bounded:
/// when full, a new command is refused until one expires (never forgets an unexpired nonce).
public struct NonceLedger: Sendable {
  public private(set) var entries: [(nonce: String, expires: Int64)] = []
  public let capacity: Int
  /// The latest expiry of a nonce let go: a command expiring at or before it may have been acted
  /// on and forgotten, so it is refused whatever the clock says (kept in the file too).
  public private(set) var horizon: Int64 = 0
  public init(capacity: Int = 1_024) { self.capacity = capacity }

  /// Whether `command` may be acted on at `now` (the judged time: the later of the clock and its
  /// floor); records its nonce when it may. The caller makes the ledger durable before acting.
  public mutating func admit(_ command: FleetCommand, now: Int64) -> EnvelopeRefusal? {
    for e in entries where e.expires < now { horizon = max(horizon, e.expires) }
    entries.removeAll { $0.expires < now }
    if command.expiresUnixSeconds < now { return EnvelopeRefusal("expired \(now.saturatingAdd(-command.expiresUnixSeconds)) s ago") }
    if command.expiresUnixSeconds <= horizon { return EnvelopeRefusal("replayed (older than the commands already forgotten)") }
    if command.expiresUnixSeconds > now.saturatingAdd(FleetCommand.lifetimeSecondsMax) {
      return EnvelopeRefusal("expires more than \(FleetCommand.lifetimeSecondsMax) s ahead")
    }
    if entries.contains(where: { $0.nonce == command.nonce }) { return EnvelopeRefusal("replayed (nonce already used)") }
    if entries.count >= capacity { return EnvelopeRefusal("too many commands in flight; try again shortly") }
    entries.append((command.nonce, command.expiresUnixSeconds))
    return nil
  }

  /// `horizon <t>` then one `nonce expires` line each (the ledger's file, so a restart does not forget).
  public var text: [UInt8] { Array((["horizon \(horizon)\n"] + entries.map { "\($0.nonce) \($0.expires)\n" }).joined().utf8) }
  public mutating func load(_ text: [UInt8]) {
    for line in text.split(separator: 0x0A) {
      let parts = line.split(separator: 0x20)
      guard parts.count == 2, let e = Int64(String(decoding: parts[1], as: UTF8.self)) else { continue }
      let name = String(decoding: parts[0], as: UTF8.self)
      if name == "horizon" {
        horizon = max(horizon, e)
      } else if entries.count < capacity {
        entries.append((name, e))
      } else {
        horizon = max(horizon, e)  // not kept: nothing expiring before it is taken again
      }
    }
  }
}

/// Reads `\n`-terminated text lines and raw byte runs from a payload.
struct LineReader {
  let bytes: [UInt8]
  var index = 0
  init(_ bytes: [UInt8]) { self.bytes = bytes }
  var atEnd: Bool { index >= bytes.count }
  var remaining: Int { bytes.count - index }

  /// The next line (without its `\n`), printable ASCII only, at most 256 bytes; nil otherwise.
  mutating func line() -> String? {
    guard let end = bytes[index...].prefix(257).firstIndex(of: 0x0A) else { return nil }
    let line = bytes[index..<end]
    guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
    index = end + 1
    return String(decoding: line, as: UTF8.self)
  }

  /// The value of a `<key> <value>` line.
  mutating func field(_ key: String) -> String? {
    let save = index
    guard let l = line(), l.hasPrefix(key + " "), l.utf8.count > key.utf8.count + 1 else {
      index = save
      return nil
    }
    return String(l.dropFirst(key.count + 1))
  }

  mutating func take(_ count: Int) -> [UInt8] {
    defer { index += count }
    return Array(bytes[index..<index + count])
  }
}
