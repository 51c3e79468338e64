import Glibc
import ScanCore
import ScanLinux
import ScanService
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

  private func connectClient() throws(ConnectError) -> Int32 {
    try connectTCP("127.0.0.1:\(port)")
  }

  private func body() {
    var clients: [Int32] = []
    defer { for fd in clients { closeDescriptor(fd) } }
    let watcher: Int32, talker: Int32
    do {
      for _ in 0..<idle { clients.append(try connectClient()) }
      watcher = try connectClient()
      clients.append(watcher)
      talker = try connectClient()
      clients.append(talker)
      try writeAll(watcher, "WATCH ON\n")
    } catch {
      writeStandardError("console load: \(error)\n")
      return
    }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var pending = 0  // status lines still expected on the talker
    var set = [pollfd(fd: talker, events: Int16(POLLIN), revents: 0), pollfd(fd: watcher, events: Int16(POLLIN), revents: 0)]
    do {
      while !stopFlag.load(ordering: .acquiring) {
        if pending == 0 {
          try writeAll(talker, "STATUS\n")
          pending = 1
        }
        set[0].revents = 0
        set[1].revents = 0
        guard try pollDescriptors(&set, timeoutMilliseconds: 100) > 0 else { continue }
        if set[0].revents != 0 {
          let n = try readSome(talker, into: &buffer)
          if n == 0 { break }
          // Count status lines ("OK ..." at a line start).
          for i in 0..<n where buffer[i] == UInt8(ascii: "O") && (i == 0 || buffer[i - 1] == 0x0A) && i + 1 < n && buffer[i + 1] == UInt8(ascii: "K") {
            commands.wrappingAdd(1, ordering: .relaxed)
            pending = 0
          }
        }
        if set[1].revents != 0 {
          let n = try readSome(watcher, into: &buffer)
          if n == 0 { break }
          for i in 0..<n where buffer[i] == 0x0A { watchedLines.wrappingAdd(1, ordering: .relaxed) }
        }
      }
    } catch {
      writeStandardError("console load: \(error)\n")
    }
  }
}
