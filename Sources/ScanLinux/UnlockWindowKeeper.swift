import ScanCore

/// Unlock windows (docs/schedules.md): while a schedule named by an `unlock` line is open (in
/// the reader's local time) — and, with `first-person-in`, only once someone was granted inside
/// the window — the strike is held released. A poll participant with no descriptor: it looks at
/// the schedules once a second, and while it holds it renews the strike's lease through
/// `LoopRequests` every `ActuationSettings.relayHoldRenewMilliseconds`, so a loop that stops
/// (hung, killed, crashed: the crash guard drives the relay inactive) loses the hold within one
/// lease and the strike locks. The hold's start and end are `unlock-window` events in the ring
/// (console WATCH, journal, audit log); the door controller reads them (held-open is not timed
/// and the door is not relocked on close while a window holds). Runs on the loop's thread;
/// nothing allocates.
public final class UnlockWindowKeeper: PollParticipant {
  private let store: ScheduleStore
  private let ring: EventRing
  private let wall: any WallClock
  private var cursor: EventCursor
  /// A window stands now (before first-person-in).
  public private(set) var windowOpen = false
  /// The strike is held.
  public private(set) var holding = false
  /// Someone was granted while this window stood (first-person-in).
  private var grantedInWindow = false
  private var nextCheck: Instant
  private var nextRenewal: Instant? = nil

  public static let checkMilliseconds = 1_000

  public init(store: ScheduleStore, ring: EventRing, wall: any WallClock, now: Instant) {
    self.store = store
    self.ring = ring
    self.wall = wall
    cursor = EventCursor(next: ring.nextSequence)
    nextCheck = now
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    nextRenewal.map { min($0, nextCheck) } ?? nextCheck
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    cursor.read(ring) { item in
      guard case .event(let e) = item, e.kind == .decision, e.verdict.isGranted, windowOpen else { return }
      grantedInWindow = true
    }
    if now >= nextCheck {
      windowOpen = store.unlockWindowOpen(nowUnixSeconds: wall.unixSeconds())
      if !windowOpen { grantedInWindow = false }
      nextCheck = now.adding(milliseconds: Self.checkMilliseconds)
    }
    let wanted = windowOpen && (!store.live.firstPersonIn || grantedInWindow)
    if wanted != holding {
      holding = wanted
      record(now: now)
      if wanted {
        requests.holdStrike = true
        nextRenewal = now.adding(milliseconds: ActuationSettings.relayHoldRenewMilliseconds)
      } else {
        requests.endStrikeHold = true
        nextRenewal = nil
      }
    } else if holding, let renewal = nextRenewal, now >= renewal {
      requests.holdStrike = true
      nextRenewal = now.adding(milliseconds: ActuationSettings.relayHoldRenewMilliseconds)
    }
  }

  /// Records the hold's start or end.
  private func record(now: Instant) {
    var e = ScanEvent()
    e.kind = .unlockWindow
    e.code = holding ? 1 : 0
    e.monotonic = now
    e.wallNanoseconds = wall.unixNanoseconds()
    ring.append(e)
    cursor = EventCursor(next: max(cursor.next, ring.nextSequence))
  }
}
