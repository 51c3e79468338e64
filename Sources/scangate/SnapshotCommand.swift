import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate snapshot --out FILE.png` / `--text`: the aiming aid, from a running reader through
/// its console (TCP or serial).
enum SnapshotCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments, valued: ["tcp", "serial", "baud", "out", "timeout", "secret-file"], known: ["text"])
      let text = options.flag("text")
      guard text || options.value("out") != nil else { throw ParseError(message: "give --out FILE.png, or --text") }
      let fd = try ConsoleCommand.open(options)
      defer { closeDescriptor(fd) }
      let timeout = try options.integer("timeout", default: 30, range: 1...600)
      guard let reply = ConsoleCommand.exchange(fd, text ? "SNAPSHOT TEXT" : "SNAPSHOT", timeoutSeconds: timeout) else { return 2 }
      guard reply.status.hasPrefix("OK") else {
        writeStandardError("scangate snapshot: \(reply.status)\n")
        return 1
      }
      if text {
        for line in reply.body { print(line) }
        return 0
      }
      guard let png = ConsoleClient.decodeBase64(reply.body.joined()) else { throw ParseError(message: "the reply is not valid base64") }
      try writeFileAtomically(options.value("out")!, png)
      print("\(options.value("out")!): \(reply.status.dropFirst(3))")
      return 0
    } catch let error as FileError {
      writeStandardError("scangate snapshot: \(error)\n")
      return 1
    } catch {
      writeStandardError("scangate snapshot: \(error)\n")
      return 2
    }
  }
}
