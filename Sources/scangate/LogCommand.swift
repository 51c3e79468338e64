import Glibc
import ScanCore
import ScanLinux

/// `scangate log`: reads the audit log. `scangate log verify` checks its hash chain.
enum LogCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      var arguments = arguments
      let verify = arguments.first == "verify"
      if verify { arguments.removeFirst() }
      let options = try Options(arguments, valued: ["config", "db", "since", "limit"], known: ["json"])
      var path = options.value("db")
      if path == nil {
        guard let config = ExtraCommands.loadConfig(options) else { return 1 }
        path = config.logPath
      }
      guard let path, !path.isEmpty else { throw ParseError(message: "no log configured ([log] path, or --db FILE)") }
      guard fileExists(path) else { throw ParseError(message: "\(path): no such log") }
      let store: AuditStore
      do { store = try AuditStore(path: path, readOnly: true) } catch {
        writeStandardError("scangate log: \(error)\n")
        return 1
      }
      if verify {
        do {
          let v = try store.verify(digester: SodiumDigester())
          if let problem = v.firstBreak {
            print("\(path): BROKEN at record \(problem.sequence): \(problem.reason) (\(v.records) records checked)")
            return 1
          }
          print("\(path): OK, \(v.records) records, sequence \(v.firstSequence)...\(v.lastSequence), hash chain intact")
          return 0
        } catch {
          print("\(path): cannot be read: \(error)")
          return 1
        }
      }
      var since = Int64.min
      if let text = options.value("since") { since = try RFC3339.parse(text[...]) * 1_000_000_000 }
      let limit = Int64(try options.integer("limit", default: Int.max, range: 1...Int.max))
      let json = options.flag("json")
      do {
        try store.read(sinceNanoseconds: since, limit: limit) { r in
          if json {
            print("{\"seq\":\(r.sequence),\"run\":\(r.run),\"event\":\(r.eventSequence),\"time\":\(jsonString(RFC3339.format(r.wallNanoseconds / 1_000_000_000))),"
              + "\"time_ns\":\(r.wallNanoseconds),\"kind\":\(jsonString(r.kind)),\"verdict\":\(jsonString(r.verdict)),"
              + "\"format\":\(jsonString(r.format)),\"variant\":\(jsonString(r.variant)),\"sha256\":\(jsonString(r.digest)),"
              + "\"label\":\(jsonString(r.label)),\"payload\":\(jsonString(r.payload)),\"code\":\(r.code),\"detail\":\(jsonString(r.detail)),"
              + "\"decode_us\":\(r.decodeMicroseconds),\"decide_us\":\(r.decideMicroseconds),\"edge_us\":\(r.edgeMicroseconds)}")
          } else {
            print(r.line)
          }
        }
      } catch {
        writeStandardError("scangate log: \(error)\n")
        return 1
      }
      return 0
    } catch {
      writeStandardError("scangate log: \(error)\n")
      return 2
    }
  }
}
