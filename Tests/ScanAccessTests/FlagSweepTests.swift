import ScanAccess
import ScanBase
import ScanSim
import Testing

/// docs/credentials.md, "Every flag on every reader": every allow-list flag against the reader's
/// states (a PIN can be asked or not, a lockdown, the offline static-only policy), each outcome
/// written out here from the table, not computed by the policy under test.
@Suite struct FlagSweepTests {
  static let list = """
    text:PLAIN label=plain
    text:PIN label=pin pin=\(String(repeating: "ab", count: 32))
    text:LOCK label=lock lockdown=yes
    text:STATIC label=static static=yes
    text:BOTH label=both lockdown=yes static=yes pin=\(String(repeating: "cd", count: 32))

    """

  /// (pin can be asked, lockdown, static only) → the verdict for PLAIN, PIN, LOCK, STATIC, BOTH.
  static let table: [((Bool, Bool, Bool), [Verdict])] = [
    ((true, false, false), [.granted, .granted, .granted, .granted, .granted]),
    ((false, false, false), [.granted, .deniedPinUnavailable, .granted, .granted, .deniedPinUnavailable]),
    ((true, true, false), [.deniedLockdown, .deniedLockdown, .granted, .deniedLockdown, .granted]),
    ((false, true, false), [.deniedLockdown, .deniedLockdown, .granted, .deniedLockdown, .deniedPinUnavailable]),
    ((true, false, true), [.deniedOffline, .deniedOffline, .deniedOffline, .granted, .granted]),
    ((false, false, true), [.deniedOffline, .deniedOffline, .deniedOffline, .granted, .deniedPinUnavailable]),
    ((true, true, true), [.deniedOffline, .deniedOffline, .deniedOffline, .deniedLockdown, .granted]),
    ((false, true, true), [.deniedOffline, .deniedOffline, .deniedOffline, .deniedLockdown, .deniedPinUnavailable]),
  ]

  @Test("each flag on each reader state: a PIN nobody can ask for is never granted, lockdown and static-only keep their meaning")
  func sweep() {
    let digester = FixtureDigester()
    var policy = AccessPolicies(allowList: AllowList(limits: AllowListLimits()))
    #expect(policy.allowList.load(Array(Self.list.utf8), digester: digester, nowUnixSeconds: 0) == nil)
    #expect(policy.allowList.pinEntryCount == 2)
    for ((pin, lockdown, staticOnly), expected) in Self.table {
      policy.pinAvailable = pin
      policy.lockdown = lockdown
      policy.staticOnly = staticOnly
      let got = ["PLAIN", "PIN", "LOCK", "STATIC", "BOTH"].map { payload in
        Array(payload.utf8).withUnsafeBytes { policy.decide($0, digest: digester.sha256($0), nowUnixSeconds: 0, mode: .inspect).verdict }
      }
      #expect(got == expected, "pin \(pin) lockdown \(lockdown) static-only \(staticOnly)")
    }
  }

  @Test("schedule= names resolve when the list is loaded: unknown, no schedule file, unreadable file refuse it at the line; not yet loaded takes it")
  func scheduleReferences() {
    let digester = FixtureDigester()
    var list = AllowList(limits: AllowListLimits())
    let text = Array("text:A label=a\ntext:B label=b schedule=evenings\n".utf8)
    let known = ScheduleReferences.names(["day", "evenings"])
    #expect(list.load(text, digester: digester, schedules: known, nowUnixSeconds: 0) == nil)
    let missing = list.load(text, digester: digester, schedules: .names(["day"]), nowUnixSeconds: 0)
    #expect(missing?.line == 2 && missing?.reason == "schedule=evenings: the schedule file has no schedule of that name (it defines day)")
    #expect(list.load(text, digester: digester, schedules: .noFile, nowUnixSeconds: 0)?.reason.contains("no schedule file is configured") == true)
    #expect(list.load(text, digester: digester, schedules: .unreadable("x: line 1: bad"), nowUnixSeconds: 0)?.line == 2)
    #expect(list.load(text, digester: digester, schedules: .notLoaded, nowUnixSeconds: 0) == nil)
    #expect(list.version == 2, "a refused load keeps the live list")
  }

  @Test("a schedule file that drops a name the live allow-list uses is refused; the live schedules stay")
  func scheduleDropsName() {
    let store = ScheduleStore(calendar: SchedulePolicyTests.MondayCalendar())
    #expect(store.load(Array("schedule day mon-sun 00:00-24:00\nschedule evenings mon-fri 18:00-22:00\n".utf8)) == nil)
    store.required = [ScheduleKey.of("evenings".utf8)]
    let error = store.load(Array("schedule day mon-sun 00:00-24:00\n".utf8))
    #expect(error?.reason.hasPrefix("it drops \"evenings\", which the allow-list names: take it off the allow-list first") == true)
    #expect(store.live.names == ["day", "evenings"] && store.version == 1)
    #expect(store.load(Array("schedule evenings mon-sun 17:00-23:00\n".utf8)) == nil, "keeping the name is fine")
  }
}
