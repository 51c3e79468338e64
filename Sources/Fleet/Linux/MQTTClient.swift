import CMosquitto
import Glibc
import ScanCore
import ScanPlatform

/// A received MQTT message (a copy: the client's queue no longer holds it).
public struct MQTTMessage: Sendable {
  public var topic: String
  public var payload: [UInt8]
  public var qos: Int
  /// Set by the broker on a message it kept for new subscribers: never a live command.
  public var retained: Bool
}

/// Why an MQTT call failed: libmosquitto's code and its text.
public struct MQTTError: Error, Sendable, CustomStringConvertible {
  public var code: Int32
  public var operation: String
  public var description: String { "\(operation): \(String(cString: sg_mqtt_strerror(code)))" }
}

/// One MQTT connection through libmosquitto (C shim `CMosquitto`), driven by the thread that
/// owns it: `loop` runs the network, then `takeAck` and `takeMessage` drain what arrived. Not
/// shared between threads. Each connection attempt is a new client.
public final class MQTTClient {
  fileprivate let handle: OpaquePointer
  public let protocolVersion: Int

  /// A client named `clientID`; messages over `messageBytesMax` are dropped unread, and a
  /// packet much larger is never buffered whole: under MQTT 5 the broker is told not to send
  /// one (Maximum Packet Size on CONNECT), and under either protocol a connection on which more
  /// than a packet's worth arrives without a whole packet is dropped (`oversizeDrops`).
  public init(
    clientID: String, protocolVersion: Int, messageBytesMax: Int, messagesMax: Int = 64, cleanSession: Bool = true
  ) throws(MQTTError) {
    guard let h = sg_mqtt_new(clientID, Int32(protocolVersion), messageBytesMax, Int32(messagesMax), cleanSession ? 1 : 0) else {
      throw MQTTError(code: 1, operation: "mosquitto_new")  // MOSQ_ERR_NOMEM
    }
    handle = h
    self.protocolVersion = protocolVersion
  }

  deinit { sg_mqtt_free(handle) }

  private func check(_ rc: Int32, _ operation: String) throws(MQTTError) {
    if rc != 0 { throw MQTTError(code: rc, operation: operation) }
  }

  /// The largest TLS file (CA bundle, certificate, key) accepted.
  public static let tlsFileBytesMax = 1 << 20

  /// TLS: the CA verifies the broker (certificate and host name); cert and key, when given,
  /// identify this reader. libmosquitto takes paths and opens them blocking (here, and again
  /// when it connects): each is first opened here without blocking and refused unless it is a
  /// regular file (`openRegularFile`), so a FIFO at one of them cannot stall the fleet thread
  /// or its stop.
  public func useTLS(caFile: String, certFile: String, keyFile: String) throws(MQTTError) {
    for path in [caFile, certFile, keyFile] where !path.isEmpty {
      do {
        let (fd, _) = try openRegularFile(path, maxBytes: Self.tlsFileBytesMax)
        closeDescriptor(fd)
      } catch {
        throw MQTTError(code: 8, operation: "TLS setup: \(error)")  // MOSQ_ERR_TLS
      }
    }
    try check(sg_mqtt_tls(handle, caFile, certFile, keyFile), "TLS setup")
  }

  public func setWill(topic: String, payload: [UInt8], retain: Bool) throws(MQTTError) {
    try check(payload.withUnsafeBytes { sg_mqtt_will(handle, topic, $0.baseAddress, Int32($0.count), retain ? 1 : 0) }, "will")
  }

  public func setCredentials(username: String, password: String) throws(MQTTError) {
    try check(sg_mqtt_credentials(handle, username, password), "credentials")
  }

  /// Starts connecting (non-blocking; `loop` completes it, `state` tells).
  public func connect(host: String, port: Int, keepaliveSeconds: Int) throws(MQTTError) {
    try check(sg_mqtt_connect(handle, host, Int32(port), Int32(keepaliveSeconds)), "connect \(host):\(port)")
  }

  /// Runs the network for at most `timeoutMilliseconds`; returns libmosquitto's code (0: fine).
  @discardableResult
  public func loop(timeoutMilliseconds: Int) -> Int32 { sg_mqtt_loop(handle, Int32(timeoutMilliseconds)) }

  public enum State: Sendable, Equatable { case connecting, connected, refused, lost }
  public var state: State {
    switch sg_mqtt_state(handle) {
    case Int32(SG_MQTT_CONNECTED): .connected
    case Int32(SG_MQTT_REFUSED): .refused
    case Int32(SG_MQTT_LOST): .lost
    default: .connecting
    }
  }
  /// The CONNACK's code or the disconnect's reason.
  public var reason: Int32 { sg_mqtt_reason(handle) }
  /// The broker's words for a refused connection.
  public var refusalText: String { String(cString: sg_mqtt_connack_string(reason, Int32(protocolVersion))) }

  /// Publishes; returns the message id whose acknowledgement `takeAck` reports (QoS 1).
  public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: Int, retain: Bool) throws(MQTTError) -> Int32 {
    var mid: Int32 = 0
    try check(sg_mqtt_publish(handle, topic, payload.baseAddress, Int32(payload.count), Int32(qos), retain ? 1 : 0, &mid), "publish")
    return mid
  }

  public func publish(topic: String, _ payload: [UInt8], qos: Int, retain: Bool) throws(MQTTError) -> Int32 {
    var mid: Int32 = 0
    let rc = payload.withUnsafeBytes { bytes in
      sg_mqtt_publish(handle, topic, bytes.baseAddress, Int32(bytes.count), Int32(qos), retain ? 1 : 0, &mid)
    }
    try check(rc, "publish")
    return mid
  }

  public func subscribe(_ topic: String, qos: Int) throws(MQTTError) {
    try check(sg_mqtt_subscribe(handle, topic, Int32(qos)), "subscribe \(topic)")
  }

  /// The next acknowledged publish: its id, and whether the broker accepted it (MQTT 5 reason
  /// codes of 128 and above refuse it).
  public func takeAck() -> (mid: Int32, accepted: Bool)? {
    var mid: Int32 = 0, reason: Int32 = 0
    guard sg_mqtt_take_ack(handle, &mid, &reason) == 1 else { return nil }
    return (mid, reason < 128)
  }

  public func takeMessage() -> MQTTMessage? {
    guard let m = sg_mqtt_take_message(handle) else { return nil }
    defer { sg_mqtt_message_free(m) }
    let p = m.pointee
    let payload = p.payload_len > 0 ? Array(UnsafeBufferPointer(start: p.payload, count: Int(p.payload_len))) : []
    return MQTTMessage(topic: String(cString: p.topic), payload: payload, qos: Int(p.qos), retained: p.retain != 0)
  }

  public var droppedMessages: UInt { UInt(sg_mqtt_dropped_messages(handle)) }
  /// The largest packet this client takes (`messageBytesMax` plus room for headers and topic).
  /// Under MQTT 5 the CONNECT says so (Maximum Packet Size) and the broker sends nothing larger.
  public var packetBytesMax: Int { Int(sg_mqtt_packet_bytes_max(handle)) }
  /// Connections dropped because a larger packet was arriving (MQTT 3.1.1, or a broker that
  /// ignores Maximum Packet Size): what libmosquitto had buffered of it goes with the client.
  public var oversizeDrops: UInt { UInt(sg_mqtt_oversize_drops(handle)) }
}

extension MQTTClient {
  /// Says goodbye (DISCONNECT): the broker drops the will.
  public func disconnect() { _ = sg_mqtt_disconnect(handle) }
}
