import ScanConsole
import ScanCore
import ScanSim
import Testing

/// LOCKDOWN and TURNSTILE on the console: read-only forms open to all, actions for operators
/// only, each action recorded once done with who asked, and the owner's refusals said plainly.
@Suite struct LockdownCommandTests {
  typealias Rig = ClockCommandTests.Rig

  /// The clock test's host, with a lockdown and a turnstile owner.
  struct Host: ConsoleHost {
    var base = ClockCommandTests.Host()
    var outcome: ConsoleActionOutcome? = .latched
    var asked: [(ConsoleAction, String)] = []
    func consoleStatus() -> ReaderStatus {
      var s = base.consoleStatus()
      s.sections.append(StatusSection("emergency", "fire inactive, lockdown off"))
      return s
    }
    func writeLastDecisions(_ count: Int, payloads: PayloadVisibility, into w: inout ByteWriter) -> Int { 0 }
    mutating func startLog(_ query: AuditQuery, for session: SessionTicket) -> LogStart { .notConfigured }
    func check(_ payload: UnsafeRawBufferPointer, label: UnsafeMutableRawBufferPointer) -> (Verdict, labelCount: Int) {
      (.deniedUnknown, 0)
    }
    mutating func open(milliseconds: Int?) -> OpenOutcome { .pulsed(milliseconds: 0) }
    mutating func reload() -> ReloadOutcome { .loaded(version: 1, entries: 0) }
    mutating func selfTest() {}
    mutating func startSnapshot(for session: SessionTicket, text: Bool, redacted: Bool) -> SnapshotStart { .busy }
    mutating func record(_ kind: EventKind, code: UInt16, text: UnsafeRawBufferPointer) -> UInt64 {
      base.record(kind, code: code, text: text)
    }
    mutating func perform(_ action: ConsoleAction, who: UnsafeRawBufferPointer) -> ConsoleActionOutcome? {
      asked.append((action, String(decoding: who, as: UTF8.self)))
      return outcome
    }
  }

  final class Session {
    let output = ClockCommandTests.Output()
    var host = Host()
    let commands: ConsoleCommands<ManualClock>
    init() {
      commands = ConsoleCommands(
        slots: 4, limits: ConsoleLimits(), auth: AuthGate.Settings(), secret: ClockCommandTests.Secret(), clock: ManualClock())
      commands.opened(0, peer: .localUser(1000), transport: .tcp)
    }
    func say(_ line: String) -> String {
      output.text[0] = ""
      Array(line.utf8).withUnsafeBytes { commands.handle(0, line: $0, host: &host, output: output) }
      return output.text[0, default: ""]
    }
  }

  @Test("LOCKDOWN shows the state to anyone; ON needs AUTH, then is carried out and recorded with who")
  func lockdownOn() {
    let s = Session()
    #expect(s.say("LOCKDOWN") == "| fire inactive, lockdown off\nOK lockdown\n")
    #expect(s.say("LOCKDOWN ON").hasPrefix("ERR 401"))
    #expect(s.host.asked.isEmpty && s.host.base.recorded.isEmpty)
    _ = s.say("AUTH sesame-open")
    #expect(s.say("LOCKDOWN ON") == "OK #102 lockdown on\n")
    #expect(s.host.asked.count == 1 && s.host.asked[0].0 == .lockdownOn && s.host.asked[0].1 == "uid 1000")
    #expect(s.host.base.recorded.last?.2 == "LOCKDOWN ON by uid 1000")
  }

  @Test("the owner's refusals: held by another authority (409), not durable (503), none configured (404); nothing recorded")
  func refusals() {
    let s = Session()
    _ = s.say("AUTH sesame-open")
    s.host.outcome = .heldBy(.fleet)
    #expect(s.say("LOCKDOWN OFF") == "ERR 409 the lockdown was latched by fleet: only it lifts it\n")
    s.host.outcome = .notDurable
    #expect(s.say("LOCKDOWN ON") == "ERR 503 could not be written durably: nothing changed\n")
    s.host.outcome = nil
    #expect(s.say("LOCKDOWN ON") == "ERR 404 no lockdown on this reader\n")
    #expect(s.host.base.recorded.map(\.2) == ["AUTH ok"], "only the AUTH")
  }

  @Test("TURNSTILE FORGIVE <tag> and RESET are recorded with the tag and who; without a turnstile, 404")
  func turnstile() {
    let s = Session()
    #expect(s.say("TURNSTILE") == "ERR 404 no turnstile configured\n")
    _ = s.say("AUTH sesame-open")
    s.host.outcome = .forgiven
    #expect(s.say("TURNSTILE FORGIVE 7fb7666e5481daa1") == "OK #102 forgiven\n")
    #expect(s.host.base.recorded.last?.2 == "TURNSTILE FORGIVE 7fb7666e5481daa1 by uid 1000")
    s.host.outcome = .occupancyReset(before: 12)
    #expect(s.say("TURNSTILE RESET") == "OK #103 occupancy reset (was 12)\n")
  }
}
