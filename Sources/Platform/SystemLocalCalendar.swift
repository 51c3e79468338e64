import Glibc
import ScanBase

/// The reader's local time through glibc and Debian's tzdata: `localtime_r` applies the zone's
/// rules (DST included) from /etc/localtime, or from `TZ` when the process sets one at start
/// (`useTimeZone`, before any thread runs: glibc reads `TZ` unsynchronised).
public struct SystemLocalCalendar: LocalCalendar {
  public init() {}

  /// Sets the process's time zone (an IANA name such as "Europe/Berlin"; "" keeps /etc/localtime).
  /// Call once at startup, before other threads exist. Returns false when tzdata has no such zone.
  @discardableResult
  public static func useTimeZone(_ name: String) -> Bool {
    guard !name.isEmpty else { return true }
    guard !name.contains(".."), access("/usr/share/zoneinfo/" + name, R_OK) == 0 else { return false }
    setenv("TZ", ":" + name, 1)
    tzset()
    return true
  }

  public func civil(unixSeconds: Int64) -> CivilTime {
    var t = time_t(unixSeconds)
    var out = tm()
    _ = localtime_r(&t, &out)
    return CivilTime(
      year: Int(out.tm_year) + 1900, month: Int(out.tm_mon) + 1, day: Int(out.tm_mday), weekday: Int(out.tm_wday),
      minuteOfDay: Int(out.tm_hour) * 60 + Int(out.tm_min))
  }

  /// `2026-12-05 10:00 CET` in the process's zone (what a person at the door reads), from
  /// tzdata's rules for that instant (DST included).
  public static func text(unixSeconds: Int64) -> String {
    var t = time_t(unixSeconds)
    var out = tm()
    _ = localtime_r(&t, &out)
    var buffer = [CChar](repeating: 0, count: 64)
    let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M %Z", &out)
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
