import CLinux
import Glibc
import ScanCore
import ScanLinux
import Synchronization

/// Console load for the benchmarks, from a thread of its own: `idle` connected clients that say
/// nothing, one client watching every event, and one sending STATUS and reading each reply as
/// fast as the reader answers (commands per second).
final class ConsoleLoad: @unchecked Sendable {
  let port: UInt16
  let idle: Int
  let stopFlag = Atomic<Bool>(false)
  let commands = Atomic<Int>(0)
  let watchedLines = Atomic<Int>(0)
  private var thread = pthread_t()

  init(port: UInt16, idle: Int) {
    self.port = port
    self.idle = idle
  }

  func start() {
    thread = startThread { [self] in body() }
  }

  func stop() {
    stopFlag.store(true, ordering: .releasing)
    pthread_join(thread, nil)
  }

  private func connectClient() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = port.bigEndian
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    return fd
  }

  private func body() {
    let idleClients = (0..<idle).map { _ in connectClient() }
    let watcher = connectClient(), talker = connectClient()
    _ = "WATCH ON\n".withCString { write(watcher, $0, 9) }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var pending = 0  // status lines still expected on the talker
    let command = Array("STATUS\n".utf8)
    while !stopFlag.load(ordering: .acquiring) {
      if pending == 0 {
        _ = command.withUnsafeBytes { write(talker, $0.baseAddress, $0.count) }
        pending = 1
      }
      var set = [pollfd(fd: talker, events: Int16(POLLIN), revents: 0), pollfd(fd: watcher, events: Int16(POLLIN), revents: 0)]
      if poll(&set, 2, 100) <= 0 { continue }
      if set[0].revents != 0 {
        let n = buffer.withUnsafeMutableBytes { read(talker, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        // Count status lines ("OK ..." at a line start).
        for i in 0..<n where buffer[i] == UInt8(ascii: "O") && (i == 0 || buffer[i - 1] == 0x0A) && i + 1 < n && buffer[i + 1] == UInt8(ascii: "K") {
          commands.wrappingAdd(1, ordering: .relaxed)
          pending = 0
        }
      }
      if set[1].revents != 0 {
        let n = buffer.withUnsafeMutableBytes { read(watcher, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        for i in 0..<n where buffer[i] == 0x0A { watchedLines.wrappingAdd(1, ordering: .relaxed) }
      }
    }
    for fd in idleClients + [watcher, talker] { close(fd) }
  }
}
