import ScanAccess
import ScanBase
import ScanSim
import Testing

/// Issue 27 item 8: a list file with nothing in it is what an interrupted copy or a failed export
/// leaves; loading it would deny every code (or every scheduled one). It is refused like a file
/// cut short, and the list that was live stays, unless the file says it is meant to be empty.
@Suite struct EmptyListTests {
  let digester = FixtureDigester()
  let now: Int64 = 1_780_000_000

  func load(_ text: String, into list: inout AllowList) -> AllowListError? {
    list.load(Array(text.utf8), digester: digester, nowUnixSeconds: now)
  }

  @Test(
    "an allow-list with no entries is refused and the live list keeps granting",
    arguments: ["", "\n", "  \n\t\n\r\n", "# staff\n\n# visitors\n", "# scangate: empty please\n"])
  func emptyAllowListRefused(_ text: String) {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:ALICE-0001 label=alice\n", into: &list) == nil)
    let error = load(text, into: &list)
    #expect(error?.line == 0)
    #expect(error?.reason.contains("no entries") == true, "\(String(describing: error))")
    #expect(error?.reason.contains("# scangate: empty") == true)
    #expect(list.version == 1 && list.count == 1)
    #expect(list.decide(digester.digest("ALICE-0001"), nowUnixSeconds: now).0 == .granted)
    #expect(list.lastError == error)
  }

  @Test(
    "an allow-list that says it is empty loads as empty",
    arguments: ["# scangate: empty\n", "  # scangate: empty \r\n", "# staff left\n# scangate: empty\n\n"])
  func markedEmptyAllowListLoads(_ text: String) {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("text:ALICE-0001\n", into: &list) == nil)
    #expect(load(text, into: &list) == nil)
    #expect(list.version == 2 && list.count == 0)
    #expect(list.decide(digester.digest("ALICE-0001"), nowUnixSeconds: now).0 == .deniedUnknown)
  }

  @Test("the marker changes nothing in a list with entries; a marked file still needs its last newline")
  func markerWithEntries() {
    var list = AllowList(limits: AllowListLimits())
    #expect(load("# scangate: empty\ntext:BOB\n", into: &list) == nil)
    #expect(list.count == 1)
    #expect(load("# scangate: empty", into: &list)?.reason.contains("newline") == true)
    #expect(list.count == 1)
  }

  @Test("a schedule file with no statements is refused and the live schedules stay; the marker makes it empty")
  func emptyScheduleFile() {
    struct Monday: LocalCalendar {
      func civil(unixSeconds: Int64) -> CivilTime {
        CivilTime(year: 2026, month: 12, day: 21, weekday: 1, minuteOfDay: Int(unixSeconds / 60 % 1_440))
      }
    }
    let store = ScheduleStore(calendar: Monday())
    #expect(store.load(Array("schedule shop mon-sun 00:00-24:00\n".utf8)) == nil)
    let key = ScheduleKey.of("shop".utf8)
    for text in ["", "\n\n", "# shop hours\n"] {
      let error = store.load(Array(text.utf8))
      #expect(error?.reason.contains("no entries") == true, "\(String(describing: error))")
      #expect(store.version == 1)
      #expect(store.check(key: key, nowUnixSeconds: now) == .granted)
    }
    #expect(store.load(Array("# scangate: empty\n".utf8)) == nil)
    #expect(store.version == 2)
    #expect(store.check(key: key, nowUnixSeconds: now) == .deniedOutsideSchedule)
  }
}
