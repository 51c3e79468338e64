import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

/// The engine's side of the fire release, the lockdown and the turnstile's gate, on fakes and a
/// manual clock (ScanEngineTests.Rig).
@Suite struct EngineEmergencyTests {
  typealias Rig = ScanEngineTests.Rig

  /// A gate that answers what it is told and remembers what it was asked.
  final class FakeGate: PassageGate {
    var answer: Verdict
    var asked: [(identity: Digest?, label: String)] = []
    init(answer: Verdict) { self.answer = answer }
    func admit(identity: Digest?, label: UnsafeRawBufferPointer, tag: Digest, at now: Instant) -> Verdict {
      asked.append((identity, String(decoding: label, as: UTF8.self)))
      return answer
    }
    var opened = 0
    func openOnce(at now: Instant) -> Bool {
      opened += 1
      return true
    }
  }

  @Test("the fire release holds the strike past the pulse cap; a pulse meanwhile changes nothing; its end locks at once")
  func fireReleasePastCap() {
    let rig = Rig()
    var settings = EngineSettings()
    settings.actuation.relayPulseMilliseconds = 1_000
    settings.actuation.relayPulseMillisecondsMax = 2_000
    var engine = rig.engine(settings)
    engine.setFireRelease(true)
    rig.feed(&engine, 0, count: 91)  // 3,003 ms: past the 2 s cap
    let opened = engine.openManually(milliseconds: 500)
    #expect(opened)
    rig.feed(&engine, 0, count: 60)  // 1,980 ms more: the OPEN's 500 ms long over
    #expect(rig.relay.edges.count == 1 && rig.relay.edges.first?.level == .active, "held, never dropped by the cap")
    engine.setFireRelease(false)
    #expect(rig.relay.activePeriodsMilliseconds == [91 * 33 + 60 * 33])
    rig.feed(&engine, 0, count: 30)
    #expect(rig.relay.edges.count == 2, "locked at the end of the release, not pulsed on")
    // After the release, pulses are capped again.
    let reopened = engine.openManually(milliseconds: 3_600_000)
    #expect(reopened)
    rig.feed(&engine, 0, count: 70)
    #expect(rig.relay.activePeriodsMilliseconds.last == 2_000)
  }

  @Test("turnstile mode: the gate is asked with who and the label; its refusal is the decision; the relay is never pulsed")
  func gate() {
    let rig = Rig()
    var engine = rig.engine(EngineSettings(), allowList: "text:ALICE label=alice\n")
    let gate = FakeGate(answer: .deniedPassback)
    engine.outcome = .turnstile(gate)
    rig.feed(&engine, 1, count: 10)
    rig.feed(&engine, 0, count: 90)  // gone, and past the presence cooldown
    gate.answer = .granted
    rig.feed(&engine, 1, count: 10)
    rig.feed(&engine, 0, count: 90)
    rig.feed(&engine, 2, count: 10)  // MALLORY: denied by the list, the gate never asked
    let alice = Array("ALICE".utf8).withUnsafeBytes { FixtureDigester().sha256($0) }
    #expect(gate.asked.count == 2 && gate.asked.allSatisfy { $0.identity == alice && $0.label == "alice" })
    #expect(rig.events(.decision).map(\.verdict) == [.deniedPassback, .granted, .deniedUnknown])
    #expect(rig.relay.edges.isEmpty)
    #expect(engine.stats.grants == 1 && engine.stats.denies == 2)
    // The grant played the grant pattern (one 120 ms beep) between the two deny patterns.
    #expect(rig.buzzer.activePeriodsMilliseconds.filter { $0 == Int(BuzzerPattern.grant.steps[0]) }.count == 1)
  }

  @Test("a lockdown: an unmarked entry is denied-lockdown and the relay untouched; one marked lockdown=yes grants")
  func lockdown() {
    let rig = Rig()
    var engine = rig.engine(EngineSettings(), allowList: "text:ALICE label=alice\ntext:MALLORY label=guard lockdown=yes\n")
    engine.policy.lockdown = true
    rig.feed(&engine, 1, count: 10)
    rig.feed(&engine, 0, count: 90)
    #expect(rig.relay.edges.isEmpty)
    rig.feed(&engine, 2, count: 10)
    rig.feed(&engine, 0, count: 120)
    #expect(rig.events(.decision).map(\.verdict) == [.deniedLockdown, .granted])
    #expect(rig.relay.activePeriodsMilliseconds.count == 1)
    engine.policy.lockdown = false
    rig.feed(&engine, 1, count: 10)  // ALICE left 4 s ago
    #expect(rig.events(.decision).last?.verdict == .granted)
  }
}
