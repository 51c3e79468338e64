import ScanCore
import Testing

@Suite struct ConfigSchemaTests {
  @Test("no entries gives the reader's defaults")
  func defaults() throws {
    let config = try ConfigSchema.build([]).get()
    #expect(config.cameraWidth == 640)
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
    #expect(config.cameraWidth == 1280)
    #expect(config.engine.decode.quietAfterMicroseconds == 2_500_000)
    #expect(ScanConfig().engine.decode.quietAfterMicroseconds == 1_000_000, "a reader goes quiet after a second by default")
    #expect(config.engine.decode.formats == [.qrCode, .ean13])
    #expect(config.engine.decode.region == Region(x: 100, y: 50, width: 400, height: 300))
    #expect(config.engine.actuation.denyPattern == BuzzerPattern([50, 50, 50]))
    #expect(config.relayActiveLow)
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
  }
}
