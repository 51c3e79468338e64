import ScanCore
import ScanLinux
import ScanService
import Testing

/// What the state topic says of the door (Home Assistant's binary sensors and lock read it),
/// following the door records the link publishes.
@Suite struct FleetTelemetryTests {
  func record(_ kind: EventKind, code: Int64 = 0) -> AuditRecord {
    AuditRecord(sequence: 1, run: 1, eventSequence: 1, wallNanoseconds: 1_700_000_000_000_000_000, kind: kind, code: code)
  }

  func state(_ link: FleetLink) -> String { String(decoding: link.telemetry.stateJSON(link: link), as: UTF8.self) }

  @Test("door contact, tamper and the strike follow the door records; unknown before the first")
  func doorState() {
    var settings = FleetSettings()
    settings.brokers = ["mqtt://127.0.0.1:1"]
    settings.readerID = "door-1"
    let link = FleetLink(settings: settings, logPath: "/nonexistent/audit.db", auditLog: nil)
    let t = link.telemetry
    #expect(!state(link).contains("door_contact") && !state(link).contains("tamper") && state(link).contains(#""lock":"LOCKED""#))
    t.noteDoor(record(.doorUnlocked))
    t.noteDoor(record(.doorOpened))
    #expect(state(link).contains(#""door_contact":"ON""#) && state(link).contains(#""lock":"UNLOCKED""#))
    t.noteDoor(record(.doorClosed))
    t.noteDoor(record(.doorLocked))
    #expect(state(link).contains(#""door_contact":"OFF""#) && state(link).contains(#""lock":"LOCKED""#))
    t.noteDoor(record(.doorForced))
    #expect(state(link).contains(#""door_contact":"ON""#) && state(link).contains(#""lock":"LOCKED""#))
    t.noteDoor(record(.tamper, code: 1))
    #expect(state(link).contains(#""tamper":"ON""#))
    t.noteDoor(record(.tamper, code: 0))
    #expect(state(link).contains(#""tamper":"OFF""#))
    // A decision's record is not a door record.
    t.noteDoor(record(.decision))
    #expect(state(link).contains(#""door_contact":"ON""#))
  }
}
