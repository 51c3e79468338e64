/// Home Assistant MQTT discovery for one reader: retained config messages under the
/// discovery prefix (`<prefix>/<component>/<reader id>/<object>/config`) that make the reader
/// a device with a lock (OPEN), a last-decision sensor and a frame-rate sensor, all available
/// while the reader's status topic says "online" (the last will says "offline").
///
/// Door contact and tamper binary sensors join through `binarySensors` when the reader has
/// door inputs: each names its object id, its device class and the state JSON key it reads.
public struct HomeAssistantDiscovery: Sendable {
  public let settings: FleetSettings
  public let version: String
  /// Binary sensors from the door inputs (contact, tamper): (object id, name, device class,
  /// state key holding "ON"/"OFF"). Empty until door inputs are configured.
  public var binarySensors: [(object: String, name: String, deviceClass: String, stateKey: String)] = []
  /// A turnstile's occupancy sensor (people in its area).
  public var occupancy = false

  public init(settings: FleetSettings, version: String) {
    self.settings = settings
    self.version = version
  }

  var topics: FleetTopics { FleetTopics(prefix: settings.topicPrefix, readerID: settings.readerID) }

  func configTopic(_ component: String, _ object: String) -> String {
    "\(settings.homeAssistantPrefix)/\(component)/\(settings.readerID)/\(object)/config"
  }

  /// The shared part of every entity: device, availability, unique id.
  func common(_ object: String, name: String, into o: inout JSONObject) {
    o.add("name", name)
    o.add("unique_id", "scangate_\(settings.readerID)_\(object)")
    o.add("object_id", "scangate_\(settings.readerID)_\(object)")
    o.add("availability_topic", topics.status)
    o.add("payload_available", "online")
    o.add("payload_not_available", "offline")
    var device = JSONObject()
    device.add("identifiers", raw: "[" + JSONObject.string("scangate_" + settings.readerID) + "]")
    device.add("name", "ScanGate " + settings.readerID)
    device.add("manufacturer", "ScanGate")
    device.add("model", "QR door reader")
    device.add("sw_version", version)
    o.add("device", raw: device.json)
  }

  /// (topic, retained payload) for every entity.
  public var messages: [(String, [UInt8])] {
    var out: [(String, [UInt8])] = []
    var lock = JSONObject()
    common("door", name: "Door", into: &lock)
    lock.add("command_topic", topics.lockSet)
    lock.add("payload_open", "OPEN")
    lock.add("payload_lock", "LOCK")
    lock.add("payload_unlock", "UNLOCK")
    lock.add("state_topic", topics.state)
    lock.add("value_template", "{{ value_json.lock }}")
    lock.add("state_locked", "LOCKED")
    lock.add("state_unlocked", "UNLOCKED")
    out.append((configTopic("lock", "door"), lock.bytes))

    var decision = JSONObject()
    common("last_decision", name: "Last decision", into: &decision)
    decision.add("state_topic", topics.state)
    decision.add("value_template", "{{ value_json.last_decision }}")
    decision.add("icon", "mdi:qrcode-scan")
    out.append((configTopic("sensor", "last_decision"), decision.bytes))

    var fps = JSONObject()
    common("fps", name: "Frame rate", into: &fps)
    fps.add("state_topic", topics.state)
    fps.add("value_template", "{{ value_json.fps }}")
    fps.add("unit_of_measurement", "fps")
    fps.add("state_class", "measurement")
    fps.add("entity_category", "diagnostic")
    out.append((configTopic("sensor", "fps"), fps.bytes))

    for sensor in binarySensors {
      var b = JSONObject()
      common(sensor.object, name: sensor.name, into: &b)
      b.add("state_topic", topics.state)
      b.add("value_template", "{{ value_json.\(sensor.stateKey) }}")
      if !sensor.deviceClass.isEmpty { b.add("device_class", sensor.deviceClass) }
      b.add("payload_on", "ON")
      b.add("payload_off", "OFF")
      out.append((configTopic("binary_sensor", sensor.object), b.bytes))
    }
    if occupancy {
      var o = JSONObject()
      common("occupancy", name: "Occupancy", into: &o)
      o.add("state_topic", topics.state)
      o.add("value_template", "{{ value_json.occupancy }}")
      o.add("unit_of_measurement", "people")
      o.add("state_class", "measurement")
      o.add("icon", "mdi:account-group")
      out.append((configTopic("sensor", "occupancy"), o.bytes))
    }
    return out
  }
}
