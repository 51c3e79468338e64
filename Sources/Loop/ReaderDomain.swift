import ScanCore
import ScanPlatform

/// One domain as the composition root sees it (ESPHome's component: schema and code side by
/// side): its settings section (`ConfigSection`, the domain's keys and checks), and how its
/// participants are made from those settings and joined to the loop. Adding a domain is one
/// value in the composition root's list and one section in ScanConfig, never an edit to the
/// loop, the schema's checks or another domain.
package protocol ReaderDomain {
  associatedtype Settings: ConfigSection
  /// Makes the domain's participants from `settings` and what every domain is given at start,
  /// and registers them with `host`. Returns what must be released after the loop stops (nil:
  /// nothing, or the domain is not configured); throws, saying why, when a part cannot start:
  /// the reader then does not start.
  static func attach(
    _ settings: Settings, _ start: DomainStart, to host: inout some ParticipantHost & ~Copyable
  ) throws(DomainRefused)
    -> (any ReleasedAtStop)?
}

/// What registers participants: the loop, at setup, before it runs.
package protocol ParticipantHost: ~Copyable {
  mutating func register(_ participant: any PollParticipant)
}

/// What every domain is given at start, and nothing of another domain's.
package struct DomainStart {
  /// The reader's events (a participant follows them with its own cursor, or records to them).
  package let ring: EventRing
  package let now: Instant
  /// Where its output lines come from (libgpiod or simulated).
  package let outputs: OutputLineBank
  /// The fire release and a lockdown as they stand at start (a latch restored from its file
  /// records no event, so a follower of the events would not learn of it).
  package let fire: Bool
  package let lockdown: Bool

  package init(ring: EventRing, now: Instant, outputs: OutputLineBank, fire: Bool, lockdown: Bool) {
    self.ring = ring
    self.now = now
    self.outputs = outputs
    self.fire = fire
    self.lockdown = lockdown
  }
}

/// A part that is put at rest when the reader stops: its lines driven to their idle level.
package protocol ReleasedAtStop: AnyObject {
  func release()
}

/// Why a domain's part could not start (printed on standard error; the reader exits 1).
package struct DomainRefused: Error, CustomStringConvertible {
  package let description: String
  package init(_ why: String) { description = why }
}
