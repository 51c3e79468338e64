import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The whole service built in this process by its composition root (`Service.run`, what `run`,
/// `demo` and `soak` use): replayed frames, the allow-list, simulated GPIO, the audit log; the
/// decisions it logged are read back from the log's file.
@Suite struct ServiceInProcessTests {
  @Test("Service.run in process: a listed code granted and an unknown one denied, both in the audit log in order")
  func runsInProcess() throws {
    let dir = temporaryDirectory("inproc")
    defer { removeTree(dir) }
    let (config, options) = replayReader(dir, frames: 40, shows: [(10..<16, "ALICE-0001"), (28..<34, "MALLORY-9999")])
    #expect(Service.run(config, options: options) == 0)

    var decisions: [AuditRecord] = []
    try AuditStore(path: dir + "/audit.db", readOnly: true).read { if $0.kind == .decision { decisions.append($0) } }
    #expect(decisions.count == 2, "\(decisions.map(\.line))")
    #expect(decisions.first?.verdict == .granted && decisions.first?.label == "alice")
    #expect(decisions.last?.verdict == .deniedUnknown && decisions.last?.label == "")
    #expect(try AuditStore(path: dir + "/audit.db", readOnly: true).head.sequence >= 2)
  }

  /// The same replay (alice shown once) through `Service.run` with the emergencies wired.
  static func runWithEmergency(_ dir: String, fireAtStart: Bool, latch: [UInt8]?) throws -> [AuditRecord] {
    let (config, options0) = replayReader(dir, frames: 30, shows: [(8..<14, "ALICE-0001")], latch: latch)
    var options = options0
    options.emergencyLines = EmergencySetup.SimulatedLines(fire: SimulatedInputLine(level: fireAtStart ? .active : .inactive))
    #expect(Service.run(config, options: options) == 0)
    var records: [AuditRecord] = []
    try AuditStore(path: dir + "/audit.db", readOnly: true).read { records.append($0) }
    return records
  }

  @Test("a console lockdown kept in the state directory holds across a restart: alice is denied-lockdown, logged")
  func lockdownAcrossRestart() throws {
    let dir = temporaryDirectory("inproc-lockdown")
    defer { removeTree(dir) }
    var latch = [UInt8](repeating: 0, count: LockdownLatch.encodedBytes)
    let who = Array("uid 0".utf8)
    latch.withUnsafeMutableBytes { out in
      who.withUnsafeBytes { LockdownLatch(authority: .console, who: $0, sinceUnixSeconds: 1_796_000_000).encode(into: out) }
    }
    let records = try Self.runWithEmergency(dir, fireAtStart: false, latch: latch)
    let decisions = records.filter { $0.kind == .decision }
    #expect(decisions.map(\.verdict) == [.deniedLockdown] && decisions.first?.label == "alice", "\(records.map(\.line))")
  }

  @Test("the fire input active at start: logged, and it overrides a lockdown (alice granted)")
  func fireOverridesLockdown() throws {
    let dir = temporaryDirectory("inproc-fire")
    defer { removeTree(dir) }
    var latch = [UInt8](repeating: 0, count: LockdownLatch.encodedBytes)
    latch.withUnsafeMutableBytes { out in
      LockdownLatch(authority: .console, who: UnsafeRawBufferPointer(start: nil, count: 0), sinceUnixSeconds: 1).encode(into: out)
    }
    let records = try Self.runWithEmergency(dir, fireAtStart: true, latch: latch)
    #expect(records.contains { $0.kind == .fireAlarm && $0.code == 1 }, "\(records.map(\.line))")
    #expect(records.filter { $0.kind == .decision }.map(\.verdict) == [.granted])
  }

  @Test("a damaged lockdown latch starts the reader locked down (fail-secure)")
  func damagedLatch() throws {
    let dir = temporaryDirectory("inproc-latch")
    defer { removeTree(dir) }
    let records = try Self.runWithEmergency(dir, fireAtStart: false, latch: [UInt8](repeating: 0xFF, count: 48))
    #expect(records.filter { $0.kind == .decision }.map(\.verdict) == [.deniedLockdown], "\(records.map(\.line))")
  }
}
