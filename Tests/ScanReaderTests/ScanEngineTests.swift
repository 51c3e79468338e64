import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

/// The engine end to end on fakes: frames name payloads, a manual clock, recording GPIO.
@Suite struct ScanEngineTests {
  typealias Engine = ScanEngine<FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, FixtureDigester>

  final class Rig {
    let clock = ManualClock()
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let ring = EventRing(capacity: 1024)
    let frames: [[UInt8]]
    init() {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      frames = (0...3).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
    }
    func engine(_ settings: EngineSettings = EngineSettings(), allowList: String = "text:ALICE\n") -> Engine {
      var e = Engine(
        settings: settings, decoder: FixtureDecoder(payloads: [Array("ALICE".utf8), Array("MALLORY".utf8), Array("EVIL\r\nOK".utf8)]),
        relay: relay, buzzer: buzzer, clock: clock, wall: clock, digester: FixtureDigester(), events: ring,
        maxWidth: 64, maxHeight: 48)
      #expect(e.allowList.load(Array(allowList.utf8), digester: FixtureDigester(), nowUnixSeconds: clock.unixSeconds()) == nil)
      return e
    }
    /// Feeds frame `index` (0 = empty) `count` times, 33 ms apart, ticking in between.
    func feed(_ engine: inout Engine, _ index: Int, count: Int) {
      for n in 0..<count {
        frames[index].withUnsafeBytes { raw in
          engine.process(LumaFrame(bytes: raw, geometry: .gray(width: 64, height: 48), captured: clock.now(), sequence: UInt64(n)))
        }
        for _ in 0..<33 {
          clock.advance(milliseconds: 1)
          engine.tick()
        }
      }
    }
    func events(_ kind: EventKind) -> [ScanEvent] {
      var out: [ScanEvent] = []
      var s: UInt64 = 1
      while case .event(let e) = ring.read(s) {
        if e.kind == kind { out.append(e) }
        s += 1
      }
      return out
    }
  }

  @Test("a listed code pulses the relay once for relay_pulse_ms and plays the grant pattern")
  func grant() {
    let rig = Rig()
    var settings = EngineSettings()
    settings.actuation.relayPulseMilliseconds = 500
    var engine = rig.engine(settings)
    rig.feed(&engine, 1, count: 60)  // ALICE held in view for 2 s
    rig.feed(&engine, 0, count: 30)
    #expect(rig.relay.activePeriodsMilliseconds == [500])
    #expect(rig.buzzer.activePeriodsMilliseconds == [Int(BuzzerPattern.grant.steps[0])])
    #expect(engine.stats.grants == 1 && engine.stats.denies == 0)
    let decisions = rig.events(.decision)
    #expect(decisions.count == 1)
    #expect(decisions.first?.verdict == .granted)
    #expect(rig.events(.left).count == 1)
  }

  @Test("an unknown code never touches the relay and plays the deny pattern")
  func deny() {
    let rig = Rig()
    var engine = rig.engine()
    rig.feed(&engine, 2, count: 30)
    rig.feed(&engine, 0, count: 30)
    #expect(rig.relay.edges.isEmpty)
    #expect(rig.buzzer.activePeriodsMilliseconds.count == 3)  // 80 on, 80 off, ×3
    #expect(rig.events(.decision).first?.verdict == .deniedUnknown)
    #expect(engine.stats.frameToEdge.count == 1)
  }

  @Test("the decision event carries the payload, escaped only when shown")
  func payloadInEvent() {
    let rig = Rig()
    var engine = rig.engine()
    rig.feed(&engine, 3, count: 2)
    guard let e = rig.events(.decision).first else { Issue.record("no decision"); return }
    #expect(e.withPayload { Array($0) } == Array("EVIL\r\nOK".utf8))
    #expect(EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown).contains("payload=EVIL%0D%0AOK"))
    #expect(!EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown).contains("\r"))
    let hidden = EventText.line(e, since: Instant(nanoseconds: 0), payloads: .hidden)
    #expect(!hidden.contains("EVIL") && !hidden.contains("payload="))
    #expect(!hidden.contains("sha256="))  // a tag (keyed) only, and this engine has no tag key
  }

  @Test("a code that leaves and comes back after the cooldown is decided again")
  func comesBack() {
    let rig = Rig()
    var engine = rig.engine()
    rig.feed(&engine, 1, count: 10)
    rig.feed(&engine, 0, count: 100)  // 3.3 s away: left and cooled down
    rig.feed(&engine, 1, count: 10)
    #expect(engine.stats.grants == 2)
  }

  @Test("CHECK decides without actuating; OPEN is capped")
  func checkAndOpen() {
    let rig = Rig()
    var settings = EngineSettings()
    settings.actuation.relayPulseMillisecondsMax = 2_000
    var engine = rig.engine(settings)
    #expect(Array("ALICE".utf8).withUnsafeBytes { engine.check($0) } == .granted)
    #expect(Array("BOB".utf8).withUnsafeBytes { engine.check($0) } == .deniedUnknown)
    #expect(rig.relay.edges.isEmpty)
    let opened = engine.openManually(milliseconds: 3_600_000)
    #expect(opened)
    rig.feed(&engine, 0, count: 62)  // 2,046 ms: past the 2 s cap, inside the 1 s rest
    #expect(rig.relay.activePeriodsMilliseconds == [2_000])
    // The period ran into the cap: the relay rests, and an OPEN now is refused, not "OK".
    let rest = engine.actuator.restRemainingMilliseconds(at: rig.clock.now())
    #expect(rest != nil)
    let manualOpens = engine.stats.manualOpens
    let refused = !engine.openManually(milliseconds: 500)
    #expect(refused)
    let after = engine.stats.manualOpens
    #expect(after == manualOpens)
    rig.feed(&engine, 0, count: 60)
    #expect(rig.relay.activePeriodsMilliseconds == [2_000])
  }

  @Test("a GPIO failure is counted and recorded, and the loop carries on")
  func gpioFault() {
    let rig = Rig()
    var engine = rig.engine()
    rig.relay.failWithErrno = 5
    rig.feed(&engine, 1, count: 3)
    #expect(engine.stats.gpioErrors > 0)
    #expect(!rig.events(.fault).isEmpty)
    #expect(engine.stats.grants == 1)
  }

  @Test("releaseOutputs drives both lines inactive mid-pulse")
  func release() {
    let rig = Rig()
    var engine = rig.engine()
    rig.feed(&engine, 1, count: 1)
    #expect(rig.relay.level == .active)
    engine.releaseOutputs()
    #expect(rig.relay.level == .inactive)
    #expect(rig.buzzer.level == .inactive)
  }
}
