import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate console`: a small client for people without nc, socat or picocom. Sends each line
/// of standard input, prints everything the reader sends. `--command` sends one command and
/// exits with its status (0 for OK, 1 for ERR) for scripts.
enum ConsoleCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments, valued: ["tcp", "unix", "serial", "baud", "command", "timeout", "secret-file"], known: [])
      let fd = try open(options)
      defer { closeDescriptor(fd) }
      if let command = options.value("command") {
        return oneShot(fd, command, timeoutSeconds: try options.integer("timeout", default: 10, range: 1...3600))
      }
      return interactive(fd)
    } catch {
      writeStandardError("scangate console: \(error)\n")
      return 2
    }
  }

  static func connect(_ address: String) throws(ParseError) -> Int32 {
    do { return try connectTCP(address, defaultPort: "4570") } catch { throw ParseError(message: "\(error)") }
  }

  /// Sends `command` and collects the reply (`ConsoleClient.exchange`) on a descriptor the caller keeps.
  static func exchange(_ fd: Int32, _ command: String, timeoutSeconds: Int) -> (body: [String], status: String)? {
    let reply = ConsoleClient(fd: fd, owned: false).exchange(command, timeoutSeconds: timeoutSeconds)
    if reply == nil { writeStandardError("scangate console: no reply within \(timeoutSeconds) s\n") }
    return reply
  }

  /// Sends `command`, prints its reply; 0 on OK, 1 on ERR, 2 when there was none.
  static func oneShot(_ fd: Int32, _ command: String, timeoutSeconds: Int) -> Int32 {
    guard let reply = exchange(fd, command, timeoutSeconds: timeoutSeconds) else { return 2 }
    for line in reply.body { print("| " + line) }
    print(reply.status)
    return reply.status.hasPrefix("OK") ? 0 : 1
  }

  /// Opens the console named by `--tcp`, `--unix` or `--serial` (default TCP 127.0.0.1:4570) and, with
  /// `--secret-file`, becomes operator first (the secret is read from the file, never from the
  /// command line, where `ps` would show it).
  static func open(_ options: Options) throws(ParseError) -> Int32 {
    let fd = try openTransport(options)
    guard let path = options.value("secret-file") else { return fd }
    var bytes: [UInt8]
    do { bytes = try SecretFile.read(path) } catch {
      closeDescriptor(fd)
      throw ParseError(message: "--secret-file: \(error)")
    }
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
    let reply = exchange(fd, "AUTH " + PayloadEscaping.escaped(bytes), timeoutSeconds: 10)
    for i in bytes.indices { bytes[i] = 0 }
    guard let reply, reply.status.hasPrefix("OK") else {
      closeDescriptor(fd)
      throw ParseError(message: "AUTH refused: \(reply?.status ?? "no reply")")
    }
    return fd
  }

  static func openTransport(_ options: Options) throws(ParseError) -> Int32 {
    if let path = options.value("unix") {
      // The reader's Unix socket (console.unix_path): who connects is the role (root: operator).
      do { return try syscall("connect to \(path)", { sg_connect_unix(path) }) } catch { throw ParseError(message: "\(error)") }
    }
    if let path = options.value("serial") {
      let baud = try options.integer("baud", default: 115_200, range: 300...4_000_000)
      do { return try SerialPort.open(path: path, baud: baud) } catch { throw ParseError(message: "\(error)") }
    }
    return try connect(options.value("tcp") ?? "127.0.0.1:4570")
  }

  /// Copies the console to standard output and standard input to the console until the reader
  /// closes the connection (0) or a call fails (2).
  static func interactive(_ fd: Int32) -> Int32 {
    var buffer = [UInt8](repeating: 0, count: 4096)
    var set = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: 0, events: Int16(POLLIN), revents: 0)]
    do {
      while true {
        set[0].revents = 0
        set[1].revents = 0
        _ = try pollDescriptors(&set, timeoutMilliseconds: -1)
        if set[0].revents != 0 {
          let n = try readSome(fd, into: &buffer, "read the console")
          if n == 0 { return 0 }  // the reader closed the connection
          try writeAll(1, buffer, range: 0..<n, "write standard output")
        }
        if set[1].revents != 0 {
          let n = try readSome(0, into: &buffer, "read standard input")
          if n == 0 {
            set[1].fd = -1  // standard input ended: stop polling it, tell the reader we are done
            _ = try? syscall("shutdown", { shutdown(fd, Int32(SHUT_WR)) })  // fails on a serial port: nothing to do
            continue
          }
          try writeAll(fd, buffer, range: 0..<n, "send to the console")
        }
      }
    } catch {
      writeStandardError("scangate console: \(error)\n")
      return 2
    }
  }
}
