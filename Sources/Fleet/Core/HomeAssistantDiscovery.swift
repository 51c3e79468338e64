import ScanAudit
import ScanBase

/// Home Assistant MQTT discovery for one reader: retained config messages under the
/// discovery prefix (`<prefix>/<component>/<reader id>/<object>/config`) that make the reader
/// a device whose entities report only what the reader knows, all available while the reader's
/// status topic says "online" (the last will says "offline"):
/// - `event` "Decision": one event per decision (`event_types` = every verdict's name), its
///   message published by the link on the `decision` topic as each decision record goes out
///   (`AuditRecord.homeAssistantEventJSON`);
/// - `sensor` "Last decision" (the verdict of the last decision published since the link
///   started) and "Frame rate";
/// - `binary_sensor`s from the door inputs, the emergency inputs and, with a door contact, the
///   lock (device class `lock`: on = unlocked), each reading one key of the state topic, unknown
///   until the reader knows it;
/// - with a turnstile, an "Occupancy" sensor.
///
/// - diagnostic sensors: decoder restarts, the audit log's fault, the fleet backlog, the space
///   left for the log;
/// - the command entities `fleet.home_assistant_commands` lists, and only those
///   (`HomeAssistantCommand`): a `lock` "Door" (asking for the code when one is configured), a
///   `switch` "Lockdown" (in place of the lockdown binary sensor), `button`s to forgive
///   anti-passback and to reset occupancy. Every message names its origin (ScanGate, version).
public struct HomeAssistantDiscovery: Sendable {
  public let settings: FleetSettings
  public let version: String
  /// Binary sensors from the door inputs (contact, tamper) and the emergency inputs (fire,
  /// lockdown): (object id, name, device class, state key holding "ON"/"OFF").
  public var binarySensors: [(object: String, name: String, deviceClass: String, stateKey: String)] = []
  /// A turnstile's occupancy sensor (people in its area).
  public var occupancy = false
  /// The lock as a read-only binary sensor: only with a door contact, whose state it needs to
  /// say "locked" (the strike engaged and the door closed).
  public var lock = false
  /// The command entities to announce, and whether the door's lock asks for a code.
  public var commands: [HomeAssistantCommand] = []
  public var codeRequired = false
  /// The web admin page (`[admin] listen`), Home Assistant's "Visit" link on the device.
  public var configurationURL: String? = nil

  /// The optional entities a reader may announce: a config topic of one of them not announced
  /// now is cleared (an empty retained message removes the entity from Home Assistant), and so
  /// is the command lock earlier versions announced.
  static let optionalBinarySensors = ["door_contact", "tamper", "fire", "lockdown", "lock"]

  /// Each command's entity: (component, object id).
  static func entity(_ command: HomeAssistantCommand) -> (component: String, object: String) {
    switch command {
    case .open: ("lock", "strike")
    case .lockdown: ("switch", "lockdown")
    case .passbackForgive: ("button", "passback_forgive")
    case .occupancyReset: ("button", "occupancy_reset")
    }
  }

  public init(settings: FleetSettings, version: String) {
    self.settings = settings
    self.version = version
  }

  var topics: FleetTopics { FleetTopics(prefix: settings.topicPrefix, readerID: settings.readerID) }

  func configTopic(_ component: String, _ object: String) -> String {
    "\(settings.homeAssistantPrefix)/\(component)/\(settings.readerID)/\(object)/config"
  }

  /// `<component>.scangate_<reader>_<object>` in the form Home Assistant accepts for an entity
  /// id: lower-case letters, digits and single underscores inside (a reader id may hold '-'
  /// and capitals).
  public static func defaultEntityID(component: String, readerID: String, object: String) -> String {
    var slug: [UInt8] = []
    for b in "scangate_\(readerID)_\(object)".utf8 {
      let lower = (b >= 0x41 && b <= 0x5A) ? b + 0x20 : b
      if (lower >= 0x61 && lower <= 0x7A) || (lower >= 0x30 && lower <= 0x39) {
        slug.append(lower)
      } else if let last = slug.last, last != 0x5F {
        slug.append(0x5F)  // one underscore for any run of others, none leading
      }
    }
    if slug.last == 0x5F { slug.removeLast() }
    return component + "." + String(decoding: slug, as: UTF8.self)
  }

  /// The shared part of every entity: device, availability, unique id, default entity id.
  func common(_ component: String, _ object: String, name: String, into o: inout JSONObject) {
    o.add("name", name)
    o.add("unique_id", "scangate_\(settings.readerID)_\(object)")
    o.add("default_entity_id", Self.defaultEntityID(component: component, readerID: settings.readerID, object: object))
    o.add("availability_topic", topics.status)
    o.add("payload_available", "online")
    o.add("payload_not_available", "offline")
    var device = JSONObject()
    device.add("identifiers", raw: "[" + JSONObject.string("scangate_" + settings.readerID) + "]")
    device.add("name", "ScanGate " + settings.readerID)
    device.add("manufacturer", "ScanGate")
    device.add("model", "QR door reader")
    device.add("sw_version", version)
    if let configurationURL { device.add("configuration_url", configurationURL) }
    o.add("device", raw: device.json)
    var origin = JSONObject()
    origin.add("name", "ScanGate")
    origin.add("sw_version", version)
    o.add("origin", raw: origin.json)
  }

  /// A binary sensor reading `stateKey` ("ON"/"OFF", or the given payloads); the key is absent
  /// from the state topic until the reader knows it, and the template then renders "None",
  /// which Home Assistant shows as unknown.
  func binarySensor(
    _ object: String, name: String, deviceClass: String, stateKey: String, on: String = "ON", off: String = "OFF"
  ) -> (String, [UInt8]) {
    var b = JSONObject()
    common("binary_sensor", object, name: name, into: &b)
    b.add("state_topic", topics.state)
    b.add("value_template", "{{ value_json.\(stateKey) | default('None') }}")
    if !deviceClass.isEmpty { b.add("device_class", deviceClass) }
    b.add("payload_on", on)
    b.add("payload_off", off)
    return (configTopic("binary_sensor", object), b.bytes)
  }

  /// (topic, retained payload) for every entity.
  public var messages: [(String, [UInt8])] {
    var out: [(String, [UInt8])] = []
    var event = JSONObject()
    common("event", "decision", name: "Decision", into: &event)
    event.add("state_topic", topics.decision)
    event.add("event_types", raw: "[" + Verdict.all.map { JSONObject.string($0.name) }.joined(separator: ",") + "]")
    event.add("qos", 1)
    event.add("icon", "mdi:qrcode-scan")
    out.append((configTopic("event", "decision"), event.bytes))

    var decision = JSONObject()
    common("sensor", "last_decision", name: "Last decision", into: &decision)
    decision.add("state_topic", topics.state)
    decision.add("value_template", "{{ value_json.last_decision }}")
    decision.add("icon", "mdi:qrcode-scan")
    out.append((configTopic("sensor", "last_decision"), decision.bytes))

    var fps = JSONObject()
    common("sensor", "fps", name: "Frame rate", into: &fps)
    fps.add("state_topic", topics.state)
    fps.add("value_template", "{{ value_json.fps }}")
    fps.add("unit_of_measurement", "fps")
    fps.add("state_class", "measurement")
    fps.add("entity_category", "diagnostic")
    out.append((configTopic("sensor", "fps"), fps.bytes))

    out += diagnostics
    for sensor in binarySensors where !(sensor.object == "lockdown" && commands.contains(.lockdown)) {
      out.append(binarySensor(sensor.object, name: sensor.name, deviceClass: sensor.deviceClass, stateKey: sensor.stateKey))
    }
    for command in commands { out.append(commandEntity(command)) }
    if lock {
      out.append(binarySensor("lock", name: "Lock", deviceClass: "lock", stateKey: "lock", on: "UNLOCKED", off: "LOCKED"))
    }
    if occupancy {
      var o = JSONObject()
      common("sensor", "occupancy", name: "Occupancy", into: &o)
      o.add("state_topic", topics.state)
      o.add("value_template", "{{ value_json.occupancy }}")
      o.add("unit_of_measurement", "people")
      o.add("state_class", "measurement")
      o.add("icon", "mdi:account-group")
      out.append((configTopic("sensor", "occupancy"), o.bytes))
    }
    return out
  }

  /// The diagnostic sensors, each reading one key of the state topic (absent: unknown).
  var diagnostics: [(String, [UInt8])] {
    let sensors: [(object: String, name: String, key: String, unit: String?, icon: String)] = [
      ("decoder_restarts", "Decoder restarts", "decoder_restarts", nil, "mdi:restart-alert"),
      ("log_fault", "Audit log", "log_fault", nil, "mdi:database-alert"),
      ("fleet_backlog", "Fleet backlog", "fleet_backlog", "records", "mdi:tray-full"),
      ("log_disk_free", "Disk left for the log", "log_disk_free_mib", "MiB", "mdi:harddisk"),
    ]
    return sensors.map { s in
      var o = JSONObject()
      common("sensor", s.object, name: s.name, into: &o)
      o.add("state_topic", topics.state)
      o.add("value_template", "{{ value_json.\(s.key) | default('None') }}")
      if let unit = s.unit {
        o.add("unit_of_measurement", unit)
        o.add("state_class", "measurement")
      }
      o.add("entity_category", "diagnostic")
      o.add("icon", s.icon)
      return (configTopic("sensor", s.object), o.bytes)
    }
  }

  /// One command entity: its command topic (`HomeAssistantCommand.topic`), the exact payloads
  /// the reader accepts, and its state from the state topic where it has one.
  func commandEntity(_ command: HomeAssistantCommand) -> (String, [UInt8]) {
    let (component, object) = Self.entity(command)
    var o = JSONObject()
    switch command {
    case .open:
      common(component, object, name: "Door", into: &o)
      o.add("state_topic", topics.state)
      o.add("value_template", "{{ value_json.strike | default('None') }}")
      o.add("state_locked", "LOCKED")
      o.add("state_unlocked", "UNLOCKED")
      o.add("payload_lock", "LOCK")
      o.add("payload_unlock", "UNLOCK")
      o.add("payload_open", "OPEN")
      if codeRequired {
        o.add("code_format", "^\\d{4,\(HomeAssistantCode.digitsMax)}$")
        o.add("command_template", "{{ value }} {{ code }}")
      }
    case .lockdown:
      common(component, object, name: "Lockdown", into: &o)
      o.add("state_topic", topics.state)
      o.add("value_template", "{{ value_json.lockdown | default('None') }}")
      o.add("payload_on", "ON")
      o.add("payload_off", "OFF")
      o.add("state_on", "ON")
      o.add("state_off", "OFF")
      o.add("icon", "mdi:shield-lock")
    case .passbackForgive, .occupancyReset:
      let forgive = command == .passbackForgive
      common(component, object, name: forgive ? "Forgive anti-passback (last denied)" : "Reset occupancy", into: &o)
      o.add("payload_press", "PRESS")
      o.add("icon", forgive ? "mdi:account-reactivate" : "mdi:counter")
    }
    o.add("command_topic", command.topic(topics))
    o.add("qos", 1)
    o.add("retain", false)
    return (configTopic(component, object), o.bytes)
  }

  /// Config topics to clear with an empty retained message: the command lock of earlier
  /// versions, every optional entity and command entity not announced now.
  public var retiredTopics: [String] {
    var out = [configTopic("lock", "door")]
    for command in HomeAssistantCommand.allCases where !commands.contains(command) {
      let (component, object) = Self.entity(command)
      out.append(configTopic(component, object))
    }
    let lockdownSensor = binarySensors.contains { $0.object == "lockdown" } && !commands.contains(.lockdown)
    let announced = Set(binarySensors.map(\.object).filter { $0 != "lockdown" || lockdownSensor } + (lock ? ["lock"] : []))
    for object in Self.optionalBinarySensors where !announced.contains(object) {
      out.append(configTopic("binary_sensor", object))
    }
    if !occupancy { out.append(configTopic("sensor", "occupancy")) }
    return out
  }
}

extension AuditRecord {
  /// The message of Home Assistant's decision event entity (nil unless a decision): its
  /// `event_type` (the verdict's name), the entry's label, which rule decided (`by`:
  /// allow-list, credential, or none), the reader, the keyed tag, the record's sequence and
  /// time. Never the payload nor any unkeyed digest of it, whatever `log.raw_payloads` says.
  /// A turnstile's direction is not on a decision record (the passage records carry it), so it
  /// is not here either.
  public func homeAssistantEventJSON(readerID: String) -> [UInt8]? {
    guard kind == .decision, let verdict else { return nil }
    var o = JSONObject()
    o.add("event_type", verdict.name)
    if !label.isEmpty { o.add("label", label) }
    o.add("by", detail.isEmpty ? "none" : detail)
    o.add("reader", readerID)
    if tag.count == PayloadTag.shownBytes * 2 { o.add("tag", tag) }
    o.add("seq", sequence)
    o.add("time", RFC3339.format(wallNanoseconds / 1_000_000_000))
    return o.bytes
  }
}
