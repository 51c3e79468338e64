import Synchronization

/// One holder at a time for the process's time zone: tests that change `TZ` (glibc's local time
/// reads it unsynchronised, and after a change re-reads the zone file, allocating) and tests that
/// measure allocations while reading local time run under it, so the two never overlap when the
/// test runner runs suites in parallel. The service sets `TZ` once, before any thread starts.
public enum TimeZoneGuard {
  static let lock = Mutex(())

  public static func withLock(_ body: () throws -> Void) throws {
    try lock.withLock { _ in try body() }
  }
}
