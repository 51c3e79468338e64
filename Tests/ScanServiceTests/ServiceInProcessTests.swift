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
    _ = mkdir(dir + "/frames", 0o700)
    let blank = GrayImage(width: 640, height: 480, pixels: [UInt8](repeating: 190, count: 640 * 480))
    let alice = qrFrame("ALICE-0001"), mallory = qrFrame("MALLORY-9999")
    for i in 0..<40 {
      let image = (10..<16).contains(i) ? alice : (28..<34).contains(i) ? mallory : blank
      let name = dir + "/frames/" + (i < 10 ? "0" : "") + "\(i).png"
      #expect(writePNG(path: name, pixels: image.pixels, width: 640, height: 480, components: 1))
    }
    writeFile(dir + "/allow.txt", "text:ALICE-0001 label=alice\n")
    var config = ScanConfig()
    config.cameraSource = .replay
    config.replayPath = dir + "/frames"
    config.replayFPS = 30
    config.replayLoop = false
    config.gpioBackend = .sim
    config.allowListPath = dir + "/allow.txt"
    config.log.path = dir + "/audit.db"
    config.stateDirectorySetting = dir
    config.consoleListen = []
    config.decoderIsolation = .inline  // this test binary is not the scangate executable workers run
    var options = Service.Options()
    options.quiet = true
    options.handleSignals = false
    #expect(Service.run(config, options: options) == 0)

    var decisions: [AuditRecord] = []
    try AuditStore(path: dir + "/audit.db", readOnly: true).read { if $0.kind == .decision { decisions.append($0) } }
    #expect(decisions.count == 2, "\(decisions.map(\.line))")
    #expect(decisions.first?.verdict == .granted && decisions.first?.label == "alice")
    #expect(decisions.last?.verdict == .deniedUnknown && decisions.last?.label == "")
    #expect(try AuditStore(path: dir + "/audit.db", readOnly: true).head.sequence >= 2)
  }

  /// The same replay (alice shown twice) through `Service.run` with the emergencies wired.
  static func runWithEmergency(_ dir: String, fireAtStart: Bool, latch: [UInt8]?) throws -> [AuditRecord] {
    _ = mkdir(dir + "/frames", 0o700)
    let blank = GrayImage(width: 640, height: 480, pixels: [UInt8](repeating: 190, count: 640 * 480))
    let alice = qrFrame("ALICE-0001")
    for i in 0..<30 {
      let image = (8..<14).contains(i) ? alice : blank
      #expect(writePNG(path: dir + "/frames/" + (i < 10 ? "0" : "") + "\(i).png", pixels: image.pixels, width: 640, height: 480, components: 1))
    }
    writeFile(dir + "/allow.txt", "text:ALICE-0001 label=alice\n")
    if let latch { writeFile(dir + "/lockdown", bytes: latch) }
    var config = ScanConfig()
    config.cameraSource = .replay
    config.replayPath = dir + "/frames"
    config.replayFPS = 30
    config.replayLoop = false
    config.gpioBackend = .sim
    config.allowListPath = dir + "/allow.txt"
    config.log.path = dir + "/audit.db"
    config.stateDirectorySetting = dir
    config.consoleListen = []
    config.decoderIsolation = .inline
    var options = Service.Options()
    options.quiet = true
    options.handleSignals = false
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
