import ScanBase
import ScanFleet
import Testing

/// Home Assistant's command entities: the exact messages each entity sends (as Home Assistant's
/// MQTT lock, switch and button documentation gives their payloads and templates), the code and
/// rate limits, which brokers count as authenticated, and the discovery of only what is listed.
@Suite struct HomeAssistantCommandsTests {
  func parse(_ c: HomeAssistantCommand, _ text: String) -> HomeAssistantRequest? {
    guard case .success(let r) = HomeAssistantRequest.parse(c, Array(text.utf8)) else { return nil }
    return r.0
  }

  @Test("each entity's own payloads, and nothing else, are commands")
  func payloads() {
    #expect(parse(.open, "UNLOCK") == .open && parse(.open, "OPEN") == .open && parse(.open, "LOCK") == .lock)
    #expect(parse(.lockdown, "ON") == .lockdown(on: true) && parse(.lockdown, "OFF") == .lockdown(on: false))
    #expect(parse(.passbackForgive, "PRESS") == .forgiveLast && parse(.occupancyReset, "PRESS") == .occupancyReset)
    for bad in ["", "unlock", "UNLOCK ", "UNLOCK 12a4", "UNLOCK 1234 5", "ON", "UNLOCK\n", "PRESS", String(repeating: "9", count: 70)] {
      #expect(parse(.open, bad) == nil, "\(bad)")
    }
    #expect(parse(.lockdown, "ON 1234") == nil && parse(.lockdown, "PRESS") == nil && parse(.occupancyReset, "ON") == nil)
    guard case .success(let r) = HomeAssistantRequest.parse(.open, Array("UNLOCK 2468".utf8)) else {
      Issue.record("the lock's templated message")
      return
    }
    #expect(r.0 == .open && r.code == Array("2468".utf8))
  }

  @Test("the code: 4 to 12 digits from its file; compared whole")
  func code() throws {
    #expect(HomeAssistantCode(fileBytes: Array("123".utf8)) == nil)
    #expect(HomeAssistantCode(fileBytes: Array("12a45".utf8)) == nil)
    #expect(HomeAssistantCode(fileBytes: Array("1234567890123".utf8)) == nil)
    let c = try #require(HomeAssistantCode(fileBytes: Array("24680\n".utf8)))
    #expect(c.matches(Array("24680".utf8)))
    #expect(!c.matches(Array("2468".utf8)) && !c.matches(Array("246800".utf8)) && !c.matches(Array("24681".utf8)) && !c.matches([]))
  }

  @Test("one message a second; three wrong codes refuse every code for 30 s, doubling; a right code ends it")
  func gate() throws {
    let code = try #require(HomeAssistantCode(fileBytes: Array("2468".utf8)))
    var g = HomeAssistantGate()
    var t = Instant(nanoseconds: 1_000_000_000)
    #expect(g.admit(now: t) == nil)
    #expect(g.admit(now: t.adding(milliseconds: 500)) == .tooSoon)
    #expect(g.admit(now: t.adding(milliseconds: 1_500)) == nil)  // a second after the refused one
    #expect(g.check([], against: code, now: t) == .codeNeeded)
    #expect(g.check(Array("1111".utf8), against: code, now: t) == .wrongCode(lockedForSeconds: 0))
    #expect(g.check(Array("1111".utf8), against: code, now: t) == .wrongCode(lockedForSeconds: 0))
    #expect(g.check(Array("1111".utf8), against: code, now: t) == .wrongCode(lockedForSeconds: 30))
    // Locked out: even the right code is refused until the time is up.
    #expect(g.check(Array("2468".utf8), against: code, now: t.adding(milliseconds: 29_000)) == .codeLockedOut(seconds: 1))
    t = t.adding(milliseconds: 30_000)
    #expect(g.check(Array("1111".utf8), against: code, now: t) == .wrongCode(lockedForSeconds: 60))
    t = t.adding(milliseconds: 60_000)
    #expect(g.check(Array("2468".utf8), against: code, now: t) == nil && g.wrongInARow == 0)
    #expect(g.check(Array("1111".utf8), against: code, now: t) == .wrongCode(lockedForSeconds: 0))
    // No code configured: anything passes.
    #expect(g.check([], against: nil, now: t) == nil)
  }

  @Test("authenticated brokers: TLS with a CA and a client certificate or a password, or this host's loopback")
  func authenticated() throws {
    var s = FleetSettings()
    let plain = try #require(BrokerAddress("mqtt://10.0.0.2"))
    let tls = try #require(BrokerAddress("mqtts://broker.example:8883"))
    #expect(!s.isAuthenticated(plain) && !s.isAuthenticated(tls))
    s.tlsCAFile = "/etc/scangate/ca.crt"
    #expect(!s.isAuthenticated(tls))  // TLS, but the broker does not know who this reader is
    s.username = "door-1"
    s.passwordFile = "/etc/scangate/mqtt-password"
    #expect(s.isAuthenticated(tls) && !s.isAuthenticated(plain))
    s = FleetSettings()
    s.tlsCAFile = "ca"
    s.tlsCertFile = "cert"
    s.tlsKeyFile = "key"
    #expect(s.isAuthenticated(tls))
    for local in ["mqtt://127.0.0.1", "mqtt://127.1.2.3:1884", "mqtt://localhost", "mqtt://[::1]:1883"] {
      #expect(try #require(BrokerAddress(local)).isLoopback, "\(local)")
    }
    for remote in ["mqtt://127.0.0.1.example.net", "mqtt://1270.0.0.1", "mqtt://127.0.0", "mqtt://128.0.0.1", "mqtt://127.0.0.256"] {
      #expect(try #require(BrokerAddress(remote)).isLoopback == false, "\(remote)")
    }
  }

  func discovery(_ commands: [HomeAssistantCommand], code: Bool = false) throws -> [String: JSONValue] {
    var settings = FleetSettings()
    settings.readerID = "door-1"
    var d = HomeAssistantDiscovery(settings: settings, version: "1.2")
    d.binarySensors = [("fire", "Fire release", "safety", "fire"), ("lockdown", "Lockdown", "", "lockdown")]
    d.commands = commands
    d.codeRequired = code
    var out: [String: JSONValue] = [:]
    for (topic, payload) in d.messages { out[topic] = try #require(JSONValue.parse(payload)) }
    for topic in d.retiredTopics { #expect(out[topic] == nil, "\(topic) both announced and cleared") }
    return out
  }

  @Test("only the listed commands are announced, each on its own command topic with the payloads the reader takes")
  func discoveryOfCommands() throws {
    let none = try discovery([])
    #expect(!none.values.contains { $0["command_topic"] != nil })
    #expect(none["homeassistant/binary_sensor/door-1/lockdown/config"] != nil)

    let all = try discovery([.open, .lockdown, .passbackForgive, .occupancyReset], code: true)
    let lock = try #require(all["homeassistant/lock/door-1/strike/config"])
    #expect(lock["command_topic"]?.string == "scangate/door-1/ha/open")
    #expect(lock["payload_unlock"]?.string == "UNLOCK" && lock["payload_open"]?.string == "OPEN" && lock["payload_lock"]?.string == "LOCK")
    #expect(lock["code_format"]?.string == #"^\d{4,12}$"# && lock["command_template"]?.string == "{{ value }} {{ code }}")
    #expect(lock["value_template"]?.string == "{{ value_json.strike | default('None') }}")
    let sw = try #require(all["homeassistant/switch/door-1/lockdown/config"])
    #expect(sw["command_topic"]?.string == "scangate/door-1/ha/lockdown" && sw["payload_on"]?.string == "ON")
    // The switch replaces the read-only lockdown sensor.
    #expect(all["homeassistant/binary_sensor/door-1/lockdown/config"] == nil)
    #expect(all["homeassistant/button/door-1/passback_forgive/config"]?["command_topic"]?.string == "scangate/door-1/ha/passback-forgive")
    #expect(all["homeassistant/button/door-1/occupancy_reset/config"]?["payload_press"]?.string == "PRESS")
    for config in all.values where config["command_topic"] != nil {
      #expect(config["retain"] == .bool(false) && config["qos"] == .number("1"))
    }
    let noCode = try discovery([.open])
    #expect(noCode["homeassistant/lock/door-1/strike/config"]?["code_format"] == nil)
    #expect(noCode["homeassistant/switch/door-1/lockdown/config"] == nil)
  }
}
