import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate fleet`: tools for a site's fleet of readers on its MQTT broker.
/// - `tail`: subscribes to every reader's events, de-duplicates by (reader, seq) and reports
///   gaps (a gap is a record that never arrived; a repeat is a publish whose acknowledgement
///   was lost, and is dropped).
enum FleetToolCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard let sub = arguments.first else {
      writeStandardError("scangate fleet: tail | publish-bundle | command | bench (see scangate help fleet)\n")
      return 2
    }
    let rest = Array(arguments.dropFirst())
    switch sub {
    case "tail": return tail(rest)
    case "bench": return FleetBench.run(rest)
    case "publish-bundle": return publishBundle(rest)
    case "command": return command(rest)
    default:
      writeStandardError("scangate fleet: unknown tool '\(sub)'\n")
      return 2
    }
  }

  static func tail(_ arguments: [String]) -> Int32 {
    let options: Options
    let seconds: Int
    do {
      options = try Options(arguments, valued: ["broker", "ca", "cert", "key", "prefix", "seconds"], known: ["quiet"])
      seconds = try options.integer("seconds", default: 0, range: 0...31_536_000)
    } catch {
      writeStandardError("scangate fleet tail: \(error)\n")
      return 2
    }
    let prefix = options.value("prefix") ?? "scangate"
    guard let client = FleetToolClient.connect(options, clientID: "scangate-tail-\(getpid())") else { return 1 }
    do { try client.subscribe(prefix + "/+/events", qos: 1) } catch {
      writeStandardError("scangate fleet tail: \(error)\n")
      return 1
    }
    // Per reader: the sequences seen above the contiguous prefix, and that prefix's end.
    var through: [String: Int64] = [:]
    var above: [String: Set<Int64>] = [:]
    var duplicates: [String: Int] = [:]
    var first: [String: Int64] = [:]
    let clock = SystemMonotonicClock()
    let end = seconds > 0 ? clock.now().adding(milliseconds: seconds * 1000) : nil
    while end.map({ clock.now() < $0 }) ?? true {
      if client.loop(timeoutMilliseconds: 100) != 0 && client.state != .connected {
        writeStandardError("scangate fleet tail: connection lost\n")
        break
      }
      while let m = client.takeMessage() {
        guard let (reader, seq) = FleetToolClient.identity(m.payload) else { continue }
        if first[reader] == nil {
          first[reader] = seq
          through[reader] = seq - 1
        }
        if seq <= through[reader]! || above[reader, default: []].contains(seq) {
          duplicates[reader, default: 0] += 1
          continue
        }
        above[reader, default: []].insert(seq)
        while above[reader]!.remove(through[reader]! + 1) != nil { through[reader]! += 1 }
        if !options.flag("quiet") { print(String(decoding: m.payload, as: UTF8.self)) }
      }
      flushStandardOutput()
    }
    var gapsTotal = 0
    for reader in first.keys.sorted() {
      let missing = above[reader]!.isEmpty ? 0 : Int(above[reader]!.max()! - through[reader]!) - above[reader]!.count
      gapsTotal += missing
      print(
        "\(reader): records \(first[reader]!)...\(max(through[reader]!, above[reader]!.max() ?? 0)), "
          + "\(missing) missing, \(duplicates[reader, default: 0]) duplicates dropped")
    }
    return gapsTotal == 0 ? 0 : 1
  }
}

extension FleetToolCommand {
  static let signingOptions: Set<String> = ["broker", "ca", "cert", "key", "prefix", "issuer-key", "kid", "reader", "wait"]

  /// Signs `payload` with the issuer key (a secret file of 64 hex digits) as COSE_Sign1.
  static func sign(_ payload: [UInt8], _ options: Options) -> [UInt8]? {
    guard let keyPath = options.value("issuer-key"), let kid = options.value("kid") else {
      writeStandardError("scangate fleet: --issuer-key FILE and --kid KID are needed\n")
      return nil
    }
    do {
      var seed = try CredentialFiles.readSecretKey(keyPath)
      defer { SecretBytes.wipe(&seed) }
      return try CredentialIssuer.sign(payload: payload, kid: Array(kid.utf8), issuerSeed: seed)
    } catch {
      writeStandardError("scangate fleet: \(error)\n")
      return nil
    }
  }

  /// Publishes `envelope` on the reader's `topic` and prints the reply (within --wait seconds).
  static func send(_ envelope: [UInt8], to topic: String, reader: String, retain: Bool, _ options: Options) -> Int32 {
    let prefix = options.value("prefix") ?? "scangate"
    guard let client = FleetToolClient.connect(options, clientID: "scangate-fleet-\(getpid())") else { return 1 }
    let waitSeconds = Int(options.value("wait") ?? "10") ?? 10
    if reader != "*" { _ = try? client.subscribe("\(prefix)/\(reader)/reply", qos: 1) }
    for _ in 0..<5 { client.loop(timeoutMilliseconds: 50) }
    let target = reader == "*" ? "\(prefix)/+/\(topic)" : "\(prefix)/\(reader)/\(topic)"
    guard !target.contains("+") else {
      writeStandardError("scangate fleet: name one reader with --reader (MQTT cannot publish to a wildcard)\n")
      return 2
    }
    do { _ = try client.publish(topic: target, envelope, qos: 1, retain: retain) } catch {
      writeStandardError("scangate fleet: \(error)\n")
      return 1
    }
    let clock = SystemMonotonicClock()
    let end = clock.now().adding(milliseconds: waitSeconds * 1_000)
    while clock.now() < end {
      client.loop(timeoutMilliseconds: 100)
      if let m = client.takeMessage() {
        let text = String(decoding: m.payload, as: UTF8.self)
        print(text)
        return text.contains(#""ok":true"#) ? 0 : 1
      }
    }
    writeStandardError("scangate fleet: no reply from \(reader) within \(waitSeconds) s\n")
    return 1
  }

  static func publishBundle(_ arguments: [String]) -> Int32 {
    let options: Options
    let version: Int
    do {
      options = try Options(
        arguments, valued: signingOptions.union(["version", "allow-list", "revocation", "trust", "schedules"]), known: ["retain"])
      version = try options.integer("version", default: 0, range: 1...Int.max)
    } catch {
      writeStandardError("scangate fleet publish-bundle: \(error)\n")
      return 2
    }
    guard let reader = options.value("reader") else {
      writeStandardError("scangate fleet publish-bundle: --reader ID is needed\n")
      return 2
    }
    var files: [(name: String, bytes: [UInt8])] = []
    for name in FleetBundle.names {
      guard let path = options.value(name) else { continue }
      do { files.append((name, try readWholeFile(path, maxBytes: 16 << 20))) } catch {
        writeStandardError("scangate fleet publish-bundle: \(error)\n")
        return 1
      }
    }
    guard !files.isEmpty else {
      writeStandardError("scangate fleet publish-bundle: name at least one of --allow-list, --revocation, --trust, --schedules\n")
      return 2
    }
    let bundle = FleetBundle(reader: reader, version: Int64(version), files: files)
    guard let envelope = sign(bundle.bytes, options) else { return 1 }
    return send(envelope, to: "bundle", reader: reader, retain: options.flag("retain"), options)
  }

  static func command(_ arguments: [String]) -> Int32 {
    let options: Options
    let expiresIn: Int
    do {
      options = try Options(arguments, valued: signingOptions.union(["command", "pulse-ms", "expires-in", "tag"]), known: [])
      expiresIn = try options.integer("expires-in", default: 60, range: 1...Int(FleetCommand.lifetimeSecondsMax))
    } catch {
      writeStandardError("scangate fleet command: \(error)\n")
      return 2
    }
    guard let reader = options.value("reader"), let name = options.value("command"), let action = FleetCommand.Action(rawValue: name)
    else {
      let actions = FleetCommand.Action.allCases.map(\.rawValue).joined(separator: "|")
      writeStandardError("scangate fleet command: --reader ID and --command \(actions) are needed\n")
      return 2
    }
    let nonce = SecretBytes.random(16)
    var command = FleetCommand(
      reader: reader, action: action, nonce: Hex.string(nonce),
      expiresUnixSeconds: SystemWallClock().unixSeconds() + Int64(expiresIn))
    if let ms = options.value("pulse-ms") { command.pulseMilliseconds = Int(ms) }
    if action == .passbackForgive {
      guard let tag = options.value("tag"), tag.utf8.count == 16, let value = UInt64(tag.lowercased(), radix: 16) else {
        writeStandardError("scangate fleet command: passback-forgive needs --tag (the 16 hex digits its passage events show)\n")
        return 2
      }
      command.tag = value
    }
    guard let envelope = sign(command.bytes, options) else { return 1 }
    return send(envelope, to: "command", reader: reader, retain: false, options)
  }
}
