import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The console's Unix socket (`console.unix_path`): the kernel says who connects (SO_PEERCRED),
/// root and `console.unix_operators` are operators without AUTH (recorded with who), anyone else
/// who may open the socket is a viewer; a socket left by a dead reader is replaced, anything else
/// at the path is refused.
@Suite(.serialized) struct ConsoleUnixSocketTests {
  func client(_ rig: ConsoleTests.Rig, _ path: String) -> ConsoleTests.TestClient {
    let fd = sg_connect_unix(path)
    precondition(fd >= 0, "connect \(path): \(errno)")
    _ = sg_fcntl_int(fd, F_SETFL, sg_fcntl_int(fd, F_GETFL, 0) | O_NONBLOCK)
    return ConsoleTests.TestClient(fd: fd, rig: rig)
  }

  @Test("root on the socket is an operator without AUTH: OPEN pulses the relay, the grant is recorded with uid 0")
  func rootIsOperator() {
    let path = temporaryDirectory("unix") + "/console.sock"
    let rig = ConsoleTests.Rig { $0.unixPath = path }
    var st = stat()
    #expect(lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK && st.st_mode & 0o777 == 0o660)
    #expect(rig.loop.console!.boundAddresses.contains("unix:" + path))
    let c = client(rig, path)
    let greeting = c.readUntil { $0.contains("Unix socket") }
    #expect(greeting.contains("console ready") && greeting.contains("! operator: uid 0 on the Unix socket"), "\(greeting)")
    #expect(c.command("OPEN 300").last?.hasPrefix("OK #") == true, "\(c.text)")
    rig.step(20)
    #expect(!rig.relay.edges.isEmpty)
    let commands = rig.loop.engine.events.lines { e in
      e.kind == .command ? EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown) : nil
    }
    #expect(commands.contains { $0.contains("AUTH by the Unix socket's peer, uid 0") }, "\(commands)")
  }

  @Test("AS names the web page's person once and only lowers the role: a viewer cannot OPEN; an operator's OPEN says who")
  func asNamesTheSession() {
    let path = temporaryDirectory("unix") + "/console.sock"
    let rig = ConsoleTests.Rig { $0.unixPath = path }
    let viewer = client(rig, path)
    _ = viewer.readUntil { $0.contains("Unix socket") }
    #expect(viewer.command("AS alice viewer").last == "OK as web:alice viewer", "\(viewer.text)")
    #expect(viewer.command("OPEN").last?.hasPrefix("ERR 401") == true, "a viewer, though root's socket: \(viewer.text)")
    #expect(viewer.command("AS alice operator").last?.hasPrefix("ERR 409") == true, "once per connection")
    #expect(viewer.command("WATCH ON").last == "OK watching (payloads hidden until AUTH)")
    #expect(viewer.command("AS Alice viewer").last?.hasPrefix("ERR 400") == true, "names are lowercase")
    let op = client(rig, path)
    _ = op.readUntil { $0.contains("Unix socket") }
    #expect(op.command("AS bob operator").last == "OK as web:bob operator", "\(op.text)")
    #expect(op.command("OPEN 300").last?.hasPrefix("OK #") == true, "\(op.text)")
    rig.step(20)
    #expect(!rig.relay.edges.isEmpty)
    let commands = rig.loop.engine.events.lines { e in
      e.kind == .command ? EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown) : nil
    }
    #expect(commands.contains { $0.contains("AS operator web:bob (uid 0)") }, "\(commands)")
    #expect(commands.contains { $0.contains("OPEN 300 by web:bob (uid 0)") }, "\(commands)")
    #expect(!commands.contains { $0.contains("alice") && $0.contains("OPEN") })
    // A named session never sees a payload, even as an operator.
    #expect(op.command("WATCH ON").last == "OK watching (payloads hidden until AUTH)", "\(op.text)")
    // Over TCP, a client of this host that is no operator cannot lift itself either.
    let tcp = rig.connect()
    #expect(tcp.command("AS eve operator").last?.hasPrefix("ERR 4") == true, "\(tcp.text)")
  }

  /// As user nobody: connects to `path`, prints the greeting and the reply to OPEN.
  static let nobodyOpen = """
    import socket, sys
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sys.argv[1])
        f = s.makefile("rb")
        print(f.readline().decode().strip(), flush=True)
        s.sendall(b"OPEN\\n")
        while True:
            line = f.readline().decode().strip()
            if line.startswith("OK") or line.startswith("ERR"):
                print(line, flush=True)
                break
    except OSError as e:
        print("refused: %s" % e.strerror, flush=True)
    print("done", flush=True)
    """

  func openAsNobody(_ rig: ConsoleTests.Rig, _ path: String) -> String {
    let script = rig.directory + "/nobody-unix.py"
    writeFile(script, Self.nobodyOpen)
    chmod(rig.directory, 0o755)
    chmod(script, 0o644)
    let child = Child.start(["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", script, path])
    let end = SystemMonotonicClock().now().adding(milliseconds: 20_000)
    while SystemMonotonicClock().now() < end && !child.output.contains("done") { rig.step(5) }
    _ = child.wait(timeoutSeconds: 5)
    return child.output
  }

  @Test("another user on the socket is a viewer (OPEN needs AUTH); listed in console.unix_operators, an operator", .enabled(if: ConsoleTests.canSwitchUser))
  func otherUsers() {
    let dir = temporaryDirectory("unix")
    chmod(dir, 0o755)
    let path = dir + "/console.sock"
    do {
      let rig = ConsoleTests.Rig { $0.unixPath = path }
      // Mode 0660 keeps out who is not in the service's group.
      #expect(openAsNobody(rig, path).contains("Permission denied"))
      chmod(path, 0o666)  // as if nobody were in the group
      let out = openAsNobody(rig, path)
      #expect(out.contains("console ready") && out.contains("ERR 401"), "\(out)")
      rig.step(20)
      #expect(rig.relay.edges.isEmpty)
    }
    let rig = ConsoleTests.Rig {
      $0.unixPath = path
      $0.unixOperators = ["nobody"]
    }
    chmod(path, 0o666)
    let out = openAsNobody(rig, path)
    #expect(out.contains("OK #"), "\(out)")
    rig.step(20)
    #expect(!rig.relay.edges.isEmpty)
  }

  @Test("a socket a dead reader left is replaced; a file, or a socket another process answers on, is refused")
  func whatIsAtThePath() throws {
    let dir = temporaryDirectory("unix")
    defer { removeTree(dir) }
    var settings = ConsoleSettings()
    settings.listen = []
    settings.unixPath = dir + "/console.sock"
    // A socket nobody answers on (its reader was killed): replaced.
    let stale = sg_listen_unix(settings.unixPath, 0o600)
    close(stale)
    do {
      let console = try ConsoleServer(settings: settings, clock: SystemMonotonicClock())
      #expect(console.boundAddresses == ["unix:" + settings.unixPath])
    }
    #expect(access(settings.unixPath, F_OK) != 0, "the socket goes with its server")
    // A live listener at the path: refused, left alone.
    let live = sg_listen_unix(settings.unixPath, 0o600)
    #expect(throws: SystemError.self) { try ConsoleServer(settings: settings, clock: SystemMonotonicClock()) }
    close(live)
    unlink(settings.unixPath)
    // A regular file: refused, never replaced.
    writeFile(settings.unixPath, "keep me\n")
    #expect(throws: SystemError.self) { try ConsoleServer(settings: settings, clock: SystemMonotonicClock()) }
    #expect(String(decoding: try readWholeFile(settings.unixPath, maxBytes: 64), as: UTF8.self) == "keep me\n")
    // An operator that is no user.
    unlink(settings.unixPath)
    settings.unixOperators = ["no-such-user-here"]
    #expect(throws: SystemError.self) { try ConsoleServer(settings: settings, clock: SystemMonotonicClock()) }
  }
}
