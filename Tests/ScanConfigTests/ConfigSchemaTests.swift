import ScanCore
import Testing

@Suite struct ConfigSchemaTests {
  @Test("no entries gives the reader's defaults")
  func defaults() throws {
    let config = try ConfigSchema.build([]).get()
    #expect(config.camera.width == 640)
    #expect(config.engine.decode.formats == .qrCode)
    #expect(config.engine.decode.variantMode == .alternate)
    #expect(config.engine.actuation.relayPulseMilliseconds == 3_000)
  }

  @Test("values land where they belong")
  func values() throws {
    let config = try ConfigSchema.build([
      ConfigEntry(key: "camera.width", value: .integer(1280), line: 2),
      ConfigEntry(key: "camera.height", value: .integer(720), line: 3),
      ConfigEntry(key: "decoder.formats", value: .list([.string("qr"), .string("ean13")]), line: 4),
      ConfigEntry(key: "decoder.roi", value: .list([.integer(100), .integer(50), .integer(400), .integer(300)]), line: 5),
      ConfigEntry(key: "gpio.deny_pattern", value: .list([.integer(50), .integer(50), .integer(50)]), line: 6),
      ConfigEntry(key: "gpio.relay_active_low", value: .boolean(true), line: 7),
      ConfigEntry(key: "decoder.quiet_after_ms", value: .integer(2500), line: 8),
    ]).get()
    #expect(config.camera.width == 1280)
    #expect(config.engine.decode.quietAfterMicroseconds == 2_500_000)
    #expect(ScanConfig().engine.decode.quietAfterMicroseconds == 1_000_000, "a reader goes quiet after a second by default")
    #expect(config.engine.decode.formats == [.qrCode, .ean13])
    #expect(config.engine.decode.region == Region(x: 100, y: 50, width: 400, height: 300))
    #expect(config.engine.actuation.denyPattern == BuzzerPattern([50, 50, 50]))
    #expect(config.gpio.relayActiveLow)
  }

  @Test("every problem is reported, naming key and line, in line order")
  func errors() {
    let result = ConfigSchema.build([
      ConfigEntry(key: "camera.widht", value: .integer(640), line: 3),
      ConfigEntry(key: "camera.fps", value: .integer(500), line: 2),
      ConfigEntry(key: "gpio.relay_active_low", value: .string("yes"), line: 9),
      ConfigEntry(key: "decoder.formats", value: .list([.string("qr"), .string("bogus")]), line: 5),
      ConfigEntry(key: "gpio.relay_pulse_ms", value: .integer(20_000), line: 7),
      ConfigEntry(key: "decoder.roi", value: .list([.integer(600), .integer(0), .integer(100), .integer(100)]), line: 6),
    ])
    guard case .failure(let e) = result else { Issue.record("expected errors"); return }
    #expect(e.errors.map(\.line) == [2, 3, 5, 6, 7, 9])
    #expect(e.errors[0].key == "camera.fps" && e.errors[0].reason.contains("1...120"))
    #expect(e.errors[1].reason.contains("unknown key"))
    #expect(e.errors[4].reason.contains("exceeds gpio.relay_pulse_ms_max"))
    #expect(e.errors[5].reason.contains("true or false"))
  }

  @Test("the memory budget adds up and grows with the configuration")
  func budget() throws {
    var config = try ConfigSchema.build([]).get()
    let small = MemoryBudget(config).totalBytes
    config.engine.allowList.entriesMax = 100_000
    #expect(MemoryBudget(config).totalBytes > small)
    #expect(MemoryBudget(config).lines.allSatisfy { $0.bytes > 0 })
    // A second camera: its own driver buffers (4 × 640 × 480 × 2 bytes of YUYV by default), gray plane and MJPEG arena.
    let one = MemoryBudget(config).totalBytes
    config.camera.second = "/dev/video2"
    let frame = 640 * 480
    #expect(
      MemoryBudget(config).totalBytes - one
        == 4 * frame * config.camera.format.bufferBytesPerPixel + frame + MemoryBudget.mjpegArenaBytes(width: 640))
  }

  @Test("each domain's keys land in its own section of ScanConfig, named under that section")
  func domainFragments() throws {
    let config = try ConfigSchema.build([
      ConfigEntry(key: "door.held_open_ms", value: .integer(45_000), line: 1),
      ConfigEntry(key: "schedule.time_zone", value: .string("Europe/Paris"), line: 2),
      ConfigEntry(key: "panel.osdp_address", value: .integer(7), line: 3),
      ConfigEntry(key: "fleet.keepalive_s", value: .integer(60), line: 4),
      ConfigEntry(key: "credentials.leeway_s", value: .integer(90), line: 5),
      ConfigEntry(key: "log.retain_days", value: .integer(30), line: 6),
      ConfigEntry(key: "presence.slots", value: .integer(64), line: 7),
      ConfigEntry(key: "gpio.relay_pulse_ms", value: .integer(1_500), line: 8),
      ConfigEntry(key: "camera.focus_mm", value: .integer(250), line: 9),
      ConfigEntry(key: "camera.frame_timeout_ms", value: .integer(5_000), line: 10),
    ]).get()
    #expect(config.door.machine.heldOpenMilliseconds == 45_000)
    #expect(config.door.timeZone == "Europe/Paris")
    #expect(config.panel.osdpAddress == 7)
    #expect(config.fleet.keepaliveSeconds == 60)
    #expect(config.credentials.leewaySeconds == 90)
    #expect(config.log.retainDays == 30)
    #expect(config.engine.presenceSlots == 64)
    #expect(config.engine.actuation.relayPulseMilliseconds == 1_500)
    #expect(config.libcamera.focusMillimetres == 250)
    #expect(config.camera.supervision.frameTimeoutMilliseconds == 5_000)
    // Every fragment's keys are in the schema once, under their own sections.
    let fragments: [(sections: [String], names: [String])] = [
      (["door", "schedule"], DoorConfig.configKeys.map(\.name)), (["panel"], PanelSettings.configKeys.map(\.name)),
      (["fleet"], FleetSettings.configKeys.map(\.name)), (["credentials"], CredentialSettings.configKeys.map(\.name)),
      (["log"], AuditLogSettings.configKeys.map(\.name)), (["presence"], EngineSettings.presenceKeys.map(\.name)),
      (["emergency"], EmergencyConfig.configKeys.map(\.name)), (["turnstile"], TurnstileConfig.configKeys.map(\.name)),
    ]
    let all = ConfigSchema.keyNames
    #expect(Set(all).count == all.count, "no key is listed twice")
    for (sections, names) in fragments {
      #expect(!names.isEmpty)
      for name in names {
        #expect(all.contains(name), "\(name) is in the schema")
        #expect(sections.contains(String(name.prefix { $0 != "." })), "\(name) is under \(sections)")
      }
    }
  }

  @Test("an unknown key in a known section lists that section's keys in the schema's order")
  func unknownKeyHint() {
    guard case .failure(let e) = ConfigSchema.build([ConfigEntry(key: "log.retain", value: .integer(1), line: 4)]) else {
      Issue.record("expected an error")
      return
    }
    #expect(
      e.description
        == "line 4: log.retain: unknown key (known in [log]: path, commit_interval_ms, retain_records, retain_days, "
        + "raw_payloads, retain_bytes, chain_key_file)")
  }
}

extension ConfigSchemaTests {
  @Test("a turnstile with a door or in panel mode is refused, naming the key; a turnstile on gpiod needs its lines")
  func turnstileConflicts() {
    func errors(_ entries: [ConfigEntry]) -> [String] {
      if case .failure(let e) = ConfigSchema.build(entries) { return e.errors.map { "\($0.key): \($0.reason)" } }
      return []
    }
    let on = ConfigEntry(key: "turnstile.enabled", value: .boolean(true), line: 3)
    let sim = ConfigEntry(key: "gpio.backend", value: .string("sim"), line: 1)
    #expect(errors([sim, on]).isEmpty)
    #expect(
      errors([sim, on, ConfigEntry(key: "door.enabled", value: .boolean(true), line: 4)])
        == ["turnstile.enabled: a reader drives a door or a turnstile: turn door.enabled off"])
    let gpiod = errors([on])
    #expect(gpiod.contains("turnstile.entry_unlock_line: turnstile.enabled needs it"))
    #expect(gpiod.contains("turnstile.entry_passage_line: turnstile.enabled needs it"))
    #expect(!gpiod.contains { $0.hasPrefix("turnstile.exit_") }, "an entry-only turnstile needs no exit lines")
  }

  @Test("a keypad: a PIN key in door mode; in panel mode over OSDP none (the panel checks PINs), over Wiegand refused")
  func keypadModes() {
    func errors(_ entries: [ConfigEntry]) -> [String] {
      if case .failure(let e) = ConfigSchema.build(entries) { return e.errors.map { "\($0.key): \($0.reason)" } }
      return []
    }
    let sim = ConfigEntry(key: "gpio.backend", value: .string("sim"), line: 1)
    let keypad = ConfigEntry(key: "keypad.device", value: .string("/dev/input/event3"), line: 2)
    let panel = ConfigEntry(key: "panel.mode", value: .string("panel"), line: 3)
    let port = ConfigEntry(key: "panel.osdp_port", value: .string("/dev/ttyS1"), line: 4)
    let clear = ConfigEntry(key: "panel.enforce_secure", value: .boolean(false), line: 6)
    #expect(errors([sim, keypad]).contains { $0.hasPrefix("keypad.pin_key_file:") })
    #expect(errors([sim, keypad, panel, port, clear]).isEmpty)
    #expect(
      errors([sim, keypad, panel, port, clear, ConfigEntry(key: "keypad.require_pin", value: .boolean(true), line: 5)])
        == ["keypad.require_pin: in panel mode the panel decides who needs a PIN"])
    let wiegand = errors([sim, keypad, panel, ConfigEntry(key: "panel.link", value: .string("wiegand"), line: 4)])
    #expect(wiegand.contains { $0.hasPrefix("keypad.device:") && $0.contains("over OSDP only") }, "\(wiegand)")
  }

  @Test("[fleet] with brokers needs a valid reader id, a CA for mqtts and the audit log")
  func fleetConfig() {
    let bad = ConfigSchema.build([
      ConfigEntry(key: "fleet.brokers", value: .list([.string("mqtts://b:8883")]), line: 3),
      ConfigEntry(key: "fleet.reader_id", value: .string("door 1"), line: 4),
    ])
    guard case .failure(let errors) = bad else {
      Issue.record("accepted")
      return
    }
    #expect(errors.errors.map(\.key).sorted() == ["fleet.reader_id", "fleet.tls_ca_file"])
    let good = ConfigSchema.build([
      ConfigEntry(key: "fleet.brokers", value: .list([.string("mqtt://127.0.0.1")]), line: 3),
      ConfigEntry(key: "fleet.reader_id", value: .string("door-1"), line: 4),
    ])
    #expect((try? good.get())?.fleet.readerID == "door-1")
  }

  @Test("Home Assistant's commands: only over an authenticated broker, each with what carries it out on this reader")
  func homeAssistantCommands() {
    func errors(_ brokers: [String], _ commands: [String], _ more: [ConfigEntry] = []) -> [String] {
      let entries =
        [
          ConfigEntry(key: "gpio.backend", value: .string("sim"), line: 1),
          ConfigEntry(key: "fleet.brokers", value: .list(brokers.map { .string($0) }), line: 3),
          ConfigEntry(key: "fleet.reader_id", value: .string("door-1"), line: 4),
          ConfigEntry(key: "fleet.home_assistant_commands", value: .list(commands.map { .string($0) }), line: 5),
        ] + more
      if case .failure(let e) = ConfigSchema.build(entries) { return e.errors.map { "\($0.key): \($0.reason)" } }
      return []
    }
    let door = ConfigEntry(key: "door.enabled", value: .boolean(true), line: 6)
    #expect(errors(["mqtt://127.0.0.1"], ["open", "lockdown"], [door]).isEmpty)
    // A broker anyone on the network can publish to, or one that does not know this reader: refused.
    let remote = errors(["mqtt://10.0.0.2"], ["lockdown"])
    #expect(remote.count == 1 && remote[0].contains("'mqtt://10.0.0.2' is not an authenticated broker"), "\(remote)")
    let tls = [ConfigEntry(key: "fleet.tls_ca_file", value: .string("/etc/ca.crt"), line: 7)]
    #expect(errors(["mqtts://b:8883"], ["lockdown"], tls).contains { $0.contains("not an authenticated broker") })
    let password = [
      ConfigEntry(key: "fleet.username", value: .string("door-1"), line: 8),
      ConfigEntry(key: "fleet.password_file", value: .string("/etc/scangate/mqtt-password"), line: 9),
    ]
    #expect(errors(["mqtts://b:8883"], ["lockdown"], tls + password).isEmpty)
    // Each command needs its owner here.
    #expect(
      errors(["mqtt://127.0.0.1"], ["open"]) == [
        #"fleet.home_assistant_commands: "open" needs the reader's own door ([door] enabled = true): Home Assistant's lock shows its strike"#
      ])
    #expect(errors(["mqtt://127.0.0.1"], ["occupancy-reset"]).first?.contains("needs a turnstile") == true)
    #expect(errors(["mqtt://127.0.0.1"], ["passback-forgive"]).first?.contains("needs a turnstile with anti-passback") == true)
    #expect(errors(["mqtt://127.0.0.1"], ["unlock-all"]).first?.hasPrefix("fleet.home_assistant_commands:") == true)
    #expect(errors(["mqtt://127.0.0.1"], ["lockdown", "lockdown"]) == ["fleet.home_assistant_commands: a command is named twice"])
    // A setting that would mean less than it says is refused: a code with no lock to ask for it.
    let code = ConfigEntry(key: "fleet.home_assistant_code_file", value: .string("/etc/scangate/ha-code"), line: 11)
    #expect(errors(["mqtt://127.0.0.1"], ["lockdown"], [code]).first?.contains("the code guards the door's open only") == true)
    #expect(errors(["mqtt://127.0.0.1"], ["open"], [door, code]).isEmpty)
    let noDiscovery = ConfigEntry(key: "fleet.home_assistant_prefix", value: .string(""), line: 10)
    #expect(errors(["mqtt://127.0.0.1"], ["lockdown"], [noDiscovery]).first?.contains("set home_assistant_prefix") == true)
  }

  @Test("console.unix_operators without console.unix_path is refused (operators of nothing)")
  func unixOperatorsNeedASocket() {
    let operators = ConfigEntry(key: "console.unix_operators", value: .list([.string("alice")]), line: 2)
    guard case .failure(let e) = ConfigSchema.build([operators]) else {
      Issue.record("accepted")
      return
    }
    #expect(e.errors.map(\.key) == ["console.unix_operators"])
    let path = ConfigEntry(key: "console.unix_path", value: .string("/run/scangate/console.sock"), line: 3)
    #expect((try? ConfigSchema.build([operators, path]).get())?.console.unixOperators == ["alice"])
  }

  @Test("uses counted site-wide need signed passes, the fleet link and the site key; a second site key is refused")
  func siteUses() {
    func entry(_ key: String, _ value: ConfigValue, _ line: Int) -> ConfigEntry { ConfigEntry(key: key, value: value, line: line) }
    func problems(_ entries: [ConfigEntry]) -> [String] {
      guard case .failure(let e) = ConfigSchema.build(entries) else { return [] }
      return e.errors.map { "\($0.key): \($0.reason)" }
    }
    let scope = entry("credentials.uses_scope", .string("site"), 1)
    #expect(
      problems([scope]) == [
        #"credentials.uses_scope: "site" needs signed passes (credentials.trust_file), the fleet link ([fleet] brokers), the site key (fleet.site_key_file)"#
      ])
    let whole = [
      scope, entry("credentials.trust_file", .string("/etc/scangate/trust.toml"), 2),
      entry("fleet.brokers", .list([.string("mqtt://127.0.0.1")]), 3), entry("fleet.reader_id", .string("door-1"), 4),
      entry("fleet.site_key_file", .string("/etc/scangate/site.key"), 5),
    ]
    let config = try? ConfigSchema.build(whole).get()
    #expect(config?.credentials.usesScope == .site && config?.credentials.usesOffline == .deny)
    #expect(config?.siteKeyFile == "/etc/scangate/site.key")
    #expect(problems(whole + [entry("credentials.uses_offline", .string("maybe"), 6)]).first?.hasPrefix("credentials.uses_offline:") == true)
    // One site key: the turnstile's may name the same file, never another.
    #expect(problems(whole + [entry("turnstile.site_key_file", .string("/etc/scangate/site.key"), 6)]).isEmpty)
    #expect(
      problems(whole + [entry("turnstile.site_key_file", .string("/etc/scangate/other.key"), 6)]).first?.contains("a second site key")
        == true)
    // The site key is one purpose: never also the console's secret.
    #expect(
      problems(whole + [entry("console.secret_file", .string("/etc/scangate/site.key"), 6)]).contains {
        $0.contains("every key has one purpose")
      })
  }

  @Test("admin.listen without console.unix_path is refused: the page would have nothing to act through")
  func adminNeedsTheSocket() {
    let listen = ConfigEntry(key: "admin.listen", value: .string("0.0.0.0:8443"), line: 4)
    guard case .failure(let e) = ConfigSchema.build([listen]) else {
      Issue.record("accepted")
      return
    }
    #expect(e.errors.map(\.key) == ["admin.listen"])
    let path = ConfigEntry(key: "console.unix_path", value: .string("/run/scangate/console.sock"), line: 3)
    #expect((try? ConfigSchema.build([listen, path]).get())?.admin.listen == "0.0.0.0:8443")
  }

  @Test("an issuer's page runs with no reader's socket; an issuer key beside a reader's socket, or without its id, is refused")
  func issuerNeverBesideAReader() {
    let listen = ConfigEntry(key: "admin.listen", value: .string("0.0.0.0:8443"), line: 1)
    let key = ConfigEntry(key: "admin.issuer_key_file", value: .string("/root/issuer.key"), line: 2)
    let kid = ConfigEntry(key: "admin.issuer_kid", value: .string("front-desk"), line: 3)
    let socket = ConfigEntry(key: "console.unix_path", value: .string("/run/scangate/console.sock"), line: 4)
    func keys(_ entries: [ConfigEntry]) -> [String] {
      guard case .failure(let e) = ConfigSchema.build(entries) else { return [] }
      return e.errors.map(\.key)
    }
    #expect((try? ConfigSchema.build([listen, key, kid]).get())?.admin.issuerKid == "front-desk")
    #expect(keys([listen, key, kid, socket]) == ["admin.issuer_key_file"])
    #expect(keys([listen, key]) == ["admin.issuer_kid"])
    #expect(keys([listen, key, ConfigEntry(key: "admin.issuer_kid", value: .string("a b"), line: 3)]) == ["admin.issuer_kid"])
  }

  @Test("[feedback]: lamps on their lines; quiet silences the grant, deny and PIN chirps (faults still sound)")
  func feedback() throws {
    let config = try ConfigSchema.build([
      ConfigEntry(key: "feedback.green_line", value: .integer(5), line: 2),
      ConfigEntry(key: "feedback.red_line", value: .integer(6), line: 3),
      ConfigEntry(key: "feedback.idle", value: .string("green"), line: 4),
      ConfigEntry(key: "feedback.quiet", value: .boolean(true), line: 5),
    ]).get()
    #expect(config.feedback.greenLine == 5 && config.feedback.redLine == 6 && config.feedback.amberLine == -1)
    #expect(config.feedback.idle == .green && config.feedback.quiet)
    let a = config.engine.actuation
    #expect(a.grantPattern.count == 0 && a.denyPattern.count == 0 && a.pinPromptPattern.count == 0)
    #expect(a.faultPattern == BuzzerPattern.fault)
    let loud = try ConfigSchema.build([ConfigEntry(key: "feedback.green_line", value: .integer(5), line: 2)]).get()
    #expect(loud.engine.actuation.grantPattern == BuzzerPattern.grant && loud.engine.actuation.pinPromptPattern == BuzzerPattern.pinPrompt)
  }

  @Test("[feedback] refused: quiet with no lamp, a lamp on the relay's line or another lamp's, lamps in panel mode")
  func feedbackRefused() {
    func reasons(_ entries: [ConfigEntry]) -> [String] {
      guard case .failure(let e) = ConfigSchema.build(entries) else { return [] }
      return e.errors.map { "\($0.key): \($0.reason)" }
    }
    #expect(
      reasons([ConfigEntry(key: "feedback.quiet", value: .boolean(true), line: 2)]).first?.hasPrefix("feedback.quiet: a buzzer-free reader needs a lamp")
        == true)
    #expect(reasons([ConfigEntry(key: "feedback.red_line", value: .integer(17), line: 2)]) == ["feedback.red_line: same line as gpio.relay_line"])
    #expect(
      reasons([
        ConfigEntry(key: "feedback.green_line", value: .integer(5), line: 2), ConfigEntry(key: "feedback.amber_line", value: .integer(5), line: 3),
      ]) == ["feedback.amber_line: same line as feedback.green_line"])
    #expect(
      reasons([
        ConfigEntry(key: "panel.mode", value: .string("panel"), line: 2), ConfigEntry(key: "feedback.green_line", value: .integer(5), line: 3),
      ]).contains { $0.hasPrefix("feedback.green_line: in panel mode the panel drives the reader's lamps") })
  }
}
