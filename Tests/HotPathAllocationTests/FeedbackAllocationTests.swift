import CAllocCounter
import ScanCore
import ScanLinux
import Testing

/// The feedback lamps run on the loop's thread every turn: following the ring, choosing the
/// signal, driving the lines must allocate nothing.
@Suite(.serialized) struct FeedbackAllocationTests {
  @Test("the lamps following decisions, the strike, a lockdown and a PIN request allocate nothing per turn")
  func lampsAllocateNothing() {
    var settings = FeedbackSettings()
    settings.greenLine = 5
    settings.redLine = 6
    settings.amberLine = 13
    let ring = EventRing(capacity: 256)
    let (g, r, a) = (SimulatedOutputLine(), SimulatedOutputLine(), SimulatedOutputLine())
    let lights = FeedbackLights(settings: settings, ring: ring, green: g, red: r, amber: a, backend: "sim")
    let poll = PollSet(capacity: 1)
    let requests = LoopRequests()
    let verdicts: [Verdict] = [.granted, .deniedUnknown, .pinRequired, .granted]
    var now = Instant(nanoseconds: 1_000_000_000)
    var changes = 0
    func turn(_ i: Int) {
      now = now.adding(milliseconds: 33)
      if i % 30 == 0 {
        var e = ScanEvent(.decision, at: now, wall: 0)
        e.verdict = verdicts[(i / 30) % verdicts.count]
        ring.append(e)
      }
      if i % 300 == 150 { ring.append(ScanEvent(.lockdown, code: UInt16(i / 300 % 2), at: now, wall: 0)) }
      if i % 90 == 1 { ring.append(ScanEvent(.edge, code: EdgeCode.code(line: EdgeCode.relay, level: i % 180 == 1 ? .active : .inactive), at: now, wall: 0)) }
      _ = lights.prepare(poll, now: now)
      let before = (g.level, r.level, a.level)
      lights.service(poll, now: now, requests: requests)
      if before != (g.level, r.level, a.level) { changes += 1 }
    }
    for i in 0..<300 { turn(i) }  // warm-up
    alloc_counter_reset()
    for i in 300..<1_300 { turn(i) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 1,000 turns")
    #expect(changes > 50, "the lamps changed \(changes) times: the turns did drive them")
  }
}
