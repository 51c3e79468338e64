import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The errno policy, with errno injected: each scripted call sets errno through the CLinux shim
/// (as a failing system call does) and returns -1, or returns a result.
@Suite struct ErrnoTests {
  /// A fake system call: fails with each errno in `script` in turn, then returns `result`.
  final class ScriptedCall {
    var script: [Int32]
    let result: Int
    var calls = 0
    init(_ script: [Int32], then result: Int = 7) {
      self.script = script
      self.result = result
    }
    func callAsFunction() -> Int {
      calls += 1
      guard !script.isEmpty else { return result }
      sg_set_errno(script.removeFirst())
      return -1
    }
  }

  @Test("ScanBase's errno names hold the C library's numbers (Linux's generic ones, a Pi's too), and the platform describes them with strerror")
  func namesAreTheLibrarys() {
    let pairs: [(Errno, Int32)] = [
      (.noSuchFile, ENOENT), (.interrupted, EINTR), (.ioError, EIO), (.badDescriptor, EBADF), (.wouldBlock, EAGAIN),
      (.wouldBlock, EWOULDBLOCK), (.noMemory, ENOMEM), (.permissionDenied, EACCES), (.badAddress, EFAULT), (.busy, EBUSY),
      (.noDevice, ENODEV), (.invalidArgument, EINVAL), (.brokenPipe, EPIPE), (.addressInUse, EADDRINUSE),
      (.connectionReset, ECONNRESET), (.notConnected, ENOTCONN), (.timedOut, ETIMEDOUT), (.connectionRefused, ECONNREFUSED),
    ]
    for (name, number) in pairs { #expect(name.rawValue == number, "\(name) is \(name.rawValue), the C library says \(number)") }
    #expect("\(Errno.noDevice)" == String(cString: strerror(ENODEV)))
    // A GPIO line's and a camera's errors carry the typed value, described the same way.
    #expect("\(GPIOError(errno: .busy, operation: "request").errno)" == String(cString: strerror(EBUSY)))
    #expect(CaptureError.deviceLost(errno: .timedOut) == .deviceLost(errno: Errno(ETIMEDOUT)))
  }

  @Test("EINTR is retried: the call runs again until it succeeds")
  func interruptedIsRetried() throws {
    let call = ScriptedCall([EINTR, EINTR, EINTR])
    let outcome = try syscallRetrying("read", { call() })
    guard case .done(let value) = outcome else { Issue.record("got wouldBlock"); return }
    #expect(value == 7)
    #expect(call.calls == 4)
  }

  @Test("EAGAIN is 'nothing now': wouldBlock, without calling again")
  func wouldBlockIsNotRetried() throws {
    let call = ScriptedCall([EAGAIN])
    let outcome = try syscallRetrying("read", { call() })
    guard case .wouldBlock = outcome else { Issue.record("got \(outcome)"); return }
    #expect(call.calls == 1)
    // EWOULDBLOCK is the same number on Linux and so the same outcome.
    let again = ScriptedCall([EWOULDBLOCK])
    guard case .wouldBlock = try syscallRetrying("read", { again() }) else { Issue.record("EWOULDBLOCK"); return }
  }

  @Test("an interrupted call that then finds nothing to do is wouldBlock after one retry")
  func interruptedThenWouldBlock() throws {
    let call = ScriptedCall([EINTR, EAGAIN])
    guard case .wouldBlock = try syscallRetrying("read", { call() }) else { Issue.record("not wouldBlock"); return }
    #expect(call.calls == 2)
  }

  @Test("any other errno is thrown with its value and the operation, without a retry", arguments: [ECONNRESET, EIO, ENODEV, ETIMEDOUT])
  func otherErrnoIsThrown(code: Int32) {
    let call = ScriptedCall([code])
    #expect(throws: SystemError(Errno(code), operation: "recv from 4")) {
      _ = try syscallRetrying("recv from \(4)", { call() })
    }
    #expect(call.calls == 1)
  }

  @Test("the blocking variant retries EINTR and turns EAGAIN into an error")
  func blockingVariant() throws {
    let interrupted = ScriptedCall([EINTR])
    #expect(try syscall("write", { interrupted() }) == 7)
    #expect(interrupted.calls == 2)
    let blocked = ScriptedCall([EAGAIN])
    do {
      _ = try syscall("write", { blocked() })
      Issue.record("EAGAIN did not throw")
    } catch {
      #expect(error.code == .wouldBlock)
      #expect(error.code.rawValue == EAGAIN)
      #expect(error.operation == "write")
    }
    #expect(blocked.calls == 1)
  }

  @Test("a result other than -1 is returned as is, even a negative one, and errno is not read")
  func resultsPassThrough() throws {
    sg_set_errno(EINTR)
    let call = ScriptedCall([], then: -2)
    guard case .done(let value) = try syscallRetrying("ioctl", { call() }) else { Issue.record("wouldBlock"); return }
    #expect(value == -2)
    #expect(call.calls == 1)
  }

  @Test("names match the numbers; the text is strerror's")
  func names() {
    #expect(Errno.interrupted.rawValue == 4)
    #expect(Errno.wouldBlock.rawValue == 11)
    #expect(Errno.timedOut.rawValue == 110)
    #expect(Errno(ENOENT) == .noSuchFile)
    #expect(Errno.noSuchFile.description == "No such file or directory")
    sg_set_errno(ECONNREFUSED)
    #expect(Errno.current == .connectionRefused)
    #expect(SystemError(.connectionRefused, operation: "connect 127.0.0.1:9").description == "connect 127.0.0.1:9: Connection refused")
    // The raw-number spellings still in use elsewhere agree with the typed one.
    #expect(SystemError(errno: EINVAL, operation: "x") == SystemError(.invalidArgument, operation: "x"))
  }
}

/// The helpers built on the policy, on real descriptors.
@Suite struct DescriptorHelperTests {
  @Test("with standard error closed (a decoder worker has none; `2>&-`) an error message is dropped quietly, never a trap")
  func standardErrorClosed() {
    // In a child: closing descriptor 2 in this process would hand it to a parallel test's open.
    let (status, _) = runCommand(["/bin/sh", "-c", "exec 2>&-; exec \"$0\" check-config --config /nonexistent/config.toml", scangateBinary])
    #expect(status == 1, "exit status \(status): 128 + a signal is a trap")
  }

  @Test("writeAll and readSome move every byte through a pipe; end of stream reads 0")
  func pipeRoundTrip() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    let text = String(repeating: "scangate ", count: 100)
    try writeAll(ends[1], text)
    close(ends[1])
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let n = try readSome(ends[0], into: &buffer)
      if n == 0 { break }
      got += buffer[0..<n]
    }
    close(ends[0])
    #expect(String(decoding: got, as: UTF8.self) == text)
  }

  @Test("writing to a pipe with no reader throws EPIPE")
  func brokenPipe() {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    close(ends[0])
    signal(SIGPIPE, SIG_IGN)  // left ignored: nothing in the tests wants to die of it
    defer { close(ends[1]) }
    #expect(throws: SystemError(.brokenPipe, operation: "write pipe")) { try writeAll(ends[1], "x", "write pipe") }
  }

  @Test("connectTCP to a closed port fails with ECONNREFUSED; an unresolvable name says so")
  func connectFailures() throws {
    // A port that was just free: bind, read the port, close.
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &sa) { p in
      p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
    }
    #expect(bound)
    close(probe)
    let port = UInt16(bigEndian: sa.sin_port)
    do {
      let fd = try connectTCP("127.0.0.1:\(port)")
      close(fd)
      Issue.record("connected to a closed port")
    } catch {
      guard case .failed(let address, let cause) = error else { Issue.record("\(error)"); return }
      #expect(address == "127.0.0.1:\(port)")
      #expect(cause.code == .connectionRefused)
    }
    #expect(throws: ConnectError.self) { try connectTCP("no-such-host.invalid:1") }
  }

  @Test("connectTCP with a timeout gives up on a listener that takes no more connections, in that time, not the kernel's two minutes")
  func connectTimesOut() throws {
    // A listener that never accepts: once its queue is full Linux drops further SYNs, and a
    // connect(2) without a bound would wait for the SYN's retries (some 130 s).
    let (listener, port) = try #require(loopbackListener())
    defer { close(listener) }
    var held: [Int32] = []
    defer { for fd in held { close(fd) } }
    var timedOut: Duration? = nil
    let clock = ContinuousClock()
    for _ in 0..<16 where timedOut == nil {
      let start = clock.now
      do {
        held.append(try connectTCP("127.0.0.1:\(port)", timeoutMilliseconds: 300))
      } catch {
        guard case .failed(_, let cause) = error else { throw error }
        #expect(cause.errno == EINPROGRESS || cause.errno == EAGAIN, "\(cause)")
        timedOut = clock.now - start
      }
    }
    let waited = try #require(timedOut, "every connect was taken (\(held.count))")
    #expect(waited >= .milliseconds(250) && waited < .seconds(5), "\(waited)")
  }

  @Test("connectTCP reaches a listener, with the port from defaultPort")
  func connectReaches() throws {
    let (listener, port) = try #require(loopbackListener())
    defer { close(listener) }
    let fd = try connectTCP("127.0.0.1", defaultPort: String(port))
    try writeAll(fd, "PING\n")
    let peer = accept(listener, nil, nil)
    var buffer = [UInt8](repeating: 0, count: 16)
    #expect(try readSome(peer, into: &buffer) == 5)
    #expect(buffer[0..<5] == Array("PING\n".utf8)[...])
    close(peer)
    close(fd)
  }

  @Test("SerialPort.open sets a pty raw at the baud rate; a missing path and a non-tty throw")
  func serialPort() throws {
    var slave = [CChar](repeating: 0, count: 128)
    let master = sg_open_pty(&slave, slave.count)
    #expect(master >= 0)
    defer { close(master) }
    let path = slave.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    let fd = try SerialPort.open(path: path, baud: 9_600)
    defer { close(fd) }
    var t = termios()
    #expect(tcgetattr(fd, &t) == 0)
    #expect(cfgetospeed(&t) == speed_t(B9600))
    #expect(t.c_lflag & tcflag_t(ICANON | ECHO) == 0)  // raw: no line editing, no echo
    #expect(t.c_cflag & tcflag_t(CSIZE) == tcflag_t(CS8))
    #expect(fcntl(fd, F_GETFL) & O_NONBLOCK == 0)
    let polled = try SerialPort.open(path: path, baud: 115_200, nonBlocking: true)
    #expect(fcntl(polled, F_GETFL) & O_NONBLOCK != 0)
    close(polled)

    #expect(throws: SystemError(.noSuchFile, operation: "open /nonexistent/tty")) { try SerialPort.open(path: "/nonexistent/tty", baud: 9_600) }
    do {
      _ = try SerialPort.open(path: "/dev/null", baud: 9_600)
      Issue.record("/dev/null opened as a serial port")
    } catch {
      #expect(error.code == Errno(ENOTTY))
    }
    do {
      _ = try SerialPort.open(path: path, baud: 12_345)
      Issue.record("an unsupported baud rate was accepted")
    } catch {
      #expect(error.code == .invalidArgument)
    }
  }
}
