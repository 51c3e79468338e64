import Glibc
import Synchronization
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

  /// A client for the broker named by --broker, with --ca / --cert / --key for mqtts.
  static func connect(_ options: Options, clientID: String, cleanSession: Bool = true) -> MQTTClient? {
    guard let url = options.value("broker"), let address = BrokerAddress(url) else {
      writeStandardError("scangate fleet: --broker mqtt://HOST[:PORT] or mqtts://HOST[:PORT] is needed\n")
      return nil
    }
    do throws(MQTTError) {
      let client = try MQTTClient(
        clientID: clientID, protocolVersion: 4, messageBytesMax: 1 << 20, messagesMax: 1 << 20, cleanSession: cleanSession)
      if address.tls {
        try client.useTLS(caFile: options.value("ca") ?? "", certFile: options.value("cert") ?? "", keyFile: options.value("key") ?? "")
      }
      try client.connect(host: address.host, port: address.port, keepaliveSeconds: 30)
      let deadline = SystemMonotonicClock().now().adding(milliseconds: 10_000)
      while client.state == .connecting && SystemMonotonicClock().now() < deadline { client.loop(timeoutMilliseconds: 50) }
      guard client.state == .connected else {
        writeStandardError("scangate fleet: \(url): \(client.state == .refused ? client.refusalText : "cannot connect")\n")
        return nil
      }
      return client
    } catch {
      writeStandardError("scangate fleet: \(url): \(error)\n")
      return nil
    }
  }

  /// The reader id and sequence of an event message, or nil when it is not one.
  static func identity(_ payload: [UInt8]) -> (String, Int64)? {
    guard payload.count <= 65_536 else { return nil }
    func after(_ key: String) -> Int? {
      let k = Array(key.utf8)
      guard payload.count >= k.count else { return nil }
      for i in 0...(payload.count - k.count) where payload[i..<i + k.count].elementsEqual(k) { return i + k.count }
      return nil
    }
    guard let r = after(#""reader":""#), let end = payload[r...].firstIndex(of: 0x22), let s = after(#""seq":"#) else { return nil }
    let digits = payload[s...].prefix { $0 >= 0x30 && $0 <= 0x39 }
    guard !digits.isEmpty, digits.count <= 18, let seq = Int64(String(decoding: digits, as: UTF8.self)) else { return nil }
    return (String(decoding: payload[r..<end], as: UTF8.self), seq)
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
    guard let client = connect(options, clientID: "scangate-tail-\(getpid())") else { return 1 }
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
        guard let (reader, seq) = identity(m.payload) else { continue }
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
    guard let client = connect(options, clientID: "scangate-fleet-\(getpid())") else { return 1 }
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

/// `scangate fleet bench`: many fleet links (the real `FleetLink`, several per process, each
/// with its own audit database) against one broker, each reader logging at a steady rate,
/// and one subscriber that de-duplicates and times every event (bench/fleet/run drives it).
enum FleetBench {
  /// A bench reader's writer, as the service's AuditLog is to its link.
  final class Progress: AuditLogProgress, @unchecked Sendable {
    private let written = Atomic<Int64>(0)
    private let retain = Atomic<Int64>(.max)
    var writtenRecords: Int64 { written.load(ordering: .acquiring) }
    var retainFrom: Int64 {
      get { retain.load(ordering: .acquiring) }
      set { retain.store(newValue, ordering: .releasing) }
    }
    func add(_ n: Int) { written.wrappingAdd(Int64(n), ordering: .releasing) }
  }

  final class Subscriber: @unchecked Sendable {
    let stop = Atomic<Bool>(false)
    let options: Options
    var client: MQTTClient? = nil
    var seen: [String: Set<Int64>] = [:]
    var duplicates = 0
    var reconnects = 0
    var latenciesMicroseconds: [Int64] = []
    /// Per second of the run: first deliveries and their latencies (the timeline file).
    var startNanoseconds: Int64 = 0
    var timeline: [[Int64]] = []
    init(_ options: Options) { self.options = options }

    /// A persistent session (same client id, not clean): what the broker queued for it while
    /// it was away is delivered when it is back.
    func connect() -> Bool {
      client = nil
      guard let c = FleetToolCommand.connect(options, clientID: "scangate-bench-subscriber", cleanSession: false) else { return false }
      do { try c.subscribe("scangate/+/events", qos: 1) } catch { return false }
      client = c
      return true
    }

    func run() {
      while !stop.load(ordering: .relaxed) {
        guard let client, client.state == .connected || client.state == .connecting else {
          usleep(200_000)
          if connect() { reconnects += 1 }
          continue
        }
        client.loop(timeoutMilliseconds: 50)
        while let m = client.takeMessage() {
          let now = SystemWallClock().unixNanoseconds()
          guard let (reader, seq) = FleetToolCommand.identity(m.payload) else { continue }
          if seen[reader, default: []].insert(seq).inserted {
            if let t = timeNanoseconds(m.payload) {
              latenciesMicroseconds.append((now - t) / 1_000)
              let second = Int(max(0, now - startNanoseconds) / 1_000_000_000)
              while timeline.count <= second { timeline.append([]) }
              timeline[second].append((now - t) / 1_000)
            }
          } else {
            duplicates += 1
          }
        }
      }
    }

    func timeNanoseconds(_ payload: [UInt8]) -> Int64? {
      let key = Array(#""time_ns":"#.utf8)
      guard payload.count > key.count else { return nil }
      for i in 0...(payload.count - key.count) where payload[i..<i + key.count].elementsEqual(key) {
        return Int64(String(decoding: payload[(i + key.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self))
      }
      return nil
    }
  }

  static func run(_ arguments: [String]) -> Int32 {
    let options: Options
    let links: Int, rate: Int, seconds: Int
    do {
      options = try Options(arguments, valued: ["broker", "links", "rate", "seconds", "dir", "timeline"], known: [])
      links = try options.integer("links", default: 100, range: 1...5_000)
      rate = try options.integer("rate", default: 1, range: 1...1_000)
      seconds = try options.integer("seconds", default: 30, range: 1...86_400)
    } catch {
      writeStandardError("scangate fleet bench: \(error)\n")
      return 2
    }
    guard let url = options.value("broker"), let dir = options.value("dir") else {
      writeStandardError("scangate fleet bench: --broker URL and --dir DIR are needed\n")
      return 2
    }
    let rssStart = SoakCommand.residentKiB()
    var stores: [AuditStore] = []
    var keys: [AuditChainKey] = []
    var fleet: [FleetLink] = []
    var progress: [Progress] = []
    do {
      for i in 0..<links {
        let path = "\(dir)/reader-\(i).db"
        let store = try AuditStore(path: path, readOnly: false)
        let key = try AuditChainKey.generate(path + ".key")
        try store.beginKeyedChain(key)
        stores.append(store)
        keys.append(key)
        var s = FleetSettings()
        s.brokers = [url]
        s.readerID = "bench-\(i)"
        s.keepaliveSeconds = 10
        s.homeAssistantPrefix = ""
        progress.append(Progress())
        fleet.append(FleetLink(settings: s, logPath: path, auditLog: progress[i]))
      }
    } catch {
      writeStandardError("scangate fleet bench: \(error)\n")
      return 1
    }
    let subscriber = Subscriber(options)
    var tries = 0
    while !subscriber.connect() {
      tries += 1
      guard tries < 30 else { return 1 }
      usleep(1_000_000)
    }
    subscriber.startNanoseconds = SystemWallClock().unixNanoseconds()
    let subscriberThread = startThread { subscriber.run() }
    for link in fleet { link.start() }
    let rssLinks = SoakCommand.residentKiB()
    // Every 100 ms each reader logs rate/10 records (spread: reader i logs when its turn comes).
    let clock = SystemMonotonicClock()
    let start = clock.now()
    var written = 0
    var carry = 0.0
    var lastSecond = -1
    while clock.now().milliseconds(since: start) < seconds * 1_000 {
      carry += Double(rate) / 10
      let each = Int(carry)
      carry -= Double(each)
      if each > 0 {
        for i in 0..<links {
          let now = SystemWallClock().unixNanoseconds()
          var batch: [AuditRecord] = []
          for _ in 0..<each {
            batch.append(
              AuditRecord(
                sequence: 0, run: 1, eventSequence: Int64(written), wallNanoseconds: now, kind: .decision, verdict: .granted,
                format: "qr", label: "bench"))
          }
          do {
            try stores[i].append(batch, key: keys[i])
            progress[i].add(each)
          } catch { writeStandardError("append: \(error)\n") }
          written += each
        }
      }
      let second = clock.now().milliseconds(since: start) / 1_000
      if second != lastSecond && second % 10 == 0 {
        lastSecond = second
        let connected = fleet.filter(\.isConnected).count
        print("t=\(second)s written \(written), links connected \(connected)/\(links)")
        flushStandardOutput()
      }
      usleep(100_000)
    }
    // Drain: every link acknowledged through its last record, or 60 s.
    let drainStart = clock.now()
    while clock.now().milliseconds(since: drainStart) < 60_000 {
      if zip(fleet, stores).allSatisfy({ $0.acknowledgedThrough == $1.lastSequence }) { break }
      usleep(100_000)
    }
    let drainMilliseconds = clock.now().milliseconds(since: drainStart)
    usleep(1_000_000)
    let rssEnd = SoakCommand.residentKiB()
    for link in fleet { link.stop() }
    withExtendedLifetime(progress) {}
    subscriber.stop.store(true, ordering: .relaxed)
    pthread_join(subscriberThread, nil)
    var lost = 0
    for i in 0..<links {
      let got = subscriber.seen["bench-\(i)"] ?? []
      lost += Int(stores[i].lastSequence) - got.filter { $0 >= 1 && $0 <= stores[i].lastSequence }.count
    }
    let delivered = subscriber.seen.values.reduce(0) { $0 + $1.count }
    if let path = options.value("timeline") {
      // second, events delivered (first copies), their median and 99th percentile latency in ms
      var text = "second,delivered,p50_ms,p99_ms\n"
      for (second, values) in subscriber.timeline.enumerated() {
        let v = values.sorted()
        let p50 = v.isEmpty ? 0 : Double(v[v.count / 2]) / 1_000
        let p99 = v.isEmpty ? 0 : Double(v[min(v.count - 1, v.count * 99 / 100)]) / 1_000
        text += "\(second),\(v.count),\(p50),\(p99)\n"
      }
      do { try writeFileAtomically(path, Array(text.utf8)) } catch { writeStandardError("timeline: \(error)\n") }
    }
    let sorted = subscriber.latenciesMicroseconds.sorted()
    func p(_ q: Double) -> Double { sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1_000 }
    print("links \(links), \(rate) records/s each asked, \(Double(written * 100 / (links * seconds)) / 100) written, \(seconds) s")
    print("written \(written), delivered \(delivered), lost \(lost), duplicates \(subscriber.duplicates), subscriber reconnects \(subscriber.reconnects)")
    print("latency log-to-subscriber p50 \(p(0.5)) ms, p99 \(p(0.99)) ms, max \(p(1.0)) ms; drained in \(drainMilliseconds) ms")
    print(
      "memory: \(rssStart) KiB before, \(rssLinks) KiB with links started, \(rssEnd) KiB at the end: "
        + "\((rssEnd - rssStart) / links) KiB per link (its thread, SQLite connection, MQTT client)")
    return lost == 0 ? 0 : 1
  }
}
