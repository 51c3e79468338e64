/// The calendar seam, beside the clocks' (Seams.swift): the access schedules read local time
/// through it, the platform answers it with the time zone database.

/// A local date and time, as the reader's time zone shows it (tzdata, DST applied: the
/// platform's `SystemLocalCalendar` through glibc's localtime_r).
public struct CivilTime: Equatable, Sendable {
  public var year: Int
  public var month: Int
  public var day: Int
  /// 0 = Sunday ... 6 = Saturday.
  public var weekday: Int
  /// Minutes since local midnight, 0...1439.
  public var minuteOfDay: Int
  public init(year: Int, month: Int, day: Int, weekday: Int, minuteOfDay: Int) {
    self.year = year
    self.month = month
    self.day = day
    self.weekday = weekday
    self.minuteOfDay = minuteOfDay
  }
  /// The date as one comparable number, yyyymmdd.
  public var dateKey: Int { year * 10_000 + month * 100 + day }
}

/// Wall time → local civil time (the seam to the platform's time zone database).
public protocol LocalCalendar {
  func civil(unixSeconds: Int64) -> CivilTime
}
