import ScanAudit
import ScanBase
import ScanFleet
import Testing

@Suite struct FleetMessagesTests {
  // MARK: Bundles

  @Test("a bundle parses into its reader, version and files, binary bytes kept exactly")
  func bundleParses() throws {
    let bytes =
      Array("scangate-bundle 1\nreader door-1\nversion 7\nfile allow-list 14\ntext:A\ntext:B\nfile revocation 3\n".utf8)
      + [0x00, 0x0A, 0xFF]
    let b = try FleetBundle.parse(bytes).get()
    #expect(b.reader == "door-1")
    #expect(b.version == 7)
    #expect(b.files.map(\.name) == ["allow-list", "revocation"])
    #expect(b.files[0].bytes == Array("text:A\ntext:B\n".utf8))
    #expect(b.files[1].bytes == [0x00, 0x0A, 0xFF])
  }

  @Test(
    "a bundle that is not exactly the form is refused whole",
    arguments: [
      "scangate-bundle 2\nreader *\nversion 1\nfile allow-list 0\n",
      "scangate-bundle 1\nreader *\nversion 0\nfile allow-list 0\n",
      "scangate-bundle 1\nreader *\nversion -3\nfile allow-list 0\n",
      "scangate-bundle 1\nreader *\nversion 1\n",
      "scangate-bundle 1\nreader *\nversion 1\nfile passwd 0\n",
      "scangate-bundle 1\nreader *\nversion 1\nfile allow-list 10\nshort",
      "scangate-bundle 1\nreader *\nversion 1\nfile allow-list 0\nfile allow-list 0\n",
      "scangate-bundle 1\nversion 1\nfile allow-list 0\n",
      "",
    ])
  func bundleRefused(_ text: String) {
    if case .success = FleetBundle.parse(Array(text.utf8)) { Issue.record("accepted: \(text.debugDescription)") }
  }

  @Test("a bundle's payload form parses back to the same bundle")
  func bundleRoundTrip() throws {
    let b = FleetBundle(reader: "*", version: 42, files: [("allow-list", Array("text:X label=x\n".utf8))])
    #expect(String(decoding: b.bytes, as: UTF8.self) == "scangate-bundle 1\nreader *\nversion 42\nfile allow-list 15\ntext:X label=x\n")
    #expect(try FleetBundle.parse(b.bytes).get() == b)
  }

  // MARK: Commands and nonces

  @Test("a command parses; an open may carry its pulse")
  func commandParses() throws {
    let c = try FleetCommand.parse(
      Array("scangate-command 1\nreader door-1\ncommand open\nnonce 0123456789abcdef\nexpires 1000\npulse_ms 700\n".utf8)
    ).get()
    #expect(c == FleetCommand(reader: "door-1", action: .open, nonce: "0123456789abcdef", expiresUnixSeconds: 1000, pulseMilliseconds: 700))
    if case .success = FleetCommand.parse(Array("scangate-command 1\nreader d\ncommand status\nnonce 0123456789abcdef\nexpires 1\npulse_ms 7\n".utf8)) {
      Issue.record("a pulse on a status command was accepted")
    }
    if case .success = FleetCommand.parse(Array("scangate-command 1\nreader d\ncommand open\nnonce 0123\nexpires 1\n".utf8)) {
      Issue.record("a short nonce was accepted")
    }
  }

  @Test("the ledger refuses a replayed nonce, an expired command and one that expires too far ahead")
  func ledger() {
    var ledger = NonceLedger(capacity: 2)
    func command(_ nonce: String, _ expires: Int64) -> FleetCommand {
      FleetCommand(reader: "r", action: .status, nonce: nonce, expiresUnixSeconds: expires)
    }
    #expect(ledger.admit(command("aaaaaaaaaaaaaaaa", 1_100), now: 1_000) == nil)
    #expect(ledger.admit(command("aaaaaaaaaaaaaaaa", 1_100), now: 1_001)?.reason == "replayed (nonce already used)")
    #expect(ledger.admit(command("bbbbbbbbbbbbbbbb", 999), now: 1_000)?.reason == "expired 1 s ago")
    #expect(ledger.admit(command("cccccccccccccccc", 1_301), now: 1_000) != nil)
    #expect(ledger.admit(command("dddddddddddddddd", 1_050), now: 1_000) == nil)
    #expect(ledger.admit(command("eeeeeeeeeeeeeeee", 1_050), now: 1_000)?.reason.hasPrefix("too many") == true)
    // Saved and loaded (a restart): the nonce is still refused until it expires.
    var reloaded = NonceLedger(capacity: 4)
    reloaded.load(ledger.text)
    #expect(reloaded.admit(command("aaaaaaaaaaaaaaaa", 1_100), now: 1_002) != nil)
    #expect(reloaded.admit(command("aaaaaaaaaaaaaaaa", 1_200), now: 1_101) == nil)
  }

  // MARK: Wire forms

  @Test("JSON strings escape quotes, backslashes and control characters (RFC 8259)")
  func jsonEscaping() {
    #expect(JSONObject.string("a\"b\\c\nd\u{01}é") == #""a\"b\\c\nd\u0001é""#)
    var o = JSONObject()
    o.add("s", "x")
    o.add("n", Int64(-5))
    o.add("b", true)
    #expect(o.json == #"{"s":"x","n":-5,"b":true}"#)
  }

  @Test("an audit record's event message carries the reader id and its sequence")
  func eventMessage() {
    let r = AuditRecord(
      sequence: 12, run: 3, eventSequence: 40, wallNanoseconds: 1_700_000_000_123_456_789, kind: .decision, verdict: .granted,
      format: "qr", label: "front \"desk\"")
    let text = String(decoding: r.fleetJSON(readerID: "door-1"), as: UTF8.self)
    #expect(
      text.hasPrefix(
        #"{"reader":"door-1","seq":12,"run":3,"event":40,"time":"2023-11-14T22:13:20Z","time_ns":1700000000123456789,"kind":"decision","verdict":"granted""#))
    #expect(text.contains(#""label":"front \"desk\"""#))
  }

  @Test("an event message names the payload by its keyed tag; a SHA-256 left in an older log is never published")
  func eventMessageTag() {
    var r = AuditRecord(
      sequence: 1, run: 1, eventSequence: 1, wallNanoseconds: 0, kind: .decision, verdict: .granted, format: "qr",
      tag: "0f1e2d3c4b5a6978")
    var text = String(decoding: r.fleetJSON(readerID: "door-1"), as: UTF8.self)
    #expect(text.contains(#""tag":"0f1e2d3c4b5a6978""#), "\(text)")
    #expect(!text.contains("sha256"))
    // SHA-256("abc") (FIPS 180-2's vector), as a record of a log written before tags holds it.
    r.tag = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    text = String(decoding: r.fleetJSON(readerID: "door-1"), as: UTF8.self)
    #expect(!text.contains("ba7816bf") && !text.contains("sha256") && !text.contains(#""tag""#), "\(text)")
  }

  @Test("broker URLs: scheme, host, port, IPv6")
  func brokerAddress() {
    #expect(BrokerAddress("mqtts://broker.site") == BrokerAddress(host: "broker.site", port: 8883, tls: true))
    #expect(BrokerAddress("mqtt://10.0.0.2:1884")?.port == 1884)
    #expect(BrokerAddress("mqtt://[::1]:1883")?.host == "::1")
    #expect(BrokerAddress("http://x") == nil)
    #expect(BrokerAddress("mqtt://x:0") == nil)
    #expect(BrokerAddress("mqtt://") == nil)
  }
}

/// Home Assistant discovery for a turnstile reader: the keys Home Assistant's MQTT integration
/// documents for a sensor and a binary sensor, written out here by hand.
@Suite struct TurnstileDiscoveryTests {
  @Test("an occupancy sensor and the fire and lockdown binary sensors join the reader's device")
  func occupancyAndEmergency() throws {
    var settings = FleetSettings()
    settings.readerID = "gate-1"
    settings.homeAssistantPrefix = "homeassistant"
    var d = HomeAssistantDiscovery(settings: settings, version: "1.0")
    d.occupancy = true
    d.binarySensors = [("fire", "Fire release", "safety", "fire"), ("lockdown", "Lockdown", "", "lockdown")]
    let messages = Dictionary(uniqueKeysWithValues: d.messages.map { ($0.0, String(decoding: $0.1, as: UTF8.self)) })
    let occupancy = try #require(messages["homeassistant/sensor/gate-1/occupancy/config"])
    #expect(occupancy.contains(#""state_topic":"scangate/gate-1/state""#))
    #expect(occupancy.contains(#""value_template":"{{ value_json.occupancy }}""#))
    #expect(occupancy.contains(#""state_class":"measurement""#))
    #expect(occupancy.contains(#""unique_id":"scangate_gate-1_occupancy""#))
    let fire = try #require(messages["homeassistant/binary_sensor/gate-1/fire/config"])
    #expect(fire.contains(#""device_class":"safety""#) && fire.contains(#""payload_on":"ON""#))
    let lockdown = try #require(messages["homeassistant/binary_sensor/gate-1/lockdown/config"])
    #expect(!lockdown.contains("device_class"))
  }
}

/// The fleet's turnstile and lockdown commands, parsed strictly.
@Suite struct TurnstileCommandParseTests {
  func parse(_ text: String) -> FleetCommand? {
    if case .success(let c) = FleetCommand.parse(Array(text.utf8)) { return c }
    return nil
  }
  let head = "scangate-command 1\nreader gate-1\n"
  let tail = "nonce 0123456789abcdef\nexpires 100\n"

  @Test("lockdown-on/-off and occupancy-reset take no argument; passback-forgive needs exactly one tag line")
  func forms() {
    #expect(parse(head + "command lockdown-on\n" + tail)?.action == .lockdownOn)
    #expect(parse(head + "command lockdown-off\n" + tail)?.action == .lockdownOff)
    #expect(parse(head + "command occupancy-reset\n" + tail)?.action == .occupancyReset)
    #expect(parse(head + "command lockdown-on\n" + tail + "tag 7fb7666e5481daa1\n") == nil)
    let forgive = parse(head + "command passback-forgive\n" + tail + "tag 7fb7666e5481daa1\n")
    #expect(forgive?.tag == 0x7fb7_666e_5481_daa1)
    #expect(forgive.map { String(decoding: $0.bytes, as: UTF8.self) } == head + "command passback-forgive\n" + tail + "tag 7fb7666e5481daa1\n")
    #expect(parse(head + "command passback-forgive\n" + tail) == nil)
    #expect(parse(head + "command passback-forgive\n" + tail + "tag 7FB7666E5481DAA1\n") == nil)
    #expect(parse(head + "command passback-forgive\n" + tail + "tag 7fb7666e5481daa\n") == nil)
    #expect(parse(head + "command passback-forgive\n" + tail + "tag 7fb7666e5481daa1\nextra 1\n") == nil)
    #expect(parse(head + "command passback-forgive\n" + tail + "tag +fb7666e5481daa1\n") == nil)
  }
}
