import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The lamps on the loop's seams: the ring followed with a cursor, the lines driven when a level
/// changes, errors and lost events counted, dark at stop; then the whole service with lamps.
@Suite struct FeedbackLightsTests {
  static let t0 = Instant(nanoseconds: 100_000_000_000)
  static func at(_ ms: Int) -> Instant { t0.adding(milliseconds: ms) }
  static func settings() -> FeedbackSettings {
    var s = FeedbackSettings()
    s.greenLine = 5
    s.redLine = 6
    s.amberLine = 13
    return s
  }
  static func decision(_ verdict: Verdict, at ms: Int) -> ScanEvent {
    var e = ScanEvent(.decision, at: at(ms), wall: 0)
    e.verdict = verdict
    return e
  }

  @Test("ready, granted, back to ready, denied, lockdown: each line follows, STATUS says so, release leaves them dark")
  func followsTheRing() {
    let ring = EventRing(capacity: 64)
    let (g, r, a) = (SimulatedOutputLine(), SimulatedOutputLine(), SimulatedOutputLine())
    let lights = FeedbackLights(settings: Self.settings(), ring: ring, green: g, red: r, amber: a, backend: "sim")
    let poll = PollSet(capacity: 4)
    let requests = LoopRequests()
    func levels() -> [LineLevel] { [g.level, r.level, a.level] }
    lights.service(poll, now: Self.at(0), requests: requests)
    #expect(levels() == [.inactive, .inactive, .active])
    #expect(lights.statusLine(now: Self.at(0)) == "ready (green off, red off, amber on) sim")
    ring.append(Self.decision(.granted, at: 100))
    #expect(lights.prepare(poll, now: Self.at(101)) == Self.at(101), "an unread event: serviced at once")
    lights.service(poll, now: Self.at(101), requests: requests)
    #expect(levels() == [.active, .inactive, .inactive])
    #expect(lights.prepare(poll, now: Self.at(200)) == Self.at(3_100), "woken when the grant's 3 s end")
    lights.service(poll, now: Self.at(3_100), requests: requests)
    #expect(levels() == [.inactive, .inactive, .active])
    ring.append(Self.decision(.deniedUnknown, at: 4_000))
    lights.service(poll, now: Self.at(4_000), requests: requests)
    #expect(levels() == [.inactive, .active, .inactive])
    ring.append(ScanEvent(.lockdown, code: 1, at: Self.at(7_000), wall: 0))
    lights.service(poll, now: Self.at(7_000), requests: requests)
    #expect(levels() == [.inactive, .active, .inactive])
    lights.service(poll, now: Self.at(7_500), requests: requests)
    #expect(levels() == [.inactive, .inactive, .inactive], "the lockdown's blink, off half")
    #expect(lights.statusLine(now: Self.at(7_500)) == "locked-down (green off, red off, amber off) sim")
    var status = ReaderStatus()
    lights.contribute(to: &status, now: Self.at(7_500), unixSeconds: 0)
    #expect(status.sections == [StatusSection("feedback", "locked-down (green off, red off, amber off) sim")])
    lights.service(poll, now: Self.at(8_000), requests: requests)
    #expect(r.level == .active)
    lights.release()
    #expect(levels() == [.inactive, .inactive, .inactive])
  }

  @Test("a line that cannot be driven is counted and shown; events overwritten before they were read are counted")
  func faults() {
    let ring = EventRing(capacity: 4)
    let clock = ManualClock(start: Self.t0)
    let red = RecordingOutputLine(name: "red", clock: clock)
    red.failWithErrno = EIO
    let lights = FeedbackLights(settings: Self.settings(), ring: ring, green: nil, red: red, amber: nil, backend: "sim")
    for i in 0..<10 { ring.append(Self.decision(.deniedUnknown, at: i)) }
    lights.service(PollSet(capacity: 1), now: Self.at(10), requests: LoopRequests())
    #expect(lights.errors == 1 && lights.eventsLost > 0)
    #expect(lights.statusLine(now: Self.at(10)).hasPrefix("denied (green -, red on, amber -) sim, 1 write errors, "))
  }

  /// A host that keeps what a domain registers (the loop's stand-in).
  struct Host: ParticipantHost {
    var registered: [any PollParticipant] = []
    mutating func register(_ participant: any PollParticipant) { registered.append(participant) }
  }

  @Test("the domain: wired lamps are one participant on the lines named by their keys; none wired, none; a line the kernel refuses stops the start")
  func domainAttach() throws {
    let ring = EventRing(capacity: 16)
    let green = SimulatedOutputLine()
    let watched = OutputLineBank(.simulated(["feedback.green_line": green]))
    func start(_ outputs: OutputLineBank, lockdown: Bool = false) -> DomainStart {
      DomainStart(ring: ring, now: Self.at(0), outputs: outputs, fire: false, lockdown: lockdown)
    }
    var host = Host()
    #expect(try FeedbackDomain.attach(FeedbackSettings(), start(watched), to: &host) == nil && host.registered.isEmpty)
    let part = try FeedbackDomain.attach(Self.settings(), start(watched), to: &host)
    let lights = try #require(host.registered.first as? FeedbackLights)
    #expect(host.registered.count == 1 && part === lights && lights.backend == "sim")
    lights.service(PollSet(capacity: 1), now: Self.at(1), requests: LoopRequests())
    #expect(green.level == .inactive && lights.driven?.amber == .active, "amber (an unwatched line of its own) invites a code")
    ring.append(Self.decision(.granted, at: 2))
    lights.service(PollSet(capacity: 1), now: Self.at(3), requests: LoopRequests())
    #expect(green.level == .active, "the watched green line shows the grant")
    part?.release()
    #expect(green.level == .inactive)
    // A standing lockdown reaches the lamps from the start (no event says it).
    var other = Host()
    _ = try FeedbackDomain.attach(Self.settings(), start(watched, lockdown: true), to: &other)
    let locked = try #require(other.registered.first as? FeedbackLights)
    #expect(locked.lamps.lockdown && locked.statusLine(now: Self.at(0)).hasPrefix("locked-down"), "\(locked.statusLine(now: Self.at(0)))")
    // libgpiod on a chip that is not there: refused, saying which lamp line, nothing registered.
    var refused = Host()
    #expect {
      try FeedbackDomain.attach(Self.settings(), start(OutputLineBank(.gpiod(chip: "/nonexistent/gpiochip9"))), to: &refused)
    } throws: { error in
      "\(error)".hasPrefix("cannot request the feedback lamps: request /nonexistent/gpiochip9 line 5")
    }
    #expect(refused.registered.isEmpty)
  }

  /// The replay (alice at frames 8-13, mallory at 45-50 of 60) through `Service.run` with lamps
  /// on recording lines; `latch`: a lockdown latch file in the state directory at start.
  static func runWithLamps(_ dir: String, latch: [UInt8]? = nil) -> (green: RecordingOutputLine, red: RecordingOutputLine, amber: RecordingOutputLine) {
    var (config, options) = replayReader(dir, frames: 60, shows: [(8..<14, "ALICE-0001"), (45..<51, "MALLORY-9")], latch: latch)
    config.feedback = Self.settings()
    config.feedback.grantedMilliseconds = 500
    config.feedback.deniedMilliseconds = 500
    let clock = SystemMonotonicClock()
    let lines = (
      green: RecordingOutputLine(name: "green", clock: clock), red: RecordingOutputLine(name: "red", clock: clock),
      amber: RecordingOutputLine(name: "amber", clock: clock)
    )
    options.watchedOutputs = ["feedback.green_line": lines.green, "feedback.red_line": lines.red, "feedback.amber_line": lines.amber]
    #expect(Service.run(config, options: options) == 0)
    return lines
  }

  @Test("the service with lamps on simulated lines: amber while waiting, green for alice, red for mallory, dark at stop")
  func inTheService() throws {
    let dir = temporaryDirectory("feedback")
    defer { removeTree(dir) }
    let (g, r, a) = Self.runWithLamps(dir)
    // Amber first (waiting), then green for alice before red for mallory; every lamp dark at
    // the end. (Not how long each showed: that is the state machine's test, on a manual clock.)
    #expect(a.edges.first?.level == .active && g.edges.first.map { a.edges[0].at <= $0.at } == true, "\(a.edges) \(g.edges)")
    #expect(g.edges.first?.level == .active && r.edges.first?.level == .active, "\(g.edges) \(r.edges)")
    #expect(g.edges[0].at < r.edges[0].at)
    #expect(g.level == .inactive && r.level == .inactive && a.level == .inactive, "dark at stop")
    var records: [AuditRecord] = []
    try AuditStore(path: dir + "/audit.db", readOnly: true).read { records.append($0) }
    #expect(records.filter { $0.kind == .decision }.map(\.verdict) == [.granted, .deniedUnknown])
    #expect(
      records.filter { $0.kind == .edge }.allSatisfy { [Int64(EdgeCode.relay), Int64(EdgeCode.buzzer)].contains($0.code & 0xF0) },
      "lamp edges are not audit records (a blink would fill the log)")
  }

  @Test("restarted with a console lockdown latched: the lamps blink red from the start, never the amber that invites a code")
  func lockdownStandingAtStart() throws {
    let dir = temporaryDirectory("feedback-latch")
    defer { removeTree(dir) }
    var latch = [UInt8](repeating: 0, count: LockdownLatch.encodedBytes)
    latch.withUnsafeMutableBytes { out in
      Array("uid 0".utf8).withUnsafeBytes { LockdownLatch(authority: .console, who: $0, sinceUnixSeconds: 1_796_000_000).encode(into: out) }
    }
    let (g, r, a) = Self.runWithLamps(dir, latch: latch)
    #expect(a.edges.isEmpty, "amber (ready) lit during a lockdown: \(a.edges)")
    #expect(r.edges.first?.level == .active && r.level == .inactive, "red lit, dark at stop: \(r.edges.count) edges")
    #expect(g.edges.isEmpty, "nobody was granted: \(g.edges)")
  }
}
