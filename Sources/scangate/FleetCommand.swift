import Glibc
import ScanCore
import ScanLinux

/// `scangate fleet`: tools for a site's fleet of readers on its MQTT broker.
/// - `tail`: subscribes to every reader's events, de-duplicates by (reader, seq) and reports
///   gaps (a gap is a record that never arrived; a repeat is a publish whose acknowledgement
///   was lost, and is dropped).
enum FleetToolCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard let sub = arguments.first else {
      writeStandardError("scangate fleet: tail\n")
      return 2
    }
    let rest = Array(arguments.dropFirst())
    switch sub {
    case "tail": return tail(rest)
    default:
      writeStandardError("scangate fleet: unknown tool '\(sub)'\n")
      return 2
    }
  }

  /// A client for the broker named by --broker, with --ca / --cert / --key for mqtts.
  static func connect(_ options: Options, clientID: String) -> MQTTClient? {
    guard let url = options.value("broker"), let address = BrokerAddress(url) else {
      writeStandardError("scangate fleet: --broker mqtt://HOST[:PORT] or mqtts://HOST[:PORT] is needed\n")
      return nil
    }
    do throws(MQTTError) {
      let client = try MQTTClient(clientID: clientID, protocolVersion: 5, messageBytesMax: 1 << 20, messagesMax: 4_096)
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
