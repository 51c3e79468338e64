import ScanBase

/// Presence tracking settings.
public struct PresenceSettings: Equatable, Sendable {
  /// Frames a code must be seen in before it counts as present (1 = at once).
  public var confirmFrames = 1
  /// A present code that has not been seen for this long has left.
  public var leaveAfterMilliseconds = 600
  /// After a code leaves, it is not reported again for this long.
  public var cooldownMilliseconds = 1_500
  /// Report again while it stays in view, every this many ms (0 = never).
  public var repeatMilliseconds = 0
  public init() {}
}

/// What the tracker made of one sighting.
public enum PresenceChange: Equatable, Sendable {
  /// Nothing to report (still confirming, already present, or cooling down).
  case none
  /// The code has entered view (or repeats while present): decide on it.
  case entered
}

/// Reports a code once when it enters view and not again while it stays, with optional
/// N-frame confirmation and a cooldown after it leaves (VisionKit's didAdd / didRemove).
///
/// A fixed table of slots keyed by payload digest; a full table evicts the slot seen least
/// recently. Nothing allocates after init.
public struct PresenceTracker: ~Copyable {
  private struct Slot {
    var digest = Digest.zero
    var used = false
    var present = false
    var sightings = 0
    var lastSeen = Instant(nanoseconds: 0)
    var reportedAt = Instant(nanoseconds: 0)
    var coolUntil = Instant(nanoseconds: 0)
  }

  public let settings: PresenceSettings
  private let slots: UnsafeMutableBufferPointer<Slot>

  public init(settings: PresenceSettings, capacity: Int = 32) {
    precondition(capacity > 0 && settings.confirmFrames >= 1)
    self.settings = settings
    slots = .allocate(capacity: capacity)
    slots.initialize(repeating: Slot())
  }

  deinit { slots.deallocate() }

  /// Bytes a tracker of `capacity` slots allocates (the memory budget asks).
  public static func bytes(capacity: Int) -> Int { capacity * MemoryLayout<Slot>.stride }

  /// Records that `digest` was seen at `now`.
  public mutating func observe(_ digest: Digest, at now: Instant) -> PresenceChange {
    var index = -1
    var oldest = 0
    for i in 0..<slots.count {
      if slots[i].used && slots[i].digest == digest { index = i; break }
      if !slots[i].used { if index < 0 { index = -2 - i } }  // remember first free slot
      if slots[i].lastSeen < slots[oldest].lastSeen { oldest = i }
    }
    if index < 0 {
      let free = index == -1 ? oldest : -2 - index
      slots[free] = Slot(
        digest: digest, used: true, present: false, sightings: 0, lastSeen: now,
        reportedAt: Instant(nanoseconds: 0), coolUntil: Instant(nanoseconds: 0))
      index = free
    }
    var slot = slots[index]
    defer { slots[index] = slot }
    let gap = now.milliseconds(since: slot.lastSeen)
    slot.lastSeen = now
    if slot.present {
      if settings.repeatMilliseconds > 0 && now.milliseconds(since: slot.reportedAt) >= settings.repeatMilliseconds {
        slot.reportedAt = now
        return .entered
      }
      return .none
    }
    if now < slot.coolUntil { return .none }
    // Sightings must be consecutive-ish: a gap longer than the leave time starts over.
    slot.sightings = gap > settings.leaveAfterMilliseconds ? 1 : slot.sightings + 1
    guard slot.sightings >= settings.confirmFrames else { return .none }
    slot.present = true
    slot.reportedAt = now
    return .entered
  }

  /// Ends the presence of codes unseen for `leaveAfterMilliseconds`; calls `left` for each.
  public mutating func sweep(at now: Instant, _ left: (Digest) -> Void) {
    for i in 0..<slots.count where slots[i].used {
      guard now.milliseconds(since: slots[i].lastSeen) > settings.leaveAfterMilliseconds else { continue }
      if slots[i].present {
        slots[i].present = false
        slots[i].coolUntil = now.adding(milliseconds: settings.cooldownMilliseconds)
        slots[i].sightings = 0
        left(slots[i].digest)
      } else if now >= slots[i].coolUntil {
        slots[i].used = false
      }
    }
  }

  /// Codes currently present.
  public var presentCount: Int {
    var n = 0
    for i in 0..<slots.count where slots[i].used && slots[i].present { n += 1 }
    return n
  }
}
