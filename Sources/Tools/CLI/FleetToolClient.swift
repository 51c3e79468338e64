import Glibc
import ScanCore
import ScanLinux

/// What the fleet tools (`scangate fleet tail | publish-bundle | command | bench`) share: a client
/// for the broker the options name, and an event message's reader and sequence.
public enum FleetToolClient {
  /// A client for the broker named by --broker, with --ca / --cert / --key for mqtts.
  public static func connect(_ options: Options, clientID: String, cleanSession: Bool = true) -> MQTTClient? {
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
  public static func identity(_ payload: [UInt8]) -> (String, Int64)? {
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
}
