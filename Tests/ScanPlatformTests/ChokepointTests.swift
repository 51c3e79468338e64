import Glibc
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// Two conventions a test holds, not habit (docs/architecture.md, "One errno chokepoint, one
/// durable write"): every system call whose errno matters goes through the errno chokepoint
/// (`syscall` / `syscallRetrying` in Errno.swift and the helpers in Descriptors.swift), and every
/// rename or link into place is the durable write's (Files.swift). The test reads the Swift
/// sources under Sources/ the way a reviewer would grep them.
@Suite struct ChokepointTests {
  /// The chokepoint itself: the only files where raw calls are the point.
  static let chokepoint: Set<String> = ["Platform/Errno.swift", "Platform/Descriptors.swift"]
  /// The durable write: the only file that renames or links a file into place.
  static let durableWrite = "Platform/Files.swift"

  /// Raw calls allowed outside the chokepoint: `count` calls of `call` in `file` (under Sources/).
  struct Exception: CustomStringConvertible {
    let file: String
    let call: String
    let count: Int
    let reason: String
    init(_ file: String, _ call: String, _ count: Int, _ reason: String) {
      (self.file, self.call, self.count, self.reason) = (file, call, count, reason)
    }
    var description: String { "\(file): \(count) × \(call) (\(reason))" }
  }

  /// Each exception with its reason. A count that grows is a new bypass; one that shrinks is an
  /// entry to tighten: both fail.
  static let exceptions: [Exception] = {
    // The tests' keypad (ScanSim, which cannot see the chokepoint in ScanLinux): a pipe inside the
    // test's own process, whose setup failing is a precondition and whose reads stop at "empty".
    let pipeKeys = "ScanSim/PipeKeys.swift", why = "the tests' keypad: a pipe in the test's own process"
    return [
      .init(pipeKeys, "pipe", 1, why), .init(pipeKeys, "fcntl", 1, why), .init(pipeKeys, "close", 2, why),
      .init(pipeKeys, "write", 2, why), .init(pipeKeys, "read", 1, why),
    ]
  }()

  /// `renameDurably` outside the durable write, where nothing is written before the rename.
  static let renameExceptions: [Exception] = [
    .init("Audit/Linux/AuditStore.swift", "renameDurably", 1, "moves a damaged log and its -wal, -shm aside: a move, not a write")
  ]

  /// What renames or links a name into place: only the durable write does.
  static let renames: Set<String> = ["rename", "renameat", "renameat2", "link", "linkat"]

  /// The system calls whose errno matters, each with its C form's argument counts (a Swift
  /// method of the same name takes labels, a trailing closure or another count, and is not
  /// one). Not listed: path queries whose failure only means "not there" and whose errno is not
  /// acted on (stat, lstat, access, opendir, readlink, mkdtemp), calls that return the error
  /// instead of setting errno (posix_spawn, pthread_*), and the domain C shims that carry their
  /// own policy (sg_v4l2_*, sg_sb_*, sg_cam_*, sg_tls_*, sg_mqtt_*).
  static let checked: [String: Set<Int>] = {
    var table: [String: Set<Int>] = [:]
    func add(_ names: String, _ counts: Set<Int>) { for name in names.split(separator: " ") { table[String(name)] = counts } }
    add("sg_signalfd_open sg_sock_diag_open sg_epoll_open fork", [0])
    add("close unlink rmdir fsync fdatasync dup pipe tcdrain epoll_create1 inotify_init1 sg_signalfd_read sg_tty_rs485_enable", [1])
    add("rename link symlink mkdir ftruncate truncate listen shutdown fchmod chmod fstat dup2 pipe2 kill munmap", [2])
    add("eventfd timerfd_create memfd_create tcflush sg_tty_configure_raw sg_open_pty sg_epoll_add_readable sg_reserve_blocks", [2])
    add("read write readv writev recvmsg sendmsg poll accept connect bind socket fchown chown lseek unlinkat mkdirat", [3])
    add("waitpid getsockname getpeername dup3 tcsetattr inotify_add_watch execve", [3])
    add("sg_open sg_fcntl_int sg_ioctl sg_accept_nonblocking sg_tcp_peer_owner", [3])
    add("pread pwrite recv send ppoll renameat accept4 socketpair epoll_ctl epoll_wait timerfd_settime", [4])
    add("linkat setsockopt getsockopt renameat2", [5])
    add("recvfrom sendto mmap", [6])
    add("open", [2, 3])
    add("openat", [3, 4])
    add("ioctl fcntl", [2, 3])
    return table
  }()

  /// Every Swift file under `root` (relative paths), sorted.
  static func swiftFiles(under root: String, _ prefix: String = "") -> [String] {
    var files: [String] = []
    for name in (try? listDirectory(root + "/" + prefix)) ?? [] {
      let relative = prefix.isEmpty ? name : prefix + "/" + name
      if isDirectory(root + "/" + relative) {
        files += swiftFiles(under: root, relative)
      } else if name.hasSuffix(".swift") {
        files.append(relative)
      }
    }
    return files
  }

  /// What breaks the two rules in the sources under `root`, one line each (empty: none).
  static func violations(inSourcesAt root: String) throws -> [String] {
    var found: [String] = []
    var raw: [String: [String: [Int]]] = [:]  // file → call → lines
    var renamed: [String: [Int]] = [:]  // file → lines of renameDurably
    for file in swiftFiles(under: root) {
      let source = SwiftSource(try readWholeFile(root + "/" + file, maxBytes: 1 << 20))
      if file != durableWrite {
        for call in source.calls(routedOrNot: true) where renames.contains(call.name) {
          found.append("\(file):\(call.line): \(call.name) outside the durable write: use writeFileAtomically, stageFile or SecretFile")
        }
        renamed[file] = source.lines(ofCallsTo: "renameDurably")
      }
      guard !chokepoint.contains(file) else { continue }
      for call in source.calls(routedOrNot: false) { raw[file, default: [:]][call.name, default: []].append(call.line) }
    }
    found += mismatches(
      raw.flatMap { file, calls in calls.map { (file, $0.key, $0.value) } }, exceptions,
      "raw system call", fix: "route it through syscall(...) or a helper in Errno.swift or Descriptors.swift, or add an exception with its reason")
    found += mismatches(
      renamed.map { ($0.key, "renameDurably", $0.value) }, renameExceptions,
      "rename outside the durable write", fix: "write through writeFileAtomically, stageFile or SecretFile, or add an exception with its reason")
    return found.sorted()
  }

  /// Calls (file, name, lines) against the allowed counts: every call not allowed, and every
  /// exception whose count no longer matches.
  static func mismatches(_ calls: [(String, String, [Int])], _ allowed: [Exception], _ what: String, fix: String) -> [String] {
    var found: [String] = []
    for (file, name, lines) in calls {
      let allowance = allowed.first { $0.file == file && $0.call == name }?.count ?? 0
      guard lines.count > allowance else { continue }
      for line in lines {
        found.append("\(file):\(line): \(what) \(name) (\(lines.count) here, \(allowance) allowed): \(fix)")
      }
    }
    for exception in allowed {
      let count = calls.first { $0.0 == exception.file && $0.1 == exception.call }?.2.count ?? 0
      if count < exception.count { found.append("\(exception.file): stale exception, \(count) left of \(exception)") }
    }
    return found
  }

  /// $SCANGATE_CHOKEPOINT_SOURCES checks another tree's Sources/ (an older commit's, from
  /// `git archive`: how the rules were shown to fail before they held).
  @Test("no raw system call outside the errno chokepoint or its exceptions; no rename outside the durable write")
  func sourcesKeepTheRules() throws {
    let sources = getenv("SCANGATE_CHOKEPOINT_SOURCES").map { String(cString: $0) } ?? packageRoot + "/Sources"
    #expect(Self.swiftFiles(under: sources).count > 100, "no sources at \(sources)")
    let found = try Self.violations(inSourcesAt: sources)
    #expect(found.isEmpty, "\(found.count) found:\n\(found.joined(separator: "\n"))")
  }

  @Test("the scanner: raw calls found; routed calls, methods, labels, comments and strings are not")
  func scannerOnASample() {
    let sample = #"""
      let fd = try syscall("open \(path)", { sg_open(path, O_RDONLY, 0) })
      let n = read(fd, buffer, count)
      _ = try syscallRetrying(
        "write",
        {
          Glibc.write(fd, start, length)
        })
      w.write(x); write(slot) { w in w.write("x") }; open(&w, now: now); self.close(fd)
      let s = "close(fd) and \(x ? "a(" : "b") close(fd)"  /* close(fd) /* nested */ close(fd) */
      // close(fd) in a comment
      Glibc.close(fd)
      func send(_ fd: Int32, _ text: String) -> Bool { send(fd, text + "\n") }
      case open(String)
      let r = #"rename(a, b)"#; if rename(a, b) == 0 { }
      """#
    let source = SwiftSource(Array(sample.utf8))
    let raw = source.calls(routedOrNot: false).map { "\($0.line):\($0.name)" }
    #expect(raw == ["2:read", "11:close", "14:rename"])
    let all = source.calls(routedOrNot: true).map { "\($0.line):\($0.name)" }
    #expect(all == ["1:sg_open", "2:read", "6:write", "11:close", "14:rename"])
  }
}
