import ScanConsole
import ScanCore
import Testing

/// Every console line fits an 80-column serial terminal (docs/console.md, "Replies"): long
/// lines are folded into indented continuation lines that join back to what was written.
@Suite struct ConsoleWidthTests {
  /// A reader with every optional STATUS line present and long values in each.
  static func fullReader() -> ReaderStatus {
    var s = ReaderStatus()
    s.version = "0.1.0"
    s.decoderVersion = "zxing-cpp 1.4.0"
    s.cameraState = "streaming"
    s.cameraSummary = "/dev/v4l/by-id/usb-Generic_HD_USB_Camera_SN0123456789-video-index0 1280x720 MJPG at 30 fps"
    s.cameraError = "VIDIOC_DQBUF: No such device (the camera was unplugged; reopening every 2 s)"
    s.framesPerSecondTimes100 = 2_990
    s.allowListVersion = 12
    s.allowListEntries = 1_200
    s.allowListLoadedAtUnixSeconds = 1_796_205_600
    s.allowListPinRefused = 3
    s.allowListError = AllowListError(line: 1_207, reason: "bad escape in text: payload (a % must be followed by two hex digits)")
    s.decoder = DecoderStats(
      decodes: 123_456_789, arenaAllocations: 1, arenaOverflows: 12, arenaHighWaterBytes: 3_456_789, arenaPinnedBytes: 65_536,
      arenaCapacityBytes: 4_194_304, engineErrors: 3)
    var workers = DecoderIsolationStats()
    workers.faulted = true
    workers.busy = true
    workers.restarts = 1_234_567
    workers.abandoned = 99_999
    workers.masked = MaskedRegion(x: 640, y: 360, width: 320, height: 180, tiles: 4)
    s.decoderWorkers = workers
    s.decoderLastCrash = "signal 11 (SIGSEGV) at 2026-12-02T10:00:00Z while decoding a 1280x720 frame"
    s.lastDecision = .deniedPassback
    s.lastDecisionAgeSeconds = 86_400
    s.console.tcpClients = 16
    s.console.localPeers = "unknown (sock_diag: Operation not permitted; the unit must allow AF_NETLINK)"
    s.console.serialPath = "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
    s.console.secretProblem = "/etc/scangate/console-secret: is readable by group or others (chmod 0600)"
    s.logLine =
      "/var/lib/scangate/sites/north-building/doors/loading-bay-3/audit.db (log af105b6f5808668d2f63e5be1b5cb30f); "
      + "8123456 records written, committed through #8123450, 6 waiting, 0 lost; FAULT: the disk is full "
      + "(a record could not be written: No space left on device); chain head 8123450:8c5c2672ee270e08"
    var door = DoorStatus()
    door.state = .heldOpen
    door.strikeActive = true
    door.unlockWindow = true
    door.contact = .active
    door.exitButton = .active
    door.tamper = .active
    door.alarm = .active
    door.backend = "gpiod v1 /dev/gpiochip0 lines 17 27 22 23 24"
    door.forcedCount = 123_456
    door.heldOpenCount = 654_321
    door.exitRequests = 9_999_999
    door.rawEdges = 88_888_888
    door.inputErrors = 7
    door.resyncs = 3
    s.door = door
    s.sections.append(StatusSection("emergency", "fire ACTIVE (input fire-panel), lockdown on (by uid 0 since 2026-12-02T10:00:00Z; LOCKDOWN OFF lifts it)"))
    s.sections.append(
      StatusSection(
        "turnstile",
        "held, grants go entry; entry locked 3 waiting 123456 passed; exit locked 0 waiting 654321 passed; "
          + "17 granted-not-passed, 2 forced; occupancy north-building 1234 of 1500; passback hard 98765 kept, 4321 refused"))
    s.sections.append(StatusSection("keypad", "wiegand-26 on lines 5 6, 1234 PINs entered, 56 wrong, 7 timed out; last key 2026-12-02T10:00:00Z"))
    s.sections.append(
      StatusSection(
        "fleet",
        "connected to broker.north-building.example.org:8883 as loading-bay-3 (TLS, client certificate); "
          + "acknowledged through #8123400 of log 8123450 (50 to send); last contact 2026-12-02T10:00:00Z; "
          + "problem: the broker refused the subscription to scangate/loading-bay-3/commands (not authorised: check its ACL)"))
    s.credentialsLine = "issuer keys 3 (site-2026, site-2027, visitor-desk), revocation version 42, 17 used passes kept, 5 rotating seeds"
    s.panelLine =
      "panel mode=panel osdp addr=5 baud=115200 online last_poll=12ms secure=up install_mode=\"ignored: a key is installed\" "
      + "last_card=26-bit facility 123 card 45678 at 2026-12-02T10:00:00Z"
    s.clock = ClockReport(
      wall: 1_796_205_600, floor: 1_796_292_000, synchronized: false,
      problem: "/var/lib/scangate/clock-floor: could not be written: Read-only file system (the floor is kept in memory)")
    s.uptimeSeconds = 12_345_678
    return s
  }

  /// What `write` sends, and what it writes with nothing folded.
  static func text(_ write: (inout ByteWriter, Int) -> Void) -> (sent: String, unfolded: String) {
    func render(_ width: Int) -> String {
      withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        write(&w, width)
        let overflowed = w.overflowed
        #expect(!overflowed)
        return String(decoding: w.written, as: UTF8.self)
      }
    }
    return (render(ConsoleLayout.columns), render(.max))
  }

  static func body(_ reply: String) -> [Substring] { reply.split(separator: "\n").filter { !$0.hasPrefix("OK") } }

  @Test("STATUS and STATS of a fully populated reader: every line fits 80 columns, joins back to what was written")
  func statusFits() {
    let s = Self.fullReader()
    for (name, reply) in [
      ("STATUS", Self.text { ConsoleText.writeStatus(s, into: &$0, width: $1) }),
      ("STATS", Self.text { ConsoleText.writeStats(s, console: ConsoleCounters(), into: &$0, width: $1) }),
    ] {
      let lines = reply.sent.split(separator: "\n")
      for line in lines { #expect(line.utf8.count <= 80, "\(name): \(line.utf8.count) columns: \(line)") }
      #expect(reply.unfolded.split(separator: "\n").contains { $0.utf8.count > 80 }, "\(name): nothing needed folding")
      let joined = ConsoleLayout.join(reply.sent).split(separator: "\n")
      #expect(joined.dropLast() == reply.unfolded.split(separator: "\n").dropLast())
      // The count is of the lines sent; every other line is body.
      let ok = lines.last!.split(separator: " ")
      #expect(ok.count == 4 && Int(ok[2]) == lines.count - 1, "\(name): \(lines.last!)")
      #expect(lines.dropLast().allSatisfy { $0.hasPrefix("| ") })
    }
  }

  @Test("a field per line: a long line breaks at every '; ', continuation lines indented by three")
  func fieldPerLine() {
    let reply = Self.text { w, width in ConsoleText.writeStatus(Self.fullReader(), into: &w, width: width) }.sent
    let lines = reply.split(separator: "\n").map(String.init)
    let fleet = lines.firstIndex { $0.hasPrefix("| fleet connected to broker.north-building.example.org:8883") }!
    #expect(lines[fleet] == "| fleet connected to broker.north-building.example.org:8883 as loading-bay-3")
    #expect(lines[fleet + 1] == "|   (TLS, client certificate);")
    #expect(lines[fleet + 2] == "|   acknowledged through #8123400 of log 8123450 (50 to send);")
    #expect(lines[fleet + 3] == "|   last contact 2026-12-02T10:00:00Z;")
    // Short lines are sent as they were written.
    #expect(lines.contains("| gpio relay inactive, buzzer inactive; errors 0"))
  }

  @Test("a token longer than a line is cut with a '\\' and joins back without a space; events fold with '!   '")
  func longToken() {
    let path = "/var/lib/scangate/" + String(repeating: "deep-folder/", count: 12) + "audit.db"
    let line = "! log " + path + " is read-only; next"
    let folded = withUnsafeTemporaryAllocation(byteCount: 1_024, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write(line)
      w.newline()
      w.write("OK the status line is never folded, whatever its length: a client reads up to it, so it is kept short\n")
      let lines = ConsoleLayout.fold(&w, from: 0)
      #expect(lines == 6)
      return String(decoding: w.written, as: UTF8.self)
    }
    let lines = folded.split(separator: "\n")
    // `! log` alone, then the path cut at 80 columns, each cut line ending in `\`.
    #expect(lines[0] == "! log" && lines[1].utf8.count == 80 && lines[1].hasSuffix("\\") && lines[2].hasSuffix("\\"))
    #expect(lines[3].hasSuffix("/audit.db is read-only;") && lines[4] == "!   next")
    #expect(lines[1...4].allSatisfy { $0.hasPrefix("!   ") })
    #expect(lines[5].hasPrefix("OK ") && lines[5].utf8.count > 80)
    #expect(ConsoleLayout.join(folded) == line + "\n" + lines[5] + "\n")
  }

  @Test("a buffer that cannot take the continuation prefixes overflows (the client is dropped), never sends a long line")
  func overflow() {
    withUnsafeTemporaryAllocation(byteCount: 100, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write("| " + String(repeating: "word ", count: 19))
      w.newline()
      ConsoleLayout.fold(&w, from: 0)
      let overflowed = w.overflowed
      #expect(overflowed)
    }
  }
}
