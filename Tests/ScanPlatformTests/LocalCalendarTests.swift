import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// Local time through glibc and Debian's tzdata on Europe/Berlin's 2026 DST days. The unix
/// times and their local readings were taken from Python's zoneinfo (an independent reader of
/// the zone files), not from the code under test.
@Suite(.serialized) struct LocalCalendarTests {
  static func withBerlin(_ body: () throws -> Void) throws {
    // Changing TZ while another suite measures allocations over local time would count glibc's
    // re-reading of the zone file there: one at a time.
    try TimeZoneGuard.withLock {
      let saved = getenv("TZ").map { String(cString: $0) }
      #expect(SystemLocalCalendar.useTimeZone("Europe/Berlin"))
      defer {
        if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
        tzset()
      }
      try body()
    }
  }

  @Test("spring forward (2026-03-29): 01:59 CET is followed by 03:00 CEST; 02:xx never happens")
  func springForward() throws {
    try Self.withBerlin {
      let c = SystemLocalCalendar()
      #expect(c.civil(unixSeconds: 1_774_744_200) == CivilTime(year: 2026, month: 3, day: 29, weekday: 0, minuteOfDay: 90))
      #expect(c.civil(unixSeconds: 1_774_745_940).minuteOfDay == 1 * 60 + 59)
      #expect(c.civil(unixSeconds: 1_774_746_000).minuteOfDay == 3 * 60)
      let s = try ScheduleSet.parse(Array("schedule gap sun 02:00-03:00\nschedule early sun 01:00-04:00\n".utf8)).get()
      // Every real minute of 2026-03-29 00:00Z...04:00Z: the 02:00 window never opens, the
      // 01:00-04:00 window is open for two real hours (00:00Z-02:00Z), not three.
      var gap = 0, early = 0
      for minute in 0..<240 {
        let t = c.civil(unixSeconds: 1_774_742_400 + Int64(minute) * 60)
        if s.isOpen(0, at: t) { gap += 1 }
        if s.isOpen(1, at: t) { early += 1 }
      }
      #expect(gap == 0 && early == 120)
    }
  }

  @Test("fall back (2026-10-25): 02:30 happens twice, and the 02:00-03:00 window is open for both")
  func fallBack() throws {
    try Self.withBerlin {
      let c = SystemLocalCalendar()
      #expect(c.civil(unixSeconds: 1_792_888_200).minuteOfDay == 2 * 60 + 30)
      #expect(c.civil(unixSeconds: 1_792_891_800).minuteOfDay == 2 * 60 + 30)
      #expect(c.civil(unixSeconds: 1_792_893_600).minuteOfDay == 3 * 60)
      let s = try ScheduleSet.parse(Array("schedule twice sun 02:00-03:00\n".utf8)).get()
      var open = 0
      for minute in 0..<240 where s.isOpen(0, at: c.civil(unixSeconds: 1_792_886_400 + Int64(minute) * 60)) { open += 1 }
      #expect(open == 120)
    }
  }

  @Test("holidays and weekdays in local time: 2026-12-25 11:00 CET is a Friday holiday")
  func holiday() throws {
    try Self.withBerlin {
      let c = SystemLocalCalendar()
      let s = try ScheduleSet.parse(Array("schedule shop mon-fri 08:00-18:00\nholiday 2026-12-25\n".utf8)).get()
      let christmas = c.civil(unixSeconds: 1_798_192_800)
      #expect(christmas == CivilTime(year: 2026, month: 12, day: 25, weekday: 5, minuteOfDay: 11 * 60))
      #expect(!s.isOpen(0, at: christmas))
      #expect(s.isOpen(0, at: c.civil(unixSeconds: 1_798_452_000)))
    }
  }

  @Test("a zone tzdata does not have is refused")
  func unknownZone() {
    #expect(!SystemLocalCalendar.useTimeZone("Mars/Olympus_Mons"))
    #expect(!SystemLocalCalendar.useTimeZone("../../etc/passwd"))
  }
}
