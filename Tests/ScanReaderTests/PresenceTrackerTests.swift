import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

@Suite struct PresenceTrackerTests {
  let a = FixtureDigester().digest("A")
  let b = FixtureDigester().digest("B")

  /// Sees `digest` every `period` ms for `frames` frames, returning how many times it entered.
  func show(_ digest: Digest, _ tracker: inout PresenceTracker, clock: ManualClock, frames: Int, period: Int = 33) -> Int {
    var entered = 0
    for _ in 0..<frames {
      if tracker.observe(digest, at: clock.now()) == .entered { entered += 1 }
      tracker.sweep(at: clock.now()) { _ in }
      clock.advance(milliseconds: period)
    }
    return entered
  }

  func wait(_ ms: Int, _ tracker: inout PresenceTracker, clock: ManualClock) -> [Digest] {
    var left: [Digest] = []
    for _ in 0..<(ms / 10) {
      clock.advance(milliseconds: 10)
      tracker.sweep(at: clock.now()) { left.append($0) }
    }
    return left
  }

  @Test("reported once on entering, not again while it stays")
  func reportsOnce() {
    let clock = ManualClock()
    var tracker = PresenceTracker(settings: PresenceSettings())
    #expect(show(a, &tracker, clock: clock, frames: 90) == 1)  // 3 s in view
    #expect(tracker.presentCount == 1)
  }

  @Test("leaves after leave_after_ms unseen, then cools down before it can enter again")
  func leaveAndCooldown() {
    let clock = ManualClock()
    var settings = PresenceSettings()
    settings.leaveAfterMilliseconds = 500
    settings.cooldownMilliseconds = 2_000
    var tracker = PresenceTracker(settings: settings)
    #expect(show(a, &tracker, clock: clock, frames: 5) == 1)
    #expect(wait(400, &tracker, clock: clock).isEmpty)
    #expect(wait(200, &tracker, clock: clock) == [a])
    #expect(tracker.presentCount == 0)
    // Back in view during the cooldown: nothing.
    #expect(show(a, &tracker, clock: clock, frames: 10, period: 100) == 0)
    // The cooldown counts from when it left, and it must leave again first.
    _ = wait(2_600, &tracker, clock: clock)
    #expect(show(a, &tracker, clock: clock, frames: 3) == 1)
  }

  @Test("a short glimpse shorter than the gap still counts once")
  func glimpse() {
    let clock = ManualClock()
    var tracker = PresenceTracker(settings: PresenceSettings())
    #expect(show(a, &tracker, clock: clock, frames: 1) == 1)
  }

  @Test("confirmation needs N sightings without a gap")
  func confirmation() {
    let clock = ManualClock()
    var settings = PresenceSettings()
    settings.confirmFrames = 3
    settings.leaveAfterMilliseconds = 200
    var tracker = PresenceTracker(settings: settings)
    #expect(tracker.observe(a, at: clock.now()) == .none)
    clock.advance(milliseconds: 33)
    #expect(tracker.observe(a, at: clock.now()) == .none)
    clock.advance(milliseconds: 500)  // a gap: the count starts over
    #expect(tracker.observe(a, at: clock.now()) == .none)
    clock.advance(milliseconds: 33)
    #expect(tracker.observe(a, at: clock.now()) == .none)
    clock.advance(milliseconds: 33)
    #expect(tracker.observe(a, at: clock.now()) == .entered)
  }

  @Test("repeat_ms reports again while the code stays")
  func repeats() {
    let clock = ManualClock()
    var settings = PresenceSettings()
    settings.repeatMilliseconds = 1_000
    var tracker = PresenceTracker(settings: settings)
    // 3.3 s in view: entered at 0, then at 1.0, 2.0 and 3.0 s.
    #expect(show(a, &tracker, clock: clock, frames: 100) == 4)
  }

  @Test("two codes are tracked independently")
  func twoCodes() {
    let clock = ManualClock()
    var tracker = PresenceTracker(settings: PresenceSettings())
    #expect(tracker.observe(a, at: clock.now()) == .entered)
    #expect(tracker.observe(b, at: clock.now()) == .entered)
    clock.advance(milliseconds: 30)
    #expect(tracker.observe(a, at: clock.now()) == .none)
    #expect(tracker.presentCount == 2)
  }

  @Test("a full table evicts the code seen least recently")
  func eviction() {
    let clock = ManualClock()
    var tracker = PresenceTracker(settings: PresenceSettings(), capacity: 2)
    let c = FixtureDigester().digest("C")
    #expect(tracker.observe(a, at: clock.now()) == .entered)
    clock.advance(milliseconds: 10)
    #expect(tracker.observe(b, at: clock.now()) == .entered)
    clock.advance(milliseconds: 10)
    #expect(tracker.observe(c, at: clock.now()) == .entered)  // evicts A
    clock.advance(milliseconds: 10)
    #expect(tracker.observe(b, at: clock.now()) == .none)  // B kept
  }
}
