import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Synchronization
import ScanTestSupport
import Testing

/// Issue 27 items 1, 6 and 8, below the binary: every file ScanGate hands to a library or writes
/// is type-checked without blocking (a FIFO, a directory, a device at a configured path is named
/// and refused, never waited on); a reload that is refused says why in the journal and keeps the
/// live list; a damaged clock floor is named, and an operator's reset replaces it.
@Suite(.serialized) struct FileFaultTests {
  /// What may be at a configured path instead of a good file.
  enum Odd: String, CaseIterable {
    case fifo, directory, device, empty
    /// Puts one at `path` (a device: a symlink to /dev/null, as a site's config may point).
    func make(_ path: String) {
      switch self {
      case .fifo: #expect(mkfifo(path, 0o600) == 0)
      case .directory: #expect(mkdir(path, 0o700) == 0)
      case .device: #expect(symlink("/dev/null", path) == 0)
      case .empty: writeFile(path, "")
      }
    }
  }

  /// Runs `body`, which must return without waiting on the FIFO at `fifo`. Should it block, the
  /// FIFO is opened (read and write) and closed from another thread every 100 ms after `seconds`,
  /// so the test ends and fails instead of hanging. Returns whether `body` blocked.
  final class Flags: Sendable {
    let done = Atomic<Bool>(false)
    let blocked = Atomic<Bool>(false)
  }

  func blocks(on fifo: String, seconds: Int = 3, _ body: () -> Void) -> Bool {
    signal(SIGPIPE, SIG_IGN)
    let flags = Flags()
    let path = fifo
    let helper = startThread {
      var waited = 0
      while !flags.done.load(ordering: .acquiring) {
        usleep(10_000)
        waited += 10
        guard waited >= seconds * 1000, waited % 100 == 0 else { continue }
        flags.blocked.store(true, ordering: .releasing)
        let fd = open(path, O_RDWR | O_NONBLOCK)
        if fd >= 0 { close(fd) }
      }
    }
    body()
    flags.done.store(true, ordering: .releasing)
    pthread_join(helper, nil)
    return flags.blocked.load(ordering: .acquiring)
  }

  // MARK: - Item 1: what is handed to a library, or written

  @Test("the durable write refuses a FIFO, directory or device at its temporary name, without blocking")
  func durableWriteTemporary() throws {
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    for odd in [Odd.fifo, .directory] {
      let path = "\(dir)/state-\(odd.rawValue)"
      odd.make(path + ".tmp")
      var failure: FileError? = nil
      let stalled = blocks(on: path + ".tmp") {
        do throws(FileError) { try writeFileAtomically(path, Array("floor\n".utf8)) } catch { failure = error }
      }
      #expect(!stalled, "\(odd): the write waited on \(path).tmp")
      #expect(failure != nil && !fileExists(path), "\(odd): \(String(describing: failure))")
    }
    // A reader holding the FIFO open: refused by type, never written into.
    let path = "\(dir)/state-read"
    mkfifo(path + ".tmp", 0o600)
    let reader = open(path + ".tmp", O_RDONLY | O_NONBLOCK)
    defer { close(reader) }
    #expect(throws: FileError.self) { try writeFileAtomically(path, Array("x\n".utf8)) }
    var byte: UInt8 = 0
    #expect(read(reader, &byte, 1) <= 0)
  }

  @Test("console TLS files go to OpenSSL in memory: a FIFO or directory at the certificate or client CA is refused by name")
  func consoleTLSFiles() throws {
    let pki = TestPKI.shared
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    for odd in [Odd.fifo, .directory, .device, .empty] {
      for which in ["cert", "ca"] {
        let path = "\(dir)/\(which)-\(odd.rawValue).pem"
        odd.make(path)
        var failure: SystemError? = nil
        let stalled = blocks(on: path) {
          do throws(SystemError) {
            _ = try ConsoleTLS(
              certFile: which == "cert" ? path : pki.serverCert, keyFile: pki.serverKey, clientCAFile: which == "ca" ? path : "")
          } catch { failure = error }
        }
        #expect(!stalled, "\(which) \(odd): OpenSSL waited on the FIFO")
        let key = which == "cert" ? "console.tls_cert_file" : "console.tls_client_ca_file"
        #expect(failure?.operation.hasPrefix("\(key) \(path)") == true, "\(which) \(odd): \(String(describing: failure))")
      }
    }
    // The chain (leaf, then its CA) and a client CA still load from memory.
    let chain = dir + "/chain.pem"
    writeFile(chain, String(decoding: try readWholeFile(pki.serverCert, maxBytes: 1 << 20) + readWholeFile(pki.serverCA, maxBytes: 1 << 20), as: UTF8.self))
    let tls = try ConsoleTLS(certFile: chain, keyFile: pki.serverKey, clientCAFile: pki.clientCA)
    #expect(tls.requiresClientCertificates)
  }

  @Test("fleet TLS paths are checked before libmosquitto opens them: a FIFO is refused by name, without blocking")
  func fleetTLSFiles() throws {
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    let good = TestPKI.shared.serverCA
    for odd in [Odd.fifo, .directory, .device] {
      for which in ["ca", "cert"] {
        let path = "\(dir)/\(which)-\(odd.rawValue).pem"
        odd.make(path)
        let client = try MQTTClient(clientID: "t", protocolVersion: 5, messageBytesMax: 1024)
        var failure: MQTTError? = nil
        let stalled = blocks(on: path) {
          do throws(MQTTError) {
            try client.useTLS(
              caFile: which == "ca" ? path : good, certFile: which == "cert" ? path : "",
              keyFile: which == "cert" ? TestPKI.shared.clientKey : "")
          } catch { failure = error }
        }
        #expect(!stalled, "\(which) \(odd): libmosquitto waited on the FIFO")
        #expect(
          failure?.operation.contains("\(path): \(odd == .directory ? "is a directory" : odd == .fifo ? "is a FIFO" : "is a device")") == true,
          "\(which) \(odd): \(String(describing: failure))")
      }
    }
  }

  @Test("SQLite is never handed a FIFO, directory or device at the log's path (or its -wal): refused by name")
  func databasePath() throws {
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    for odd in [Odd.fifo, .directory, .device] {
      let path = "\(dir)/audit-\(odd.rawValue).db"
      odd.make(path)
      for readOnly in [true, false] {
        var failure: SQLiteError? = nil
        let stalled = blocks(on: path) {
          // As AuditStore opens it: a file: URI read-only (`log`, `log verify`, the fleet's reader), the path to write.
          do throws(SQLiteError) {
            _ = try SQLiteDatabase(path: readOnly ? "file:\(path)?mode=ro" : path, readOnly: readOnly)
          } catch { failure = error }
        }
        #expect(!stalled, "\(odd) readOnly \(readOnly): SQLite waited on the FIFO")
        #expect(failure?.message.contains("\(path) is a") == true, "\(odd): \(String(describing: failure))")
        #expect(failure?.message.contains("not a regular file: refused") == true)
      }
      #expect(PathChecks.databaseProblem("file:\(path)?mode=ro") != nil)
    }
    let wal = "\(dir)/wal.db"
    Odd.fifo.make(wal + "-wal")
    #expect(PathChecks.databaseProblem(wal)?.contains("\(wal)-wal is a FIFO") == true)
    // Absent or regular: fine (SQLite creates it); an empty file is an empty database.
    #expect(PathChecks.databaseProblem("\(dir)/new.db") == nil)
    Odd.empty.make("\(dir)/empty.db")
    #expect(PathChecks.databaseProblem("\(dir)/empty.db") == nil)
    #expect(PathChecks.databaseProblem(":memory:") == nil)
  }

  @Test("PathChecks names each kind at each configured path, and passes what is right")
  func configuredPaths() throws {
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    var config = ScanConfig()
    config.camera.source = .replay
    config.camera.replayPath = dir + "/frames"
    mkdir(config.camera.replayPath, 0o755)
    writeFile(config.camera.replayPath + "/a.png", "not really a png")
    config.allowListPath = dir + "/allow.txt"
    config.log.path = dir + "/state/audit.db"
    mkdir(dir + "/state", 0o700)
    config.credentials.trustFile = dir + "/trust.toml"
    config.console.secretFile = dir + "/secret"
    config.door.schedulePath = dir + "/schedules.txt"
    #expect(PathChecks.problems(config).isEmpty, "\(PathChecks.problems(config))")
    let roles = Set(PathChecks.entries(config).map(\.role))
    for role in [
      "allow_list.path", "schedule.path", "camera.replay_path", "state.directory", "credentials.trust_file",
      "credentials.clock_floor_file", "credentials.used_file", "log.path", "log.chain_key_file", "log: tag key", "console.secret_file",
    ] {
      #expect(roles.contains(role), "\(role)")
    }
    for odd in [Odd.fifo, .directory, .device] {
      for path in [config.door.schedulePath, dir + "/state/clock-floor", config.log.path + ".key", config.console.secretFile] {
        odd.make(path)
        let found = PathChecks.problems(config).filter { $0.entry.path == path }
        #expect(found.count == 1, "\(odd) \(path): \(PathChecks.problems(config))")
        #expect(found.first?.problem.contains("not a regular file: refused") == true)
        unlink(path)
        rmdir(path)
      }
    }
    Odd.fifo.make(config.camera.replayPath + "/b.png")
    #expect(PathChecks.problems(config).first?.problem == "\(config.camera.replayPath)/b.png: is a FIFO (named pipe), not a regular file: refused")
    unlink(config.camera.replayPath + "/b.png")
    Odd.fifo.make(dir + "/state2")
    config.stateDirectorySetting = dir + "/state2"
    #expect(PathChecks.problems(config).contains { $0.entry.role == "state.directory" })
  }

  // MARK: - Item 1 and 8: a refused reload keeps the live list and says why

  typealias Loop = RunLoopTests.Loop

  func loop(_ world: RunLoopTests.World, notes: JournalNotes) -> Loop {
    var loop = world.loop(watch: false)
    loop.journalNotes = notes
    return loop
  }

  @Test("a FIFO at the allow-list path on reload: the loop does not wait, the live list stays, the journal says why")
  func allowListFIFOReload() {
    let world = RunLoopTests.World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "text:ALICE\n")
    let notes = JournalNotes()
    var loop = loop(world, notes: notes)
    #expect(loop.reloadAllowList() == nil)
    unlink(world.allowListPath)
    mkfifo(world.allowListPath, 0o600)
    var error: AllowListError? = nil
    #expect(!blocks(on: world.allowListPath) { error = loop.reloadAllowList() })
    #expect(error?.reason.contains("is a FIFO") == true)
    #expect(loop.engine.allowList.version == 1)
    #expect(Array("ALICE".utf8).withUnsafeBytes { loop.engine.check($0) } == .granted)
    let lines = notes.take(upTo: .max)
    #expect(
      lines == [
        "scangate: allow-list \(world.allowListPath): \(world.allowListPath): is a FIFO (named pipe), not a regular file: refused; "
          + "the live list stays (version 1, 1 entries)"
      ],
      "\(lines)")
  }

  @Test("an empty allow-list on reload is refused: the live list keeps granting and the journal says why; a marked one empties it")
  func emptyAllowListReload() {
    let world = RunLoopTests.World()
    defer { removeTree(world.directory) }
    writeFile(world.allowListPath, "text:ALICE\n")
    let notes = JournalNotes()
    var loop = loop(world, notes: notes)
    #expect(loop.reloadAllowList() == nil)
    writeFile(world.allowListPath, "")
    #expect(loop.reloadAllowList()?.reason.contains("no entries") == true)
    #expect(Array("ALICE".utf8).withUnsafeBytes { loop.engine.check($0) } == .granted)
    #expect(notes.take(upTo: .max).first?.contains("no entries: an empty file is refused like one cut short") == true)
    #expect(world.count(.fault, code: .allowListRejected) == 1)
    writeFile(world.allowListPath, "# scangate: empty\n")
    #expect(loop.reloadAllowList() == nil)
    #expect(Array("ALICE".utf8).withUnsafeBytes { loop.engine.check($0) } == .deniedUnknown)
  }

  @Test("the event printer prints a note right after the event it explains")
  func notesFollowTheirEvent() {
    let notes = JournalNotes()
    notes.post("why 2", after: 2)
    notes.post("why 3", after: 3)
    #expect(notes.take(upTo: 1) == [])
    #expect(notes.take(upTo: 2) == ["why 2"])
    for i in 0..<(JournalNotes.capacity + 3) { notes.post("n\(i)", after: 4) }
    let drained = notes.take(upTo: 4)
    #expect(drained.first == "(4 journal notes dropped before they could be printed)")
    #expect(drained.count == JournalNotes.capacity + 1)
  }

  // MARK: - Item 6: the floor file

  @Test("a damaged floor file is named; an operator's reset writes a good one and clears the problem")
  func damagedFloorFile() throws {
    let dir = temporaryDirectory("files")
    defer { removeTree(dir) }
    let path = dir + "/clock-floor"
    writeFile(path, "scangate-clock-floor 1 nonsense\n")
    let wall: Int64 = 1_796_205_600
    let keeper = ClockFloorKeeper(
      time: TrustedTime(), ring: EventRing(capacity: 16), path: path, bootID: "b",
      read: { ClockReading(wall: wall, sinceBoot: 100, synchronized: false) })
    #expect(keeper.problem == "\(path): damaged: refused (the floor stays where it was)")
    #expect(keeper.resetToClock() == wall)
    #expect(keeper.problem == nil)
    let again = ClockFloorKeeper(
      time: TrustedTime(), ring: EventRing(capacity: 16), path: path, bootID: "other",
      read: { ClockReading(wall: wall - 10, sinceBoot: 5, synchronized: false) })
    #expect(again.problem == nil && again.time.floor == wall)
  }
}
