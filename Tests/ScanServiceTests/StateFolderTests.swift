import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// State that protects a decision is durable at its path (docs/credentials.md, "What survives a
/// restart"), on the built binary: the state folder deleted while the reader runs, a state file
/// deleted while it is stopped.
@Suite(.serialized) struct StateFolderTests {
  func reader(_ tag: String) -> (String, String) { hankReader(tag, state: true) }

  func console(_ child: Child, _ dir: String, _ line: String) -> String {
    let port =
      child.output.split(separator: "\n").first { $0.hasPrefix("console listening on 127.0.0.1:") }?.split(separator: ":").last.map(String.init)
      ?? "0"
    // Lines as written: their continuation lines joined (docs/console.md).
    return ConsoleLayout.join(
      runCommand([scangateBinary, "console", "--tcp", "127.0.0.1:" + port, "--secret-file", dir + "/secret", "--command", line]).1)
  }

  @Test("the state folder deleted while the reader runs: LOCKDOWN ON is made durable at its path (folder and file made again), and holds after a restart")
  func folderDeletedWhileRunning() {
    let (dir, config) = reader("state-running")
    defer { removeTree(dir) }
    var child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    // The lockdown latch exists from the start; then the whole folder goes.
    #expect(fileExists(dir + "/state/lockdown"))
    removeTree(dir + "/state")
    let reply = console(child, dir, "LOCKDOWN ON")
    #expect(reply.contains("lockdown on"), "\(reply)")
    #expect(child.waitForOutput("state/lockdown was deleted or replaced while in use: made again"), "\(child.output)")
    #expect(fileExists(dir + "/state/lockdown") && StateFileList.names(dir + "/state/lockdown"))
    #expect(child.waitForOutput("audit.db.tag-key was deleted while in use: written again from memory"), "\(child.output)")
    _ = kill(child.pid, SIGKILL)
    _ = child.wait()
    let first = child.output
    child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision denied-lockdown qr label=hank"), "still locked down after the restart: \(child.output)")
    // The list made again names every state file the reader kept, not only the one written since;
    // the tag key, gone with the folder, was written back from memory: the same key, every tag
    // the same after the restart.
    #expect(StateFileList.names(dir + "/state/audit.db.tag-key"), "the list names the tag key too")
    #expect(first.contains("audit.db.tag-key was deleted while in use: written again from memory"), "\(first)")
    #expect(!child.output.contains("tag-key is missing"), "\(child.output)")
    #expect(!child.output.contains("decision granted"), "\(child.output)")
  }

  @Test("the state folder deleted after LOCKDOWN ON, nothing written since, then kill -9: the latch was made again from memory, the restart is locked down")
  func folderDeletedWithoutAWrite() {
    let (dir, config) = reader("state-quiet")
    defer { removeTree(dir) }
    var child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    let reply = console(child, dir, "LOCKDOWN ON")
    #expect(reply.contains("lockdown on"), "\(reply)")
    #expect(child.waitForOutput("decision denied-lockdown qr label=hank"), "\(child.output)")
    // The latch is durable; then the folder goes, and no state is written after it.
    removeTree(dir + "/state")
    #expect(child.waitForOutput("state/lockdown was deleted or replaced while in use: made again"), "\(child.output)")
    #expect(fileExists(dir + "/state/lockdown") && StateFileList.names(dir + "/state/lockdown"))
    _ = kill(child.pid, SIGKILL)
    _ = child.wait()
    child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision denied-lockdown qr label=hank"), "still locked down after the restart: \(child.output)")
    #expect(!child.output.contains("decision granted"), "\(child.output)")
  }

  @Test("a state file deleted while the reader is stopped is a fault, not a fresh start: the missing latch starts it locked down, said why")
  func fileDeletedWhileStopped() {
    let (dir, config) = reader("state-stopped")
    defer { removeTree(dir) }
    var child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    _ = kill(child.pid, SIGTERM)
    _ = child.wait()
    #expect(StateFileList.names(dir + "/state/lockdown"), "the reader lists the latch among its state files")
    #expect(unlink(dir + "/state/lockdown") == 0)
    child = Child.start([scangateBinary, "run", "--config", config])
    defer { _ = kill(child.pid, SIGTERM); _ = child.wait() }
    #expect(child.waitForOutput("decision denied-lockdown qr label=hank"), "\(child.output)")
    #expect(child.output.contains("missing, and this reader kept it"), "\(child.output)")
    // An administrator who means to start it empty removes its line: then it is a fresh start.
  }

  @Test("a 0-byte audit.db beside its WAL is moved aside with the WAL, which keeps its records (never emptied into a new log)")
  func emptyDatabaseBesideWAL() {
    let (dir, config) = reader("state-emptydb")
    defer { removeTree(dir) }
    var child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("decision granted qr label=hank"), "\(child.output)")
    usleep(600_000)  // a few commits into the WAL
    _ = kill(child.pid, SIGKILL)
    _ = child.wait()
    let wal = fileSize(dir + "/state/audit.db-wal") ?? 0
    #expect(wal > 0, "the WAL holds the records")
    #expect(truncate(dir + "/state/audit.db", 0) == 0)
    child = Child.start([scangateBinary, "run", "--config", config])
    #expect(child.waitForOutput("(an empty file of 0 bytes) was moved aside to"), "\(child.output)")
    _ = kill(child.pid, SIGTERM)
    _ = child.wait()
    let aside = (try? listDirectory(dir + "/state"))?.first { $0.hasPrefix("audit.db.empty-") && $0.hasSuffix("-wal") }
    #expect(aside.flatMap { fileSize(dir + "/state/" + $0) } == wal, "the moved WAL is whole: \(String(describing: aside))")
  }

  @Test("too few open files (ulimit -n 10): refused at the start with the limit needed, never 'Invalid argument' from a worker's spawn")
  func descriptorLimit() {
    let (dir, config) = reader("state-ulimit")
    defer { removeTree(dir) }
    let (status, out) = runCommand(["/bin/bash", "-c", "ulimit -n 10; exec '\(scangateBinary)' run --config '\(config)'"], timeoutSeconds: 20)
    #expect(status == 1 && out.contains("too many open files") && out.contains("needs at least") && out.contains("LimitNOFILE"), "\(out)")
    #expect(!out.contains("Invalid argument"), "\(out)")
  }

  @Test("a log put back behind the fleet's acknowledgement is never continued: moved aside, a log-missing fault, a new log id")
  func logBehindAcknowledgement() {
    let (dir, config) = reader("state-behind")
    defer { removeTree(dir) }
    let log = dir + "/state/audit.db"
    func runFor(_ seconds: UInt32) -> String {
      let child = Child.start([scangateBinary, "run", "--config", config])
      _ = child.waitForOutput("decision granted qr label=hank")
      sleep(seconds)
      _ = kill(child.pid, SIGTERM)
      _ = child.wait()
      return child.output
    }
    // The log read with its own reader, read-only (no sqlite3 program: the trixie chroot has none).
    func logID() -> String { (try? AuditStore(path: log, readOnly: true).identity().id) ?? "" }
    func newestRecord() -> Int { Int((try? AuditStore(path: log, readOnly: true).newestSequence()) ?? 0) }
    func details() -> [String] { ((try? AuditStore(path: log, readOnly: true).records(from: 1, limit: 100)) ?? []).map(\.detail) }
    _ = runFor(1)
    // The older copy, kept aside; the reader goes on, and the broker acknowledges its newest record.
    for suffix in ["", "-wal", "-shm", ".committed"] where fileExists(log + suffix) {
      _ = runCommand(["/bin/cp", "-p", log + suffix, dir + "/older" + suffix])
    }
    let older = newestRecord()
    _ = runFor(2)
    let id = logID()
    let newest = newestRecord()
    #expect(!id.isEmpty && newest > older + 2, "\(id) \(older) \(newest)")
    writeFile(log + ".fleet", "scangate-fleet log \(id) acked \(newest)\n")
    // The older copy put back under the newer fleet state.
    for suffix in ["", "-wal", "-shm", ".committed"] {
      _ = unlink(log + suffix)
      if fileExists(dir + "/older" + suffix) { _ = runCommand(["/bin/cp", "-p", dir + "/older" + suffix, log + suffix]) }
    }
    let out = runFor(1)
    #expect(out.contains("FAULT log-missing") && out.contains("the fleet's broker acknowledged record \(newest)"), "\(out)")
    let aside = (try? listDirectory(dir + "/state"))?.first { $0.hasPrefix("audit.db.behind-") && !$0.contains("-wal") && !$0.contains("-shm") }
    #expect(aside != nil, "moved aside")
    let newID = logID()
    #expect(!newID.isEmpty && newID != id, "a new log id: \(newID)")
    #expect(details().filter { $0.contains("acknowledged record \(newest)") }.count == 1, "the new log records why")
  }
}
