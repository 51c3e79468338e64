import CCredential
import ScanCore
import ScanLoop
import ScanPlatform

/// Unlock windows (docs/schedules.md): while a schedule named by an `unlock` line is open (in
/// the reader's local time) — and, with `first-person-in`, only once someone was granted inside
/// the window — the strike is held released. A poll participant with no descriptor: it looks at
/// the schedules once a second, and while it holds it renews the strike's lease through
/// `LoopRequests` every `ActuationSettings.relayHoldRenewMilliseconds`, so a loop that stops
/// (hung, killed, crashed: the crash guard drives the relay inactive) loses the hold within one
/// lease and the strike locks. The hold's start and end are `unlock-window` events in the ring
/// (console WATCH, journal, audit log); the door controller reads them (held-open is not timed
/// and the door is not relocked on close while a window holds). A window holds only while the
/// clock can be trusted (`clockTrusted`: the kernel's NTP status by default): an unsynchronised
/// clock after a power cut must not open a shop at night; the window is then "held off"
/// (`unlock-window clock-unsynchronised`) and the strike stays locked. Runs on the loop's thread;
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
  private let clockTrusted: () -> Bool
  /// A window stands but the clock cannot be trusted: not held.
  public private(set) var heldOffByClock = false
  private var nextRenewal: Instant? = nil

  public static let checkMilliseconds = 1_000

  /// The kernel's NTP status (adjtimex): synchronised, not STA_UNSYNC.
  public static func kernelClockSynchronized() -> Bool { sg_clock_synchronized() == 1 }

  public init(
    store: ScheduleStore, ring: EventRing, wall: any WallClock, now: Instant,
    clockTrusted: @escaping () -> Bool = UnlockWindowKeeper.kernelClockSynchronized
  ) {
    self.store = store
    self.clockTrusted = clockTrusted
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
      let heldOff = windowOpen && !clockTrusted()
      if heldOff != heldOffByClock {
        heldOffByClock = heldOff
        if heldOff { record(code: 2, now: now) }
      }
      nextCheck = now.adding(milliseconds: Self.checkMilliseconds)
    }
    let wanted = windowOpen && !heldOffByClock && (!store.live.firstPersonIn || grantedInWindow)
    if wanted != holding {
      holding = wanted
      record(code: holding ? 1 : 0, now: now)
      if wanted {
        requests.post(.holdStrike)
        nextRenewal = now.adding(milliseconds: ActuationSettings.relayHoldRenewMilliseconds)
      } else {
        requests.post(.endStrikeHold)
        nextRenewal = nil
      }
    } else if holding, let renewal = nextRenewal, now >= renewal {
      requests.post(.holdStrike)
      nextRenewal = now.adding(milliseconds: ActuationSettings.relayHoldRenewMilliseconds)
    }
  }

  /// Records the hold's start (1) or end (0), or a window held off by the clock (2).
  private func record(code: UInt16, now: Instant) {
    ring.append(ScanEvent(.unlockWindow, code: code, at: now, wall: wall.unixNanoseconds()))
    cursor = EventCursor(next: max(cursor.next, ring.nextSequence))
  }
}
