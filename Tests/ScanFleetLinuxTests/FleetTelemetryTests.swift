import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// What the state topic says of the door (Home Assistant's binary sensors read it),
/// following the door records the link publishes.
@Suite struct FleetTelemetryTests {
  func record(_ kind: EventKind, code: Int64 = 0) -> AuditRecord {
    AuditRecord(sequence: 1, run: 1, eventSequence: 1, wallNanoseconds: 1_700_000_000_000_000_000, kind: kind, code: code)
  }

  func state(_ link: FleetLink) -> String { String(decoding: link.telemetry.stateJSON(link: link), as: UTF8.self) }

  @Test("door contact and tamper follow the door records; the lock says LOCKED only with the strike engaged and the door closed")
  func doorState() {
    var settings = FleetSettings()
    settings.brokers = ["mqtt://127.0.0.1:1"]
    settings.readerID = "door-1"
    let link = FleetLink(settings: settings, logPath: "/nonexistent/audit.db", auditLog: nil)
    let t = link.telemetry
    // Nothing known before the first door record: no key at all (Home Assistant shows unknown).
    #expect(!state(link).contains("door_contact") && !state(link).contains("tamper") && !state(link).contains(#""lock""#))
    // The strike alone (no contact record) says nothing about whether the door is locked.
    t.noteDoor(record(.doorUnlocked))
    t.noteDoor(record(.doorLocked))
    #expect(!state(link).contains(#""lock""#))
    t.noteDoor(record(.doorUnlocked))
    t.noteDoor(record(.doorOpened))
    #expect(state(link).contains(#""door_contact":"ON""#) && state(link).contains(#""lock":"UNLOCKED""#))
    t.noteDoor(record(.doorClosed))
    #expect(state(link).contains(#""door_contact":"OFF""#) && state(link).contains(#""lock":"UNLOCKED""#))
    t.noteDoor(record(.doorLocked))
    #expect(state(link).contains(#""door_contact":"OFF""#) && state(link).contains(#""lock":"LOCKED""#))
    // Forced open with the strike engaged: the door is not locked.
    t.noteDoor(record(.doorForced))
    #expect(state(link).contains(#""door_contact":"ON""#) && state(link).contains(#""lock":"UNLOCKED""#))
    t.noteDoor(record(.tamper, code: 1))
    #expect(state(link).contains(#""tamper":"ON""#))
    t.noteDoor(record(.tamper, code: 0))
    #expect(state(link).contains(#""tamper":"OFF""#))
    // A decision's record is not a door record.
    t.noteDoor(record(.decision))
    #expect(state(link).contains(#""door_contact":"ON""#))
  }
}
