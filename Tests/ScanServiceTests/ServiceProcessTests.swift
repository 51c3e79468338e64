import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The built `scangate` binary, run as a technician would run it.
@Suite(.serialized) struct ServiceProcessTests {
  /// A config for a replayed code that is on the list, with simulated GPIO. It decodes on the
  /// loop's thread (`isolation = "inline"`), as the other tests that start the service do unless
  /// the workers are what they test: each start of the two workers warms them up (~2 s of CPU in
  /// a debug build), which a suite that starts the service a few hundred times pays over and
  /// over. The worker processes are tested in DecoderWorkerTests, the two-camera test below and
  /// the fault stage's decoder.py.
  func setUp(pulse: Int = 20_000, log: Bool = false) -> (String, String) {
    replayReader("svc", payload: "ALICE-0001", allowList: "text:ALICE-0001 label=alice\n") { dir in
      """
      relay_pulse_ms = \(pulse)
      relay_pulse_ms_max = \(pulse)
      [log]
      path = "\(log ? dir + "/audit.db" : "")"
      commit_interval_ms = 50
      [decoder]
      isolation = "inline"
      [console]
      listen = ["127.0.0.1:0"]
      secret_file = "\(dir)/secret"
      """
    }
  }

  /// With the console on, the loop has helper threads: a signal must still reach the loop.
  @Test("SIGTERM mid-pulse: the relay is driven inactive before the process exits 0", arguments: [SIGTERM, SIGINT])
  func signalReleasesRelay(signal: Int32) {
    let (dir, config) = setUp()
    defer { removeTree(dir) }
    let child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("edge relay active"), "\(child.output)")
    kill(child.pid, signal)
    #expect(child.wait(timeoutSeconds: 60) == 0)
    let output = child.output
    let lines = output.split(separator: "\n")
    let active = lines.firstIndex { $0.hasSuffix("edge relay active") }
    let inactive = lines.firstIndex { $0.hasSuffix("edge relay inactive") }
    let stopping = lines.firstIndex { $0.hasSuffix("state stopping") }
    #expect(active != nil && inactive != nil && active! < inactive!, "\(output)")
    // The release happens on the way out, not because the 20 s pulse ended.
    #expect(stopping != nil && inactive! > stopping!, "\(output)")
    // The journal shows label and digest, never the pass itself (log.raw_payloads is off).
    #expect(output.contains("decision granted qr label=alice tag="))
    #expect(!output.contains("ALICE-0001"), "\(output)")
    #expect(output.contains("state stopping"))
  }

  @Test("SIGHUP reloads the allow-list")
  func hangupReloads() {
    let (dir, config) = setUp(pulse: 100)
    defer { removeTree(dir) }
    writeFile(dir + "/config.toml", (try! String(decoding: readWholeFile(config, maxBytes: 1 << 16), as: UTF8.self)) + "\n")
    let child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("state started"))
    // Break the file without inotify noticing (watch is on, so this also exercises the
    // rejected-reload path), then fix it and send SIGHUP.
    writeFile(dir + "/allow-list.txt", "text:ALICE-0001\nnot an entry\n")
    #expect(child.waitForOutput("fault allow-list-rejected"))
    writeFile(dir + "/allow-list.txt", "text:BOB\n")
    kill(child.pid, SIGHUP)
    #expect(child.waitForOutput("state allow-list-loaded"))
    kill(child.pid, SIGTERM)
    #expect(child.wait() == 0)
  }

  @Test("the audit log end to end: LOG on the console, scangate log and log verify")
  func auditLog() {
    let (dir, config) = setUp(pulse: 100, log: true)
    defer { removeTree(dir) }
    let child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted"))
    let port =
      child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?
      .split(separator: ":").last.map(String.init) ?? "0"
    usleep(300_000)
    let (refused, denied) = runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--command", "LOG 5"])
    #expect(refused == 1 && denied.contains("ERR 401"), "LOG needs AUTH: \(denied)")
    let (status, reply) = runCommand([
      scangateBinary, "console", "--tcp", "127.0.0.1:" + port,
      "--secret-file", dir + "/secret", "--command", "LOG 5",
    ])
    #expect(status == 0, "\(reply)")
    #expect(reply.contains("decision granted qr label=alice"))
    #expect(reply.contains("OK log"))
    // STATUS publishes the chain head; after the stop, the log still contains it.
    let (_, statusReply) = runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--command", "STATUS"])
    let head =
      ConsoleLayout.join(statusReply).split(separator: "\n").compactMap { line -> String? in
        guard let range = line.firstRange(of: "chain head ") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != ";" && $0 != " " })
      }.first ?? ""
    #expect(PublishedChainHead(head) != nil, "\(statusReply)")
    kill(child.pid, SIGTERM)
    #expect(child.wait() == 0)
    let (verifyStatus, verifyOutput) = runCommand([scangateBinary, "log", "verify", "--db", dir + "/audit.db", "--head", head])
    #expect(verifyStatus == 0 && verifyOutput.contains("keyed chain intact"), "\(verifyOutput)")
    let (_, json) = runCommand([scangateBinary, "log", "--json", "--db", dir + "/audit.db"])
    #expect(json.contains(#""kind":"decision","verdict":"granted""#))
    #expect(
      json.contains(#""kind":"command""#) && json.contains(#""payload":"LOG 5""#)
        && json.contains(#""payload":"AUTH ok""#), "escaped once, where it leaves: \(json)")
    #expect(json.contains(#""detail":"stopping""#))
    // --limit N: the newest N, oldest first, as the console's LOG N (the last record is the stop's).
    let all = runCommand([scangateBinary, "log", "--db", dir + "/audit.db"]).1.split(separator: "\n")
    let newest = runCommand([scangateBinary, "log", "--db", dir + "/audit.db", "--limit", "2"]).1.split(separator: "\n")
    #expect(all.count > 4 && newest == Array(all.suffix(2)), "\(newest) of \(all.suffix(3))")
    #expect(!json.contains("ALICE-0001"))  // no raw payloads unless configured
    #expect(!json.contains("horse"))  // the secret is never recorded
  }

  @Test("scangate snapshot over the console: a PNG of the frame, and the text view")
  func snapshotCommand() {
    let (dir, config) = setUp(pulse: 100)
    defer { removeTree(dir) }
    let child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted"))
    let port =
      child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?
      .split(separator: ":").last.map(String.init) ?? "0"
    var (status, output) = runCommand([scangateBinary, "snapshot", "--tcp", "127.0.0.1:" + port, "--out", dir + "/snap.png"])
    #expect(status == 1 && output.contains("ERR 401"), "a frame shows the pass: SNAPSHOT needs AUTH: \(output)")
    (status, output) = runCommand([
      scangateBinary, "snapshot", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret",
      "--out", dir + "/snap.png",
    ])
    #expect(status == 0, "\(output)")
    let image = try? ImageFileReader().read(dir + "/snap.png")
    #expect(image?.width == 640 && image?.height == 480)
    (status, output) = runCommand([
      scangateBinary, "snapshot", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret",
      "--text",
    ])
    #expect(status == 0)
    #expect(output.contains("code 1 qr granted") && output.contains("payload=ALICE-0001"))
    #expect(output.split(separator: "\n").filter { $0.count == 78 }.count == 40)  // with `| `, 80 columns
    kill(child.pid, SIGTERM)
    #expect(child.wait() == 0)
  }

  @Test("systemd: READY=1 with a STATUS, WATCHDOG=1 while the loop turns, silence when it stalls")
  func watchdog() {
    let (dir, config) = setUp(pulse: 100)
    defer { removeTree(dir) }
    let socketPath = dir + "/notify.sock"
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in socketPath.utf8.enumerated() { raw[i] = b } }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    #expect(bound == 0)
    defer { close(fd) }
    let child = Child.start(
      [scangateBinary, "run", "--config", config],
      environment: ["NOTIFY_SOCKET=\(socketPath)", "WATCHDOG_USEC=400000"])
    /// Datagrams received within `milliseconds`.
    func receive(_ milliseconds: Int) -> [String] {
      var got: [String] = []
      var buffer = [UInt8](repeating: 0, count: 1024)
      let end = SystemMonotonicClock().now().adding(milliseconds: milliseconds)
      while SystemMonotonicClock().now() < end {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 20) > 0 else { continue }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { got.append(String(decoding: buffer[0..<n], as: UTF8.self)) }
      }
      return got
    }
    var messages = receive(3_000)
    #expect(messages.contains { $0.hasPrefix("READY=1\nSTATUS=camera streaming") }, "\(messages)")
    messages = receive(1_000)
    let pets = messages.filter { $0 == "WATCHDOG=1" }.count
    #expect(pets >= 3, "\(pets) watchdog messages in 1 s with a 400 ms watchdog")
    kill(child.pid, SIGSTOP)  // the loop stops turning, as a hung driver call would
    _ = receive(300)
    let afterStall = receive(1_000).filter { $0 == "WATCHDOG=1" }.count
    #expect(afterStall == 0, "a stalled loop must stop petting the watchdog (systemd then restarts it)")
    kill(child.pid, SIGKILL)
    _ = child.wait()
  }

  @Test("check-config names the key and line of every error")
  func checkConfigErrors() {
    let dir = temporaryDirectory("cfg")
    defer { removeTree(dir) }
    writeFile(dir + "/bad.toml", "[camera]\nwidth = 99999\nfsp = 30\n[gpio]\nrelay_line = \"x\"\n")
    let (status, output) = runCommand([scangateBinary, "check-config", "--config", dir + "/bad.toml"])
    #expect(status == 1)
    #expect(output.contains("line 2: camera.width: wants an integer in 160...4096, got 99999"))
    #expect(output.contains("line 3: camera.fsp: unknown key"))
    #expect(output.contains("line 5: gpio.relay_line: wants an integer"))
  }

  @Test("the repository's config.toml is valid and matches the built-in defaults")
  func shippedConfig() throws {
    let config = try ConfigLoader.load(path: packageRoot + "/config.toml")
    #expect(config == ScanConfig())
  }

  @Test("decode: one line per code, a clear error per unreadable file, exit 1 when any failed")
  func decodeCommand() {
    let dir = temporaryDirectory("dec")
    defer { removeTree(dir) }
    _ = writePNG(path: dir + "/a.png", pixels: qrFrame("HELLO").pixels, width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/blank.png", pixels: [UInt8](repeating: 255, count: 64 * 64), width: 64, height: 64, components: 1)
    writeFile(dir + "/bad.png", "not a png")
    var (status, output) = runCommand([scangateBinary, "decode", dir + "/a.png", dir + "/blank.png"])
    #expect(status == 0)
    #expect(output.contains("a.png: qr text HELLO"))
    #expect(output.contains("blank.png: no code found"))
    (status, output) = runCommand([scangateBinary, "decode", "--json", dir + "/a.png", dir + "/bad.png", dir + "/missing.png"])
    #expect(status == 1)
    #expect(output.contains(#""format":"qr","kind":"text","text":"HELLO""#))
    #expect(output.contains("bad.png: not a JPEG, PNG, PNM, GIF or BMP image"))
    #expect(output.contains("missing.png: No such file or directory"))
  }

  @Test("the demo runs the real loop on simulated GPIO and prints every decision")
  func demo() {
    let (status, output) = runCommand([scangateBinary, "demo", "--port", "0", "--fps", "60"], timeoutSeconds: 120)
    #expect(status == 0, "\(output)")
    // The view that read a code ("[inverted]", "[mirrored]") depends on the engine (1.4 needs the
    // inverted view for dave's dark-mode phone, 2.x does not) and, with the decode budget, on
    // how loaded the machine is: a decision line is matched by its verdict and what follows.
    let lines = output.split(separator: "\n")
    func decided(_ verdict: String, _ rest: String) -> Bool {
      lines.contains { $0.contains("decision \(verdict) qr") && $0.contains(rest) }
    }
    #expect(decided("granted", "label=alice payload=ALICE-0001"), "\(output)")
    #expect(decided("denied-unknown", "payload=MALLORY-9999"), "\(output)")
    #expect(decided("granted", "label=dave payload=DAVE-0004"), "\(output)")
    #expect(decided("denied-expired", "label=bob"), "\(output)")
    #expect(decided("denied-not-yet-valid", "label=carol"), "\(output)")
    #expect(output.contains("payload=EVIL%0D%0AOK%20%1B[2J"))
    #expect(!output.contains("\u{1b}"))
    #expect(output.contains("edge relay active"))
  }

  @Test("demo --turnstile: an entry, the same pass refused again, a grant nobody used, an exit, and the fire release")
  func demoTurnstile() {
    let (status, output) = runCommand([scangateBinary, "demo", "--port", "0", "--turnstile", "--fps", "30"], timeoutSeconds: 120)
    #expect(status == 0, "\(output)")
    let lines = output.split(separator: "\n").map(String.init)
    /// The first line after `from` containing every one of `parts`, or nil.
    func find(_ parts: [String], after from: Int = -1) -> Int? {
      lines.indices.first { $0 > from && parts.allSatisfy(lines[$0].contains) }
    }
    let granted = find(["decision granted", "label=alice"])
    let entered = find(["passage entry grant label=alice"], after: granted ?? -1)
    let refused = find(["decision denied-passback", "label=alice"], after: entered ?? -1)
    let erin = find(["decision granted", "label=erin"], after: refused ?? -1)
    let unused = find(["granted-not-passed entry grant label=erin"], after: erin ?? -1)
    let left = find(["passage exit grant label=alice"], after: refused ?? -1)
    let fire = find(["fire-alarm active"], after: left ?? -1)
    #expect(granted != nil && entered != nil && refused != nil && erin != nil && unused != nil && left != nil, "\(output)")
    // The turnstile's own count after each passage: 1 once alice is in, 0 once she has left.
    #expect(find(["occupancy 1 in area demo (after the entry)"], after: entered ?? -1) == (entered ?? -2) + 1, "\(output)")
    #expect(find(["occupancy 0 in area demo (after the exit)"], after: left ?? -1) == (left ?? -2) + 1, "\(output)")
    #expect(fire != nil && find(["turnstile-unlocked exit fire"], after: fire!) != nil && find(["edge relay active"], after: fire!) != nil)
    let cleared = find(["fire-alarm cleared"], after: fire ?? -1)
    #expect(cleared != nil && find(["turnstile-locked entry fire"], after: cleared ?? -1) != nil)
    #expect(find(["edge relay active"]) == nil || find(["edge relay active"])! > (fire ?? .max), "a grant never pulses the relay")
  }

  @Test(
    "two cameras on one reader (camera.second, a turnstile's direction by camera), in phase, each decode longer than a frame: the first's code enters, the second's exits"
  )
  func twoCameras() {
    let dir = temporaryDirectory("svc-cameras")
    defer { removeTree(dir) }
    for (folder, payload) in [("entry", "ALICE-0001"), ("exit", "BOB-0002")] {
      _ = mkdir(dir + "/" + folder, 0o755)
      _ = writePNG(path: dir + "/\(folder)/1.png", pixels: qrFrame(payload).pixels, width: 640, height: 480, components: 1)
    }
    writeFile(dir + "/allow-list.txt", "text:ALICE-0001 label=alice\ntext:BOB-0002 label=bob\n")
    writeFile(
      dir + "/config.toml",
      """
      [camera]
      source = "replay"
      replay_path = "\(dir)/entry"
      second = "\(dir)/exit"
      replay_fps = 20
      [allow_list]
      path = "\(dir)/allow-list.txt"
      [gpio]
      backend = "sim"
      [state]
      directory = "\(dir)"
      [log]
      path = "\(dir)/audit.db"
      [console]
      listen = []
      [turnstile]
      enabled = true
      direction = "camera"
      passback = "off"
      """)
    // The cameras in phase at 20 fps, and every decode made 60 ms longer (a debug build's test
    // hook): longer than a frame on any machine, so the exit camera's frame always came while
    // the entry's decode ran (wave 3: 40 decodes, 40 skipped, the exit never granted). 160 frames.
    let (status, output) = runCommand(
      ["/usr/bin/env", "SCANGATE_DECODER_TEST_HOOKS=slow", scangateBinary, "run", "--config", dir + "/config.toml", "--frames", "160"],
      timeoutSeconds: 180)
    #expect(status == 0, "\(output)")
    let lines = output.split(separator: "\n").map(String.init)
    /// The first `turnstile-unlocked` line after `who`'s granted decision.
    func unlockAfter(_ who: String) -> String? {
      guard let granted = lines.firstIndex(where: { $0.contains("decision granted") && $0.contains("label=" + who) }) else { return nil }
      return lines[(granted + 1)...].first { $0.contains("turnstile-unlocked") }
    }
    #expect(unlockAfter("alice")?.contains("turnstile-unlocked entry grant") == true, "\(output)")
    #expect(unlockAfter("bob")?.contains("turnstile-unlocked exit grant") == true, "\(output)")
    #expect(!lines.contains { $0.contains("camera-lost") }, "\(output)")
  }

  @Test("check-config: a second camera needs a turnstile's camera direction, and libcamera takes one camera per reader")
  func secondCameraRefused() {
    let dir = temporaryDirectory("svc-second")
    defer { removeTree(dir) }
    writeFile(dir + "/a.toml", "[camera]\nsecond = \"/dev/video2\"\n")
    var (status, output) = runCommand([scangateBinary, "check-config", "--config", dir + "/a.toml"])
    #expect(status != 0 && output.contains("camera.second") && output.contains("turnstile.direction = \"camera\""), "\(output)")
    writeFile(dir + "/b.toml", "[camera]\nsource = \"libcamera\"\nsecond = \"cam2\"\n[turnstile]\nenabled = true\ndirection = \"camera\"\n")
    (status, output) = runCommand([scangateBinary, "check-config", "--config", dir + "/b.toml"])
    #expect(status != 0 && output.contains("run a reader per camera"), "\(output)")
    writeFile(dir + "/c.toml", "[turnstile]\nenabled = true\ndirection = \"camera\"\n")
    (status, output) = runCommand([scangateBinary, "check-config", "--config", dir + "/c.toml"])
    #expect(status != 0 && output.contains("needs camera.second"), "\(output)")
  }
}
