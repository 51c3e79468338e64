import Synchronization

/// The one time policy every wall-time check judges against (docs/credentials.md, "Time"):
/// the later of the clock and the floor, a lower bound of the true time that never goes back.
///
/// The floor is kept by the reader's clock watcher (ScanLinux's `ClockFloorKeeper`): it moves
/// forward with the monotonic clock while the reader runs, from a wall reading only after the
/// clock has been synchronised and steady for minutes, and from signed times (a revocation
/// list's `issued`); it never moves back except by an operator's logged reset. Shared by the
/// loop's thread (decisions), the fleet thread (command expiry) and the audit writer (ages):
/// reads and updates are atomic and allocate nothing.
public final class TrustedTime: Sendable {
  private let floorSeconds: Atomic<Int64>
  private let synchronizedFlag: Atomic<Bool>

  /// A signed time (a revocation list's `issued`) raises the floor only when it is at most this
  /// far ahead of the clock: further ahead says more about the issuer's clock than about ours.
  public static let evidenceAheadSecondsMax: Int64 = 86_400

  public init(floor: Int64 = 0, synchronized: Bool = true) {
    floorSeconds = Atomic(floor)
    synchronizedFlag = Atomic(synchronized)
  }

  /// The latest wall time known to have passed (0: none known).
  public var floor: Int64 { floorSeconds.load(ordering: .acquiring) }
  /// Whether the kernel says the clock is synchronised (NTP).
  public var synchronized: Bool {
    get { synchronizedFlag.load(ordering: .acquiring) }
    set { synchronizedFlag.store(newValue, ordering: .releasing) }
  }

  /// The time every check judges at: the later of `now` (the wall clock) and the floor.
  public func judged(_ now: Int64) -> Int64 { max(now, floor) }

  /// Whether the wall clock reads earlier than a time already known to have passed: the time of
  /// day is then unknown (time-of-day windows close; expiry is judged at the floor).
  public func isBehind(_ now: Int64) -> Bool { now < floor }

  /// Raises the floor to `t` when that is later; never lowers it. Returns the floor after.
  @discardableResult
  public func raise(to t: Int64) -> Int64 {
    var current = floorSeconds.load(ordering: .acquiring)
    while t > current {
      let (exchanged, original) = floorSeconds.compareExchange(
        expected: current, desired: t, successOrdering: .acquiringAndReleasing, failureOrdering: .acquiring)
      if exchanged { return t }
      current = original
    }
    return current
  }

  /// Sets the floor to `t` even when that is earlier: only an operator's logged reset does this.
  public func reset(to t: Int64) { floorSeconds.store(t, ordering: .releasing) }

  /// The state now, as a value (STATUS, the verifier's policy).
  public func trust() -> ClockTrust { ClockTrust(synchronized: synchronized, floor: floor) }
}
