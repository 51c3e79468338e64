import ScanCore
import ScanLinux
import ScanLoop
import ScanService

/// A demo's scripted hand: watches the decisions in the ring and hands each one's scene number
/// and time to `act(scene:at:)`, which a subclass overrides to script its simulated lines, so
/// the story holds at any frame rate.
class DemoDecisionScript: PollParticipant {
  let ring: EventRing
  var cursor: EventCursor
  var decisions = 0

  init(ring: EventRing) {
    self.ring = ring
    cursor = EventCursor(next: ring.nextSequence)
  }

  var pollCapacity: Int { 0 }
  func prepare(_ poll: PollSet, now: Instant) -> Instant? { nil }

  func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    cursor.read(ring) { item in
      guard case .event(let e) = item else { return }
      noticed(e)
      guard e.kind == .decision else { return }
      decisions += 1
      act(scene: decisions - 1, at: e.monotonic)
    }
  }

  /// Every event, as it is read (here: nothing).
  func noticed(_ e: ScanEvent) {}

  /// Scripts the simulated lines for the scene whose decision came at `t` (here: nothing).
  func act(scene: Int, at t: Instant) {}
}
