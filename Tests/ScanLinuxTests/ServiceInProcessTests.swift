import Glibc
import ScanCore
import ScanLinux
import ScanService
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
}
