import ScanAccess
import ScanBase
import ScanSim
import Testing

/// The schedule file: parsed whole or rejected whole; windows, holidays, unlock windows and
/// zones evaluated on civil times written out by hand.
@Suite struct ScheduleTests {
  static let file = """
    # shop hours and staff access
    schedule shop mon-fri 08:00-18:00
    schedule shop sat 09:00-13:00
    schedule night fri-mon 22:00-24:00   # wraps over the weekend
    schedule night sat,sun 00:00-06:00
    holiday 2026-12-25
    holiday 2026-12-26
    unlock shop
    first-person-in

    """

  static func parsed() throws -> ScheduleSet { try ScheduleSet.parse(Array(file.utf8)).get() }

  /// 2026-12-21 is a Monday.
  static func at(_ day: Int, weekday: Int, _ hour: Int, _ minute: Int = 0) -> CivilTime {
    CivilTime(year: 2026, month: 12, day: day, weekday: weekday, minuteOfDay: hour * 60 + minute)
  }

  @Test("windows: days, start inclusive, end exclusive, 24:00, wrapping day ranges")
  func windows() throws {
    let s = try Self.parsed()
    let shop = try #require(s.index(named: "shop")), night = try #require(s.index(named: "night"))
    #expect(s.names == ["shop", "night"] && s.windows[shop].count == 2 && s.windows[night].count == 2)
    #expect(!s.isOpen(shop, at: Self.at(21, weekday: 1, 7, 59)))
    #expect(s.isOpen(shop, at: Self.at(21, weekday: 1, 8, 0)))
    #expect(s.isOpen(shop, at: Self.at(21, weekday: 1, 17, 59)))
    #expect(!s.isOpen(shop, at: Self.at(21, weekday: 1, 18, 0)))
    #expect(s.isOpen(shop, at: Self.at(19, weekday: 6, 12, 59)) && !s.isOpen(shop, at: Self.at(19, weekday: 6, 13, 0)))
    #expect(!s.isOpen(shop, at: Self.at(20, weekday: 0, 10, 0)))
    // fri-mon: Friday, Saturday, Sunday, Monday; not Tuesday.
    #expect(s.isOpen(night, at: Self.at(18, weekday: 5, 23, 59)) && s.isOpen(night, at: Self.at(21, weekday: 1, 22, 0)))
    #expect(!s.isOpen(night, at: Self.at(22, weekday: 2, 23, 0)))
    #expect(s.isOpen(night, at: Self.at(20, weekday: 0, 5, 59)) && !s.isOpen(night, at: Self.at(21, weekday: 1, 5, 0)))
  }

  @Test("holidays close every schedule; unlock windows and first-person-in are read")
  func holidays() throws {
    let s = try Self.parsed()
    let shop = try #require(s.index(named: "shop"))
    #expect(s.isOpen(shop, at: Self.at(24, weekday: 4, 10)))
    #expect(!s.isOpen(shop, at: Self.at(25, weekday: 5, 10)))
    #expect(s.unlockWindowOpen(at: Self.at(24, weekday: 4, 10)) && !s.unlockWindowOpen(at: Self.at(25, weekday: 5, 10)))
    #expect(s.firstPersonIn)
    #expect(s.allows(zone: "shop", at: Self.at(24, weekday: 4, 10)) == true)
    #expect(s.allows(zone: "shop", at: Self.at(24, weekday: 4, 20)) == false)
    #expect(s.allows(zone: "lab", at: Self.at(24, weekday: 4, 10)) == nil)
  }

  @Test(
    "a bad line rejects the whole file, naming the line",
    arguments: [
      ("schedule shop mon 08:00-18:00\nschedule shop xyz 08:00-18:00\n", 2, "days"),
      ("schedule shop mon 18:00-08:00\n", 1, "time span"),
      ("schedule shop mon 08:00-24:01\n", 1, "time span"),
      ("schedule shop mon 8:00-18:00\n", 1, "time span"),
      ("schedule Shop mon 08:00-18:00\n", 1, "names"),
      ("holiday 2026-02-30\n", 1, "holiday"),
      ("holiday 2026-12-25\nholiday 2026-12-25\n", 2, "duplicate"),
      ("unlock nowhere\n", 1, "unknown schedule"),
      ("open sesame\n", 1, "unknown keyword"),
      ("first-person-in now\n", 1, "no argument"),
      ("schedule a mon 08:00-09:00 extra\n", 1, "want"),
      ("schedule a mon 08:00-09:00 \u{1}\n", 1, "printable"),
    ])
  func rejects(text: String, line: Int, reason: String) {
    guard case .failure(let e) = ScheduleSet.parse(Array(text.utf8)) else {
      Issue.record("accepted: \(text)")
      return
    }
    #expect(e.line == line && e.reason.contains(reason), "\(e)")
  }

  @Test("bounds: schedules, windows per schedule, holidays, file and line size")
  func bounds() {
    var many = ""
    for i in 0...ScheduleSet.schedulesMax { many += "schedule s\(i) mon 08:00-09:00\n" }
    #expect(throws: ScheduleError.self) { try ScheduleSet.parse(Array(many.utf8)).get() }
    var windows = ""
    for _ in 0...ScheduleSet.windowsMax { windows += "schedule s mon 08:00-09:00\n" }
    #expect(throws: ScheduleError.self) { try ScheduleSet.parse(Array(windows.utf8)).get() }
    #expect(throws: ScheduleError.self) {
      try ScheduleSet.parse([UInt8](repeating: 0x20, count: ScheduleSet.lineBytesMax + 1)).get()
    }
    #expect(throws: ScheduleError.self) {
      try ScheduleSet.parse([UInt8](repeating: 0x0A, count: ScheduleSet.fileBytesMax + 1)).get()
    }
    // An empty file is refused (a cut-short copy); one that says it is meant empty is the empty set.
    #expect((try? ScheduleSet.parse([]).get()) == nil)
    #expect((try? ScheduleSet.parse(Array("# scangate: empty\n".utf8)).get()) == ScheduleSet())
  }

  @Test("the outside-schedule verdict is in the schedules' range and has a stable name")
  func verdict() {
    #expect(Verdict.deniedOutsideSchedule.rawValue == 20)
    #expect(Verdict(name: "denied-outside-schedule") == .deniedOutsideSchedule)
    #expect(!Verdict.deniedOutsideSchedule.isGranted)
  }
}

/// The decision with a schedule: an allow-list entry's `schedule=` is checked in local time.
@Suite struct SchedulePolicyTests {
  /// A calendar for tests: every unix time is read as Monday 2026-12-21, at (seconds / 60) % 1440 minutes.
  struct MondayCalendar: LocalCalendar {
    func civil(unixSeconds: Int64) -> CivilTime {
      CivilTime(year: 2026, month: 12, day: 21, weekday: 1, minuteOfDay: Int(unixSeconds / 60 % 1_440))
    }
  }

  @Test("an entry with schedule= is granted inside the window, denied outside it, and when the name is unknown")
  func policy() throws {
    var policy = AccessPolicies(allowList: AllowList(limits: AllowListLimits()))
    let digester = FixtureDigester()
    let text = "text:ALICE label=alice\ntext:CLEAN schedule=evenings\ntext:TYPO schedule=evenigns\n"
    #expect(policy.allowList.load(Array(text.utf8), digester: digester, nowUnixSeconds: 0) == nil)
    let store = ScheduleStore(calendar: MondayCalendar())
    #expect(store.load(Array("schedule evenings mon-fri 18:00-22:00\n".utf8)) == nil)
    func verdict(_ payload: String, minute: Int) -> Verdict {
      Array(payload.utf8).withUnsafeBytes {
        policy.decide($0, digest: digester.sha256($0), nowUnixSeconds: Int64(minute) * 60, mode: .admit).verdict
      }
    }
    // Without a schedule file an entry naming a schedule is denied (fail-secure).
    #expect(verdict("CLEAN", minute: 19 * 60) == .deniedOutsideSchedule)
    policy.schedules = store
    #expect(verdict("ALICE", minute: 3 * 60) == .granted)
    #expect(verdict("CLEAN", minute: 17 * 60 + 59) == .deniedOutsideSchedule)
    #expect(verdict("CLEAN", minute: 18 * 60) == .granted)
    #expect(verdict("CLEAN", minute: 22 * 60) == .deniedOutsideSchedule)
    #expect(verdict("TYPO", minute: 19 * 60) == .deniedOutsideSchedule)
    #expect(verdict("MALLORY", minute: 19 * 60) == .deniedUnknown)
    // A bad reload keeps the live schedules.
    #expect(store.load(Array("schedule evenings mon-fri 22:00-18:00\n".utf8)) != nil)
    #expect(verdict("CLEAN", minute: 19 * 60) == .granted && store.version == 1)
    #expect(store.allows(zone: "evenings", nowUnixSeconds: 19 * 60 * 60) == true)
  }

  @Test("schedule= in the allow-list: a bad name is an error naming the line")
  func badName() {
    var list = AllowList(limits: AllowListLimits())
    let error = list.load(Array("text:A\ntext:B schedule=Bad!\n".utf8), digester: FixtureDigester(), nowUnixSeconds: 0)
    #expect(error?.line == 2)
  }
}
