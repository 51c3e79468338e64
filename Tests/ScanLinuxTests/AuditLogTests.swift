import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanSim
import Testing

/// The audit log on real SQLite files: the chain, tampering, pruning, faults, and crashes.
@Suite(.serialized) struct AuditLogTests {
  func records(_ n: Int, run: Int64 = 1) -> [AuditRecord] {
    var out: [AuditRecord] = []
    for i in 0..<n {
      let time: Int64 = 1_796_000_000_000_000_000 + Int64(i) * 1_000_000_000
      let granted = i % 2 == 0
      out.append(AuditRecord(sequence: 0, run: run, eventSequence: Int64(i + 1), wallNanoseconds: time,
                             kind: "decision", verdict: granted ? "granted" : "denied-unknown", format: "qr",
                             variant: "upright", digest: String(repeating: "ab", count: 32),
                             label: granted ? "alice" : "", edgeMicroseconds: 900))
    }
    return out
  }

  func verification(_ path: String) throws -> AuditStore.Verification {
    let store = try AuditStore(path: path, readOnly: true)
    return try store.verify(digester: SodiumDigester())
  }

  @Test("appended records verify; altering or removing one is found at that record")
  func chain() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let store = try AuditStore(path: dir + "/a.db", readOnly: false)
    try store.append(records(50), digester: SodiumDigester())
    try store.append(records(25), digester: SodiumDigester())
    var v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak == nil && v.records == 75 && v.lastSequence == 75)
    try store.database.execute("UPDATE events SET verdict='granted' WHERE seq=40")
    v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak?.sequence == 40)
    #expect(v.firstBreak?.reason.contains("hash mismatch") == true)
    try store.database.execute("UPDATE events SET verdict='denied-unknown' WHERE seq=40")
    v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak == nil)
    try store.database.execute("DELETE FROM events WHERE seq=60")
    v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak?.sequence == 61)
    #expect(v.firstBreak?.reason.contains("gap") == true)
  }

  @Test("pruning keeps the newest records and the chain still verifies from its anchor")
  func pruning() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let store = try AuditStore(path: dir + "/a.db", readOnly: false)
    try store.append(records(3_000), digester: SodiumDigester())
    var deleted: Int64 = 0
    for _ in 0..<5 { deleted += try store.prune(keepRecords: 1_000, olderThan: .min, batch: 700) }
    #expect(deleted == 2_000)
    let v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak == nil && v.records == 1_000 && v.firstSequence == 2_001)
    // Appending after a prune continues the same chain.
    try store.append(records(10), digester: SodiumDigester())
    let afterAppend = try store.verify(digester: SodiumDigester())
    #expect(afterAppend.firstBreak == nil)
    // Reopened, it picks up the head again.
    let again = try AuditStore(path: dir + "/a.db", readOnly: false)
    try again.append(records(1), digester: SodiumDigester())
    let reopened = try again.verify(digester: SodiumDigester())
    #expect(reopened.lastSequence == 3_011)
  }

  /// The writer thread on a ring, driven by hand.
  func event(_ kind: EventKind, _ code: UInt16 = 0) -> ScanEvent {
    var e = ScanEvent()
    e.kind = kind
    e.code = code
    e.wallNanoseconds = SystemWallClock().unixNanoseconds()
    if kind == .decision { Array("ALICE".utf8).withUnsafeBytes { e.setPayload($0) } }
    return e
  }

  func waitUntil(_ seconds: Int = 10, _ condition: () -> Bool) -> Bool {
    for _ in 0..<(seconds * 100) {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }

  @Test("the writer drains the ring in group commits; edges are not logged; payloads only by request")
  func writer() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    let ring = EventRing(capacity: 256)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    let log = AuditLog(settings: settings, ring: ring)
    log.start()
    for _ in 0..<20 {
      ring.append(event(.decision))
      ring.append(event(.edge, EdgeCode.relay | 1))
    }
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let store = try AuditStore(path: dir + "/a.db", readOnly: true)
    var kinds: [String] = []
    var payloads: [String] = []
    try store.read { kinds.append($0.kind); payloads.append($0.payload) }
    #expect(kinds == Array(repeating: "decision", count: 20))
    let allEmpty = payloads.allSatisfy { $0.isEmpty }
    #expect(allEmpty)
    let v = try store.verify(digester: SodiumDigester())
    #expect(v.firstBreak == nil)
  }

  @Test("a corrupt database is moved aside, never deleted, and a new one is started")
  func corrupt() throws {
    let dir = temporaryDirectory("log")
    defer { removeTree(dir) }
    writeFile(dir + "/a.db", String(repeating: "this is not a database ", count: 500))
    let ring = EventRing(capacity: 64)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    let log = AuditLog(settings: settings, ring: ring)
    log.start()
    ring.append(event(.decision))
    #expect(waitUntil { log.committedSequence == ring.lastSequence })
    log.stop()
    let names = try listDirectory(dir)
    #expect(names.contains { $0.hasPrefix("a.db.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
    let moved = names.first { $0.hasPrefix("a.db.corrupt-") && !$0.contains("-wal") && !$0.contains("-shm") }!
    #expect(String(decoding: try readWholeFile(dir + "/" + moved, maxBytes: 1 << 20), as: UTF8.self).hasPrefix("this is not"))
    let fresh = try verification(dir + "/a.db")
    #expect(fresh.records == 1)
  }

  /// A small tmpfs, for disk-full and read-only faults (needs root, as CI runs).
  func withTmpfs(_ sizeKiB: Int, _ body: (String) throws -> Void) throws {
    guard geteuid() == 0 else { return }
    let dir = temporaryDirectory("tmpfs")
    defer { umount2(dir, Int32(MNT_DETACH)); rmdir(dir) }
    guard mount("tmpfs", dir, "tmpfs", 0, "size=\(sizeKiB)k") == 0 else {
      Issue.record("mount tmpfs: \(SystemError.describe(errno))")
      return
    }
    try body(dir)
  }

  @Test("disk full: the fault is reported, records wait, and everything is written once space returns",
        .enabled(if: geteuid() == 0, "needs root to mount a small tmpfs"))
  func diskFull() throws {
    try withTmpfs(600) { dir in
      let ring = EventRing(capacity: 4096)
      var settings = AuditLogSettings(path: dir + "/a.db")
      settings.commitIntervalMilliseconds = 20
      let log = AuditLog(settings: settings, ring: ring)
      log.start()
      ring.append(event(.state, FaultCode.started.rawValue))
      #expect(waitUntil { log.committedSequence == ring.lastSequence })
      // Fill the rest of the file system.
      let filler = dir + "/filler"
      let fd = open(filler, O_WRONLY | O_CREAT, 0o644)
      let block = [UInt8](repeating: 0x55, count: 4096)
      while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
      close(fd)
      for _ in 0..<500 { ring.append(event(.decision)) }
      #expect(waitUntil { log.fault == .diskFull })
      #expect(log.committedSequence < ring.lastSequence)
      unlink(filler)
      #expect(waitUntil { log.fault == .none && log.committedSequence == ring.lastSequence })
      log.stop()
      let v = try verification(dir + "/a.db")
      #expect(v.firstBreak == nil && v.records == 501)
    }
  }

  @Test("read-only file system: reported, records wait, and all are written when it is writable again",
        .enabled(if: geteuid() == 0, "needs root to remount a tmpfs read-only"))
  func readOnly() throws {
    try withTmpfs(4096) { dir in
      #expect(mount("tmpfs", dir, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0)
      let ring = EventRing(capacity: 1024)
      var settings = AuditLogSettings(path: dir + "/a.db")
      settings.commitIntervalMilliseconds = 20
      let log = AuditLog(settings: settings, ring: ring)
      log.start()
      for _ in 0..<10 { ring.append(event(.decision)) }
      #expect(waitUntil { log.fault == .readOnly })
      #expect(log.committedSequence == 0)
      #expect(mount("tmpfs", dir, "tmpfs", UInt(MS_REMOUNT), nil) == 0)
      #expect(waitUntil { log.fault == .none && log.committedSequence == ring.lastSequence })
      log.stop()
      let v = try verification(dir + "/a.db")
      #expect(v.records == 10 && v.firstBreak == nil)
    }
  }

  @Test("kill -9 at random moments: the chain always verifies and every decision a console saw is logged")
  func crashes() throws {
    let iterations = Int(String(cString: getenv("SCANGATE_CRASH_ITERATIONS") ?? strdup("200"))) ?? 200
    let dir = temporaryDirectory("crash")
    defer { removeTree(dir) }
    // Two codes taking turns with empty frames: a decision every few frames.
    mkdir(dir + "/frames", 0o755)
    _ = writePNG(path: dir + "/frames/1.png", pixels: qrFrame("ALICE").pixels, width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/2.png", pixels: [UInt8](repeating: 200, count: 640 * 480), width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/3.png", pixels: qrFrame("MALLORY").pixels, width: 640, height: 480, components: 1)
    _ = writePNG(path: dir + "/frames/4.png", pixels: [UInt8](repeating: 200, count: 640 * 480), width: 640, height: 480, components: 1)
    writeFile(dir + "/allow-list.txt", "text:ALICE\n")
    writeFile(dir + "/config.toml", """
      [camera]
      source = "replay"
      replay_path = "\(dir)/frames"
      replay_fps = 50
      [presence]
      leave_after_ms = 50
      cooldown_ms = 0
      [allow_list]
      path = "\(dir)/allow-list.txt"
      [gpio]
      backend = "sim"
      relay_pulse_ms = 50
      [log]
      path = "\(dir)/audit.db"
      commit_interval_ms = 20
      [console]
      listen = ["127.0.0.1:0"]
      """)
    var rng = SplitMix(seed: 42)
    var acknowledgedTotal = 0
    for iteration in 0..<iterations {
      let child = Child.start([scangateBinary, "run", "--config", dir + "/config.toml", "--quiet-edges"])
      guard child.waitForOutput("console listening on 127.0.0.1:", timeoutSeconds: 20) else {
        Issue.record("iteration \(iteration): no console: \(child.output)")
        kill(child.pid, SIGKILL); _ = child.wait(); break
      }
      let port = child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }!
        .split(separator: ":").last.flatMap { UInt16($0) }!
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var sa = sockaddr_in()
      sa.sin_family = sa_family_t(AF_INET)
      sa.sin_port = port.bigEndian
      sa.sin_addr.s_addr = inet_addr("127.0.0.1")
      _ = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
      _ = "WATCH ON\n".withCString { write(fd, $0, 9) }
      // Listen for a random while, then kill -9 with no warning.
      let end = SystemMonotonicClock().now().adding(milliseconds: 30 + Int(rng.next() % 400))
      var received: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while SystemMonotonicClock().now() < end {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 5) > 0 {
          let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
          if n > 0 { received += buffer[0..<n] }
        }
      }
      kill(child.pid, SIGKILL)
      _ = child.wait()
      close(fd)
      // Only whole lines count: a line cut by the kill was not acknowledged.
      let text = String(decoding: received, as: UTF8.self)
      let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
      let acknowledged = lines.compactMap { line -> Int64? in
        guard line.hasPrefix("! #"), line.contains(" decision ") else { return nil }
        return Int64(line.dropFirst(3).prefix { $0.isNumber })
      }
      acknowledgedTotal += acknowledged.count
      let store = try AuditStore(path: dir + "/audit.db", readOnly: true)
      let v = try store.verify(digester: SodiumDigester())
      #expect(v.firstBreak == nil, "iteration \(iteration): \(String(describing: v.firstBreak))")
      var logged: Set<Int64> = []
      var lastRun: Int64 = 0
      try store.read { r in
        if r.run > lastRun { lastRun = r.run; logged = [] }
        if r.kind == "decision" { logged.insert(r.eventSequence) }
      }
      let missing = acknowledged.filter { !logged.contains($0) }
      #expect(missing.isEmpty, "iteration \(iteration): decisions \(missing) were shown on the console but are not in the log")
      if !missing.isEmpty || v.firstBreak != nil { break }
    }
    #expect(acknowledgedTotal > iterations / 2, "too few decisions were seen to make the test meaningful")
  }
}
