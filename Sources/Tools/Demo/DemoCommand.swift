import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim

/// `scangate demo`: the real loop on a machine with no camera or GPIO. It generates QR codes
/// (some on the allow-list, some not, some inverted or mirrored as phone screens show them),
/// writes them as 640×480 frames and an allow-list into a temporary folder, replays them through
/// the same engine and loop `run` uses, drives simulated GPIO, and prints each decision and edge.
public enum DemoCommand {
  struct Scene {
    var payload: [UInt8]
    var variant: ImageVariant
    var note: String
  }

  static let scenes: [Scene] = [
    Scene(payload: Array("ALICE-0001".utf8), variant: .upright, note: "on the list"),
    Scene(payload: Array("MALLORY-9999".utf8), variant: .upright, note: "not on the list"),
    Scene(payload: Array("DAVE-0004".utf8), variant: .inverted, note: "on the list, dark-mode phone (light on dark)"),
    Scene(payload: Array("BOB-0002".utf8), variant: .upright, note: "on the list, pass expired"),
    Scene(payload: Array("ERIN-0005".utf8), variant: .mirrored, note: "on the list, mirrored"),
    Scene(payload: Array("CAROL-0003".utf8), variant: .upright, note: "on the list, not valid yet"),
    Scene(payload: Array("EVIL\r\nOK \u{1b}[2J".utf8), variant: .upright, note: "not on the list, control characters (shown escaped)"),
  ]

  static let allowList = """
    # ScanGate demo allow-list (format: docs/allow-list.md)
    text:ALICE-0001 label=alice card=26:212:7041
    text:DAVE-0004  label=dave card=26:212:7044
    text:BOB-0002   label=bob until=2020-01-01T00:00:00Z card=26:212:7042
    text:ERIN-0005  label=erin card=37:1000:70045
    text:CAROL-0003 label=carol from=2099-01-01T00:00:00Z card=26:212:7043

    """

  public static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(
        arguments, valued: ["config", "fps", "dir", "frames", "snapshot", "port"], known: ["keep", "panel", "bench", "trace", "turnstile"])
      if let prefix = options.value("snapshot") { return try snapshot(prefix: prefix) }
      let fps = try options.integer("fps", default: 15, range: 1...240)
      if options.flag("bench") { return try bench(fps: fps, trace: options.flag("trace")) }
      guard var config = baseConfig(options) else { return 1 }
      let directory = try prepareDirectory(options.value("dir"))
      let width = 640, height = 480
      let port = try options.integer("port", default: 4570, range: 0...65535)
      var demoConsole = options.value("config") == nil
      let turnstile = options.flag("turnstile")
      let extra = demoConsole && !turnstile ? try DemoCredentials.prepare(in: directory, config: &config) : []
      let list = turnstile ? DemoTurnstile.scenes : scenes
      let index = try writeScenes(
        to: directory, fps: fps, width: width, height: height, extra: extra, list: list,
        trailingSeconds: turnstile ? 5 : 0)
      let panelMode = options.flag("panel")
      try configure(
        &config, directory: directory, fps: fps, width: width, height: height, turnstile: turnstile, panel: panelMode, demoConsole: demoConsole)
      print("ScanGate demo: \(index) frames of \(width)x\(height) at \(fps) fps from \(directory), simulated GPIO")
      if demoConsole { demoConsole = listen(&config, port: port) }
      printIntroduction(config, codes: list + extra, turnstile: turnstile, panel: panelMode, demoConsole: demoConsole, port: port)
      var panel: DemoPanel? = nil
      if panelMode { panel = try startPanel(&config) }
      defer { panel?.stop() }
      flushStandardOutput()
      var serviceOptions = Service.Options()
      serviceOptions.maxFrames = UInt64(try options.integer("frames", default: 0, range: 0...Int.max))
      // In panel mode the panel drives the door and watches its contact: the reader has no door.
      if !panelMode { serviceOptions.doorDriver = { DemoDoor.Driver(lines: $0, ring: $1) } }
      if turnstile {
        let emergency = EmergencySetup.SimulatedLines()
        serviceOptions.emergencyLines = emergency
        serviceOptions.turnstileDriver = { DemoTurnstile.Driver($0, fire: emergency.fire) }
      }
      let status = Service.run(config, options: serviceOptions)
      if !options.flag("keep") && options.value("dir") == nil { removeDirectory(directory) }
      return status
    } catch let error as FileError {
      writeStandardError("scangate demo: \(error)\n")
      return 1
    } catch {
      writeStandardError("scangate demo: \(error)\n")
      return 2
    }
  }

  /// The configuration `--config` names, or (without one) the defaults with payloads logged;
  /// nil after printing why the named one could not be loaded.
  static func baseConfig(_ options: Options) -> ScanConfig? {
    var config = ScanConfig()
    if options.value("config") != nil {
      guard let loaded = loadConfig(options) else { return nil }
      config = loaded
    } else {
      // The demo's passes are made up: show what was read (a site's config keeps it off).
      config.log.rawPayloads = true
    }
    return config
  }

  /// The demo's folder: `--dir` (made if missing) or a new temporary one.
  static func prepareDirectory(_ dir: String?) throws(ParseError) -> String {
    let directory = dir ?? makeTemporaryDirectory()
    if !isDirectory(directory) {
      do { _ = try syscall("mkdir \(directory)", { mkdir(directory, 0o755) }) } catch {
        throw ParseError(message: "\(directory): \(error.code)")
      }
    }
    return directory
  }

  /// Replay from `directory`, simulated GPIO, the door's or the turnstile's settings and (for
  /// the demo's own console) an operator secret made for this run.
  static func configure(
    _ config: inout ScanConfig, directory: String, fps: Int, width: Int, height: Int, turnstile: Bool, panel: Bool = false,
    demoConsole: Bool
  ) throws {
    config.camera.source = .replay
    config.camera.replayPath = directory
    config.camera.replayFPS = fps
    config.camera.replayLoop = false
    config.camera.width = width
    config.camera.height = height
    config.gpio.backend = .sim
    config.allowListPath = directory + "/allow-list.txt"
    config.allowListWatch = false
    config.log.path = directory + "/audit.db"
    if turnstile { DemoTurnstile.configure(&config) } else if !panel { DemoDoor.configure(&config) }
    if demoConsole {
      // The console on loopback with an operator secret made for this run only (random,
      // in a 0600 file in the demo's folder), so a newcomer can try every command.
      let secret = SecretBytes.random(16)
      config.console.secretFile = directory + "/operator-secret"
      try SecretFile.create(config.console.secretFile, Array((Hex.string(secret) + "\n").utf8))
    }
  }

  /// The demo's console on 127.0.0.1:`port` (0: any free port, said when it listens), unless
  /// something already answers there (another reader, another demo): then the demo runs without
  /// it and says so, rather than print how to reach a console that is someone else's.
  static func listen(_ config: inout ScanConfig, port: Int) -> Bool {
    if port != 0, let fd = try? connectTCP("127.0.0.1:\(port)") {
      closeDescriptor(fd)
      print("console: 127.0.0.1:\(port) is in use (another reader or demo): this demo runs without its console; --port N picks another")
      config.console.listen = []
      return false
    }
    config.console.listen = ["127.0.0.1:\(port)"]
    return true
  }

  /// The decoder and its views, each code shown with what it is, the door's or turnstile's
  /// story and (for the demo's own console) how to reach it.
  static func printIntroduction(
    _ config: ScanConfig, codes: [Scene], turnstile: Bool, panel: Bool = false, demoConsole: Bool, port: Int = 4570
  ) {
    print(
      "decoder \(ZXingDecoder.engineVersion), views \(config.engine.decode.variantMode.rawValue) over "
        + config.engine.decode.variants.map(\.name).joined(separator: ","))
    for scene in codes {
      let shown = scene.payload.count > 32 ? Array(scene.payload.prefix(20)) + Array("...".utf8) : scene.payload
      print("  code " + PayloadEscaping.escaped(shown) + " (\(scene.variant.name)): \(scene.note)")
    }
    let panelNotes = [
      "panel: the reader sends each code to the panel as a card number; the panel decides, drives the door and lights the reader's LED"
    ]
    for note in turnstile ? DemoTurnstile.notes : panel ? panelNotes : DemoDoor.notes { print("  " + note) }
    if demoConsole {
      // The default port needs no --tcp; another is named (0: the port the console says it took).
      let tcp = port == 4570 ? "" : "--tcp 127.0.0.1:\(port == 0 ? "PORT" : String(port)) "
      print(
        """
        console: in a second terminal, while the demo runs (a lower --fps, e.g. 5, gives more time)\(port == 0 ? ",\n  PORT as 'console listening on' says" : ""):
          scangate console \(tcp)--command STATUS
          scangate console \(tcp)--command 'WATCH ON'          (decisions by label and digest)
          scangate console \(tcp)--secret-file \(config.console.secretFile) --command 'LAST 5'   (as operator: payloads)
          scangate snapshot \(tcp)--secret-file \(config.console.secretFile) --text
        """)
    }
  }

  /// `--panel`: panel mode against a simulated panel on a pty pair, started; the reader
  /// forwards card numbers and never drives its relay.
  static func startPanel(_ config: inout ScanConfig) throws -> DemoPanel {
    let simulated = try DemoPanel()
    config.panel.mode = .panel
    config.panel.osdpPort = simulated.slavePath
    config.panel.enforceSecure = false
    print("panel mode: a simulated OSDP panel on \(simulated.slavePath) (plain OSDP, no key: a demo only)")
    simulated.start()
    return simulated
  }

  /// Writes the scenes as PGM frames (each code in view 0.6 s, then 1 s of empty view so it
  /// leaves) and the demo's allow-list into `directory`; returns the frame count.
  static func writeScenes(
    to directory: String, fps: Int, width: Int, height: Int, extra: [Scene] = [], list: [Scene] = scenes,
    trailingSeconds: Int = 0
  ) throws(FileError) -> Int {
    // Each code stays in view for 0.6 s, then the view is empty for 1 s (so it leaves).
    let codeFrames = max(3, fps * 6 / 10), gapFrames = max(2, fps)
    var index = 0
    func emit(_ pixels: [UInt8]) throws(FileError) {
      index += 1
      let name = directory + "/frame-" + String(100_000 + index).dropFirst() + ".pgm"
      var bytes = Array("P5\n\(width) \(height)\n255\n".utf8)
      bytes += pixels
      try writeFileAtomically(name, bytes)
    }
    let (empty, shown) = sceneFrames(width: width, height: height, extra: extra, list: list)
    for _ in 0..<gapFrames { try emit(empty) }
    for (n, item) in shown.enumerated() {
      // The same code again: past the presence cooldown, so it is a new showing (a replay).
      if n > 0 && shown[n - 1].scene.payload == item.scene.payload { for _ in 0..<(2 * fps) { try emit(empty) } }
      for _ in 0..<codeFrames { try emit(item.frame) }
      for _ in 0..<gapFrames { try emit(empty) }
    }
    for _ in 0..<(trailingSeconds * fps) { try emit(empty) }
    try writeFileAtomically(directory + "/allow-list.txt", Array(allowList.utf8))
    return index
  }

  /// The empty view and each scene's frame, in the order they are shown.
  static func sceneFrames(
    width: Int, height: Int, extra: [Scene] = [], list: [Scene] = scenes
  ) -> (empty: [UInt8], shown: [(scene: Scene, frame: [UInt8])]) {
    let empty = background(width: width, height: height)
    var shown: [(scene: Scene, frame: [UInt8])] = []
    for (n, scene) in (list + extra).enumerated() {
      // Signed passes are longer: alphanumeric mode, smaller modules, so they fit the frame.
      let long = scene.payload.count > 64
      guard
        let code = long
          ? renderQRCode(text: String(decoding: scene.payload, as: UTF8.self), scale: 5)?.image
          : renderQRCode(scene.payload, scale: 7)
      else { continue }
      shown.append((scene, place(code, variant: scene.variant, on: empty, width: width, height: height, shift: long ? 60 : n * 23)))
    }
    return (empty, shown)
  }

  /// `--bench`: the demo's scenes (each code 0.6 s after 1 s of empty view, at `fps`) through
  /// the reader's engine in this process (`SceneHarness`: no loop, no decoder worker, every code
  /// on the allow-list), with the time from each code's first frame to its relay edge.
  static func bench(fps: Int, trace: Bool) throws -> Int32 {
    let width = 640, height = 480
    let directory = makeTemporaryDirectory()
    defer { removeDirectory(directory) }
    var config = ScanConfig()
    let extra = try DemoCredentials.prepare(in: directory, config: &config)
    let (empty, shown) = sceneFrames(width: width, height: height, extra: extra)
    let scenes = shown.map { item in
      let label = item.scene.payload.count > 24 ? Array(item.scene.payload.prefix(20)) + Array("...".utf8) : item.scene.payload
      return SceneHarness.Scene(
        name: PayloadEscaping.escaped(label) + " (\(item.scene.variant.name))", frame: item.frame, payloads: [item.scene.payload])
    }
    let (outcomes, figures) = try SceneHarness.play(
      scenes, width: width, height: height, empty: empty, fps: fps, holdMilliseconds: 600, gapMilliseconds: 1000,
      settings: config.engine, trace: trace)
    SceneHarness.report(outcomes, figures, fps: fps, budgetMicroseconds: config.engine.decode.budgetMicroseconds, each: true)
    return outcomes.allSatisfy(\.granted) ? 0 : 1
  }

  /// `--snapshot PREFIX`: one demo scene (a listed code, an unknown one, a region of interest)
  /// through the engine's snapshot capture and both renderers: PREFIX.png and PREFIX.txt.
  static func snapshot(prefix: String) throws -> Int32 {
    let width = 640, height = 480
    var frame = background(width: width, height: height)
    let alice = renderQRCode(Array("ALICE-0001".utf8), scale: 6)!
    let mallory = renderQRCode(Array("MALLORY\r\nOK".utf8), scale: 5)!
    frame = place(alice, variant: .upright, on: frame, width: width, height: height, shift: -40)
    for y in 0..<mallory.height {
      for x in 0..<mallory.width where 330 + x < width {
        frame[(300 + y) * width + 430 + x] = mallory.pixels[y * mallory.width + x] == 0 ? 30 : 235
      }
    }
    var settings = ScanConfig().engine
    settings.decode.region = Region(x: 40, y: 30, width: 560, height: 420)
    let clock = SystemMonotonicClock()
    var engine = ScanEngine(
      settings: settings, decoder: try ZXingDecoder(arenaBytes: 4 << 20, capacity: 8),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: SystemWallClock(), digester: SodiumDigester(), events: EventRing(capacity: 64),
      maxWidth: width, maxHeight: height)
    _ = engine.allowList.load(Array(allowList.utf8), digester: SodiumDigester(), nowUnixSeconds: SystemWallClock().unixSeconds())
    engine.captureSnapshot = true
    frame.withUnsafeBytes { raw in
      engine.process(LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: 1))
    }
    engine.snapshot.framesPerSecondTimes100 = 3000
    guard let png = SnapshotRenderer.png(engine.snapshot) else { throw ParseError(message: "the snapshot could not be encoded") }
    try writeFileAtomically(prefix + ".png", png)
    let text = withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer -> String in
      var w = ByteWriter(buffer)
      _ = SnapshotText.write(engine.snapshot, into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
    try writeFileAtomically(prefix + ".txt", Array(text.utf8))
    print("\(prefix).png, \(prefix).txt: \(engine.snapshot.symbolCount) codes")
    return 0
  }

  /// A softly lit wall: a gentle gradient, so frames are not flat white.
  static func background(width: Int, height: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height)
    for y in 0..<height {
      for x in 0..<width { pixels[y * width + x] = UInt8(170 + (x * 40) / width + (y * 20) / height) }
    }
    return pixels
  }

  /// Puts a code on the background as a phone would show it.
  static func place(_ code: GrayImage, variant: ImageVariant, on base: [UInt8], width: Int, height: Int, shift: Int) -> [UInt8] {
    var shown = code
    if variant.isMirrored { shown = shown.mirrored() }
    if variant.isInverted { shown = shown.inverted() }
    var out = base
    let ox = (width - shown.width) / 2 + shift - 60, oy = (height - shown.height) / 2
    for y in 0..<shown.height where y + oy >= 0 && y + oy < height {
      for x in 0..<shown.width where x + ox >= 0 && x + ox < width {
        let v = Int(shown.pixels[y * shown.width + x])
        out[(y + oy) * width + x + ox] = UInt8(v == 0 ? 25 : min(255, v - 10))  // a screen is never pure black
      }
    }
    return out
  }

  static func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/scangate-demo-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer in
      guard let p = mkdtemp(buffer.baseAddress!) else { return "/tmp" }
      return String(cString: p)
    }
  }

  static func removeDirectory(_ path: String) {
    guard let names = try? listDirectory(path) else { return }
    for name in names { removeFile(path + "/" + name) }
    _ = try? syscall("rmdir \(path)", { rmdir(path) })
  }
}
