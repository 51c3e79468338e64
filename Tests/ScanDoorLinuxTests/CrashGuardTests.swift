import CGPIOD
import Glibc
import ScanTestSupport
import Testing

/// The GPIO shim's crash guard, in a forked child: it must announce itself on stderr and then die
/// of the same signal (default action), so the core and the exit status are unchanged. The
/// relay side (lines driven inactive while the process dies) needs a GPIO chip: the qemu rig
/// checks it against gpio-sim (deploy/hil/guest-job.sh).
@Suite(.serialized) struct CrashGuardTests {
  /// Forks; the child installs the guard with stderr on a pipe and runs `crash`. Returns the
  /// signal that ended the child (0 if it exited) and what it wrote to stderr.
  func crashChild(_ crash: () -> Void) -> (signal: Int32, stderr: String) {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    let pid = fork()
    if pid == 0 {
      // Only async-signal-safe calls between fork and exit (the test process has threads).
      var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
      setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
      dup2(fds[1], 2)
      close(fds[0])
      if sg_gpio_crash_guard_install() != 0 { _exit(90) }
      crash()
      _exit(91)
    }
    close(fds[1])
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 256)
    while true {
      let n = read(fds[0], &buffer, buffer.count)
      if n <= 0 { break }
      bytes += buffer[0..<n]
    }
    close(fds[0])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    let signal = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f ? status & 0x7f : 0
    return (signal, String(decoding: bytes, as: UTF8.self))
  }

  @Test(
    "a fatal signal is announced once and re-raised with its default action",
    arguments: [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP])
  func reraises(signal: Int32) {
    let (died, stderr) = crashChild {
      // The test runner's threads may block some of these (SIGABRT here): kill(2) from outside
      // would then wait, while a real fault or abort() is never held back.
      var set = sigset_t()
      sigemptyset(&set)
      sigaddset(&set, signal)
      sigprocmask(SIG_UNBLOCK, &set, nil)
      raise(signal)
    }
    #expect(died == signal)
    #expect(stderr == "scangate: fatal signal \(signal): outputs driven inactive\n")
  }

  @Test("a real fault (a store to address 8) goes through the guard and still dies of SIGSEGV")
  func realFault() {
    let (died, stderr) = crashChild {
      UnsafeMutablePointer<Int>(bitPattern: 8)!.pointee = 1
    }
    #expect(died == SIGSEGV)
    #expect(stderr == "scangate: fatal signal \(SIGSEGV): outputs driven inactive\n")
  }

  @Test("abort() goes through the guard and still dies of SIGABRT")
  func abortCall() {
    let (died, stderr) = crashChild {
      // As in the service, SIGABRT is not blocked (the test runner's thread may block it, and
      // glibc 2.41, trixie's, then dies of the default action without running the handler).
      var set = sigset_t()
      sigemptyset(&set)
      sigaddset(&set, SIGABRT)
      sigprocmask(SIG_UNBLOCK, &set, nil)
      abort()
    }
    #expect(died == SIGABRT)
    #expect(stderr == "scangate: fatal signal \(SIGABRT): outputs driven inactive\n")
  }
}
