import ScanAudit
import ScanBase
import ScanFleet
import Testing

/// A JSON value as a strict reader sees it (RFC 8259): the discovery payloads and event messages
/// are read back whole, not searched as text, so a payload that is not JSON, or holds a key twice,
/// fails here as it would in Home Assistant.
indirect enum JSONValue: Equatable {
  case object([(String, JSONValue)])
  case array([JSONValue])
  case string(String)
  case number(String)
  case bool(Bool)
  case null

  static func == (a: JSONValue, b: JSONValue) -> Bool {
    switch (a, b) {
    case (.object(let x), .object(let y)): x.map(\.0) == y.map(\.0) && zip(x, y).allSatisfy { $0.1 == $1.1 }
    case (.array(let x), .array(let y)): x == y
    case (.string(let x), .string(let y)): x == y
    case (.number(let x), .number(let y)): x == y
    case (.bool(let x), .bool(let y)): x == y
    case (.null, .null): true
    default: false
    }
  }

  subscript(_ key: String) -> JSONValue? {
    if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
    return nil
  }
  var keys: [String] { if case .object(let m) = self { m.map(\.0) } else { [] } }
  var string: String? { if case .string(let s) = self { s } else { nil } }
  var strings: [String]? {
    guard case .array(let items) = self else { return nil }
    let s = items.compactMap(\.string)
    return s.count == items.count ? s : nil
  }

  /// The whole of `bytes` as one value, or nil (trailing bytes, duplicate keys, bad escapes).
  static func parse(_ bytes: [UInt8]) -> JSONValue? {
    var r = Reader(bytes: bytes)
    guard let v = r.value() else { return nil }
    r.space()
    return r.at == bytes.count ? v : nil
  }

  struct Reader {
    let bytes: [UInt8]
    var at = 0
    mutating func space() { while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 } }
    mutating func eat(_ text: String) -> Bool {
      let t = Array(text.utf8)
      guard bytes.count - at >= t.count, Array(bytes[at..<at + t.count]) == t else { return false }
      at += t.count
      return true
    }
    mutating func value() -> JSONValue? {
      space()
      guard at < bytes.count else { return nil }
      switch bytes[at] {
      case UInt8(ascii: "{"):
        at += 1
        var members: [(String, JSONValue)] = []
        space()
        if eat("}") { return .object(members) }
        repeat {
          space()
          guard let k = string(), !members.contains(where: { $0.0 == k }) else { return nil }
          space()
          guard eat(":"), let v = value() else { return nil }
          members.append((k, v))
          space()
        } while eat(",")
        return eat("}") ? .object(members) : nil
      case UInt8(ascii: "["):
        at += 1
        var items: [JSONValue] = []
        space()
        if eat("]") { return .array(items) }
        repeat {
          guard let v = value() else { return nil }
          items.append(v)
          space()
        } while eat(",")
        return eat("]") ? .array(items) : nil
      case UInt8(ascii: "\""): return string().map { .string($0) }
      case UInt8(ascii: "t"): return eat("true") ? .bool(true) : nil
      case UInt8(ascii: "f"): return eat("false") ? .bool(false) : nil
      case UInt8(ascii: "n"): return eat("null") ? .null : nil
      default:
        let start = at
        while at < bytes.count, Array("-+.eE0123456789".utf8).contains(bytes[at]) { at += 1 }
        return at > start ? .number(String(decoding: bytes[start..<at], as: UTF8.self)) : nil
      }
    }
    mutating func string() -> String? {
      guard eat("\"") else { return nil }
      var out: [UInt8] = []
      while at < bytes.count {
        let b = bytes[at]
        at += 1
        switch b {
        case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
        case UInt8(ascii: "\\"):
          guard at < bytes.count else { return nil }
          let e = bytes[at]
          at += 1
          switch e {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
          case UInt8(ascii: "n"): out.append(0x0A)
          case UInt8(ascii: "r"): out.append(0x0D)
          case UInt8(ascii: "t"): out.append(0x09)
          case UInt8(ascii: "u"):
            guard bytes.count - at >= 4, let v = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16),
              let u = Unicode.Scalar(v)
            else { return nil }
            at += 4
            out += Array(String(Character(u)).utf8)
          default: return nil
          }
        default:
          if b < 0x20 { return nil }
          out.append(b)
        }
      }
      return nil
    }
  }
}

/// Home Assistant discovery: the keys Home Assistant's MQTT integration documents for each
/// platform (sensor, binary_sensor, event: https://www.home-assistant.io/integrations/event.mqtt/),
/// written out here by hand; deploy/ha-schema.py checks what the real binary publishes.
@Suite struct HomeAssistantDiscoveryTests {
  func discovery(reader: String = "door-1") -> HomeAssistantDiscovery {
    var settings = FleetSettings()
    settings.readerID = reader
    settings.homeAssistantPrefix = "homeassistant"
    return HomeAssistantDiscovery(settings: settings, version: "1.2")
  }

  func configs(_ d: HomeAssistantDiscovery) throws -> [String: JSONValue] {
    var out: [String: JSONValue] = [:]
    for (topic, payload) in d.messages {
      out[topic] = try #require(JSONValue.parse(payload), "not JSON: \(topic)")
    }
    return out
  }

  static let common: Set<String> = [
    "name", "unique_id", "default_entity_id", "availability_topic", "payload_available", "payload_not_available", "device",
    "origin",
  ]
  static let documented: [String: Set<String>] = [
    "sensor": common.union(["state_topic", "value_template", "icon", "unit_of_measurement", "state_class", "entity_category"]),
    "binary_sensor": common.union(["state_topic", "value_template", "device_class", "payload_on", "payload_off"]),
    "event": common.union(["state_topic", "event_types", "qos", "icon"]),
    // https://www.home-assistant.io/integrations/lock.mqtt/, switch.mqtt/, button.mqtt/
    "lock": common.union([
      "command_topic", "command_template", "code_format", "state_topic", "value_template", "state_locked", "state_unlocked",
      "payload_lock", "payload_unlock", "payload_open", "qos", "retain",
    ]),
    "switch": common.union([
      "command_topic", "state_topic", "value_template", "payload_on", "payload_off", "state_on", "state_off", "icon", "qos", "retain",
    ]),
    "button": common.union(["command_topic", "payload_press", "icon", "qos", "retain"]),
  ]

  @Test("every entity is a read-only platform with its documented keys, one device, availability and a default entity id")
  func everyEntity() throws {
    var d = discovery()
    d.binarySensors = [("door_contact", "Door contact", "door", "door_contact"), ("tamper", "Tamper", "tamper", "tamper")]
    d.lock = true
    d.occupancy = true
    let all = try configs(d)
    #expect(all.count == 11)  // event, 2 sensors, 4 diagnostics, 2 binary sensors, the lock's, occupancy
    for (topic, config) in all {
      let parts = topic.split(separator: "/").map(String.init)
      #expect(parts.count == 5 && parts[0] == "homeassistant" && parts[2] == "door-1" && parts[4] == "config")
      let component = parts[1]
      let known = try #require(Self.documented[component], "no command entity, nor anything but sensor, binary_sensor, event: \(topic)")
      #expect(Set(config.keys).isSubset(of: known), "\(topic): \(Set(config.keys).subtracting(known))")
      #expect(config["object_id"] == nil, "object_id is deprecated")
      #expect(config["default_entity_id"]?.string == "\(component).scangate_door_1_\(parts[3])")
      #expect(config["unique_id"]?.string == "scangate_door-1_\(parts[3])")
      #expect(config["state_topic"]?.string != nil)
      #expect(config["availability_topic"]?.string == "scangate/door-1/status")
      #expect(config["payload_available"]?.string == "online" && config["payload_not_available"]?.string == "offline")
      let device = try #require(config["device"])
      #expect(device["identifiers"]?.strings == ["scangate_door-1"])
      #expect(device["name"]?.string == "ScanGate door-1" && device["sw_version"]?.string == "1.2")
      #expect(config["origin"]?["name"]?.string == "ScanGate" && config["origin"]?["sw_version"]?.string == "1.2")
      #expect(config["command_topic"] == nil)
    }
  }

  @Test("with the web admin page on, every entity's device links to it (configuration_url, a documented device key)")
  func configurationURL() throws {
    var d = discovery()
    #expect(try configs(d).values.allSatisfy { $0["device"]?["configuration_url"] == nil }, "no page, no link")
    d.configurationURL = "https://door-1.local:8443/"
    let all = try configs(d)
    #expect(!all.isEmpty && all.values.allSatisfy { $0["device"]?["configuration_url"]?.string == "https://door-1.local:8443/" })
  }

  @Test("the decision event entity lists every verdict's name as an event type, on the decision topic")
  func decisionEvent() throws {
    let all = try configs(discovery())
    let event = try #require(all["homeassistant/event/door-1/decision/config"])
    #expect(event["state_topic"]?.string == "scangate/door-1/decision")
    #expect(event["event_types"]?.strings == Verdict.all.map(\.name))
    #expect(event["event_types"]?.strings?.contains("denied-unknown") == true)
    #expect(event["qos"] == .number("1"))
  }

  @Test("no lock, button or any command entity; the old command lock's topic is cleared")
  func noCommands() throws {
    var d = discovery()
    d.binarySensors = [("door_contact", "Door contact", "door", "door_contact")]
    let topics = d.messages.map(\.0)
    #expect(!topics.contains { $0.contains("/lock/") || $0.contains("/button/") })
    #expect(d.retiredTopics.contains("homeassistant/lock/door-1/door/config"))
    // Optional entities not announced now are cleared; announced ones are not.
    #expect(d.retiredTopics.contains("homeassistant/binary_sensor/door-1/lock/config"))
    #expect(d.retiredTopics.contains("homeassistant/binary_sensor/door-1/tamper/config"))
    #expect(!d.retiredTopics.contains("homeassistant/binary_sensor/door-1/door_contact/config"))
    #expect(Set(d.retiredTopics).isDisjoint(with: Set(topics)))
  }

  @Test("the lock is a read-only binary sensor (device class lock) whose unknown state renders None")
  func lockIsReadOnly() throws {
    var d = discovery()
    d.lock = true
    let all = try configs(d)
    let lock = try #require(all["homeassistant/binary_sensor/door-1/lock/config"])
    #expect(lock["device_class"]?.string == "lock")
    #expect(lock["payload_on"]?.string == "UNLOCKED" && lock["payload_off"]?.string == "LOCKED")
    #expect(lock["value_template"]?.string == "{{ value_json.lock | default('None') }}")
  }

  @Test(
    "a default entity id is a valid Home Assistant entity id for any reader id",
    arguments: [
      ("door-1", "sensor.scangate_door_1_fps"), ("Gate_A", "sensor.scangate_gate_a_fps"),
      ("a--b__c", "sensor.scangate_a_b_c_fps"), ("_x-", "sensor.scangate_x_fps"),
    ])
  func entityIDs(_ reader: String, _ expected: String) {
    #expect(HomeAssistantDiscovery.defaultEntityID(component: "sensor", readerID: reader, object: "fps") == expected)
  }

  func decision(_ verdict: Verdict, label: String = "", tag: String = "", detail: String = "", payload: String = "") -> AuditRecord {
    AuditRecord(
      sequence: 41, run: 2, eventSequence: 7, wallNanoseconds: 1_796_125_702_123_456_789, kind: .decision, verdict: verdict,
      format: "qr", variant: "upright", tag: tag, label: label, payload: payload, code: 1, detail: detail)
  }

  @Test("a decision's event: its verdict as event_type, label, who decided, reader, keyed tag, sequence and time")
  func eventMessage() throws {
    let record = decision(.granted, label: "front \"desk\"", tag: "5d8a0af8f5179a2f", detail: "allow-list", payload: "SECRET-1")
    let bytes = try #require(record.homeAssistantEventJSON(readerID: "door-1"))
    let m = try #require(JSONValue.parse(bytes))
    #expect(m.keys == ["event_type", "label", "by", "reader", "tag", "seq", "time"])
    #expect(m["event_type"]?.string == "granted" && m["label"]?.string == "front \"desk\"" && m["by"]?.string == "allow-list")
    #expect(m["reader"]?.string == "door-1" && m["tag"]?.string == "5d8a0af8f5179a2f" && m["seq"] == .number("41"))
    #expect(m["time"]?.string == "2026-12-01T11:48:22Z")
    let deniedBytes = try #require(decision(.deniedUnknown).homeAssistantEventJSON(readerID: "door-1"))
    let denied = try #require(JSONValue.parse(deniedBytes))
    #expect(denied["event_type"]?.string == "denied-unknown" && denied["by"]?.string == "none" && denied["label"] == nil)
  }

  @Test("an event never carries the payload, nor a SHA-256 left in an older log; other records have no event")
  func eventNeverLeaks() throws {
    let sha = String(repeating: "ab", count: 32)
    let bytes = try #require(decision(.deniedExpired, tag: sha, payload: "SECRET-1").homeAssistantEventJSON(readerID: "door-1"))
    let text = String(decoding: bytes, as: UTF8.self)
    #expect(!text.contains("SECRET") && !text.contains("abab") && JSONValue.parse(bytes)?["tag"] == nil)
    let door = AuditRecord(sequence: 1, run: 1, eventSequence: 1, wallNanoseconds: 0, kind: .doorOpened)
    #expect(door.homeAssistantEventJSON(readerID: "door-1") == nil)
  }
}
