import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate log`: reads the audit log. `scangate log verify [--key FILE] [--head SEQ:HEX]`
/// checks its keyed chain and, given a chain head published earlier, that nothing was cut or
/// re-chained behind it.
enum LogCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      var arguments = arguments
      let verify = arguments.first == "verify"
      if verify { arguments.removeFirst() }
      let options = try Options(arguments, valued: ["config", "db", "since", "limit", "key", "head"], known: ["json", "csv"])
      var path = options.value("db")
      var keyPath = options.value("key")
      var fleetStatePath: String? = nil
      if path == nil {
        guard let config = loadConfig(options) else { return 1 }
        path = config.log.path
        fleetStatePath = config.fleet.stateFile.isEmpty ? nil : config.fleet.stateFile
        if keyPath == nil && !config.log.chainKeyFile.isEmpty { keyPath = config.log.chainKeyFile }
      }
      guard let path, !path.isEmpty else { throw ParseError(message: "no log configured ([log] path, or --db FILE)") }
      guard fileExists(path) else { throw ParseError(message: "\(path): no such log") }
      let store: AuditStore
      do { store = try AuditStore(path: path, readOnly: true) } catch {
        writeStandardError("scangate log: \(error)\n")
        return 1
      }
      if verify {
        var published: PublishedChainHead? = nil
        if let text = options.value("head") {
          guard let head = PublishedChainHead(text) else {
            throw ParseError(message: "--head \(text): expected SEQ:HEX (a sequence number, a colon, 16 to 64 hex digits)")
          }
          published = head
        }
        let fleetState = fleetStatePath ?? path + ".fleet"
        return verifyLog(
          store, path: path, keyPath: keyPath ?? AuditChainKey.defaultPath(forLog: path), published: published, fleetState: fleetState)
      }
      var since = Int64.min
      if let text = options.value("since") {
        let (ns, overflow) = try RFC3339.parse(text[...]).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { throw ParseError(message: "--since \(text): out of range (years 1678...2262)") }
        since = ns
      }
      // The newest N, oldest first: what the console's LOG N shows (one meaning for both).
      let limit = Int64(try options.integer("limit", default: Int.max, range: 1...Int.max))
      let json = options.flag("json"), csv = options.flag("csv")
      guard !(json && csv) else { throw ParseError(message: "give --json or --csv, not both") }
      if csv { print(CSV.record(csvColumns), terminator: "") }
      do {
        try store.read(sinceNanoseconds: since, limit: limit, newest: true) { r in
          if csv {
            print(CSV.record(csvRow(r)), terminator: "")
          } else if json {
            print(
              "{\"seq\":\(r.sequence),\"run\":\(r.run),\"event\":\(r.eventSequence),\"time\":\(jsonString(RFC3339.format(r.wallNanoseconds / 1_000_000_000))),"
                + "\"time_ns\":\(r.wallNanoseconds),\"kind\":\(jsonString(r.kind.name)),\"verdict\":\(jsonString(r.verdict?.name ?? "")),"
                + "\"format\":\(jsonString(r.format)),\"variant\":\(jsonString(r.variant)),\"\(r.tag.count == 64 ? "sha256" : "tag")\":\(jsonString(r.tag)),"
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

  /// `--csv`'s columns: the JSON form's keys, in its order.
  static let csvColumns = [
    "seq", "run", "event", "time", "time_ns", "kind", "verdict", "format", "variant", "tag", "label", "payload", "code",
    "detail", "decode_us", "decide_us", "edge_us",
  ]

  /// One record as `--csv` writes it. Text a person or a printed code chose (label, payload,
  /// detail) is made inert for spreadsheets (`CSV.inert`: a leading `'` before `=`, `+`, `-`, `@`).
  static func csvRow(_ r: AuditRecord) -> [String] {
    [
      String(r.sequence), String(r.run), String(r.eventSequence), RFC3339.format(r.wallNanoseconds / 1_000_000_000),
      String(r.wallNanoseconds), r.kind.name, r.verdict?.name ?? "", r.format, r.variant, r.tag, CSV.inert(r.label),
      CSV.inert(r.payload), String(r.code), CSV.inert(r.detail), String(r.decodeMicroseconds), String(r.decideMicroseconds),
      String(r.edgeMicroseconds),
    ]
  }

  /// 0 only for a keyed chain that verifies (and contains the published head, if one is given).
  static func verifyLog(_ store: AuditStore, path: String, keyPath: String, published: PublishedChainHead?, fleetState: String) -> Int32 {
    do {
      var key: AuditChainKey? = nil
      if try store.chainFormat() != .unkeyed {
        // The key must be owned by root, the caller, or the log's owner (the service user).
        var log = stat()
        let owner: uid_t? = stat(path, &log) == 0 ? log.st_uid : nil
        do { key = try AuditChainKey.load(keyPath, owner: owner) } catch {
          print("\(path): cannot verify: chain key \(error)")
          return 1
        }
      }
      let v = try store.verify(key: key, published: published)
      let range = v.records == 0 ? "no records" : "\(v.records) records, sequence \(v.firstSequence)...\(v.lastSequence)"
      if let problem = v.firstBreak {
        print("\(path): BROKEN at record \(problem.sequence): \(problem.reason) (\(range))")
        return 1
      }
      if v.unkeyed {
        print(
          "\(path): UNKEYED: written before the keyed chain; its SHA-256 chain is consistent through record "
            + "\(v.head.sequence) (head \(v.head.text)), which proves nothing against whoever could write the file (\(range))")
        return 1
      }
      // Every local sign of the tail: a record the file says it wrote, or a broker acknowledged,
      // that is not there any more, is a cut.
      let signs = try store.tailSigns()
      var cut: [String] = []
      if let written = signs.highestWritten, written > v.lastSequence {
        cut.append("the log's own mark says record \(written) was written")
      }
      // Only the state of this log (or one written before log ids) says anything about its tail.
      if let state = try? FleetState.loadEntry(fleetState), state.acked > v.lastSequence, state.logID == nil || state.logID == v.logID {
        cut.append("the fleet's broker acknowledged record \(state.acked) (\(fleetState))")
      }
      // The writer's committed mark beside the file: records committed and not here went with the
      // WAL (the service writes the cut record at its next start).
      let markPath = AuditHeadMark.path(forLog: path)
      if let mark = try? AuditHeadMark.read(markPath), mark.logID == v.logID ?? "", mark.sequence > v.head.sequence {
        cut.append("its committed mark (\(markPath)) says record \(mark.sequence) was committed (a damaged, torn or deleted WAL)")
      }
      if !cut.isEmpty {
        print("\(path): CUT: the log ends at record \(v.lastSequence), but \(cut.joined(separator: "; and ")) (\(range))")
        return 1
      }
      var notes = ""
      if signs.runs > signs.lastRun && signs.lastRun > 0 {
        notes += "; note: the run counter is \(signs.runs) and the last record is from run \(signs.lastRun) "
        notes += "(the later runs wrote nothing: stopped within their first commit, or their records were cut)"
      }
      if published == nil && signs.highestWritten == nil {
        notes += "; note: no tail mark (a log written before it): a cut tail shows only against a published head (--head)"
      }
      let pruned = v.anchorSequence > 0 ? ", records 1...\(v.anchorSequence) pruned" : ""
      let head = published.map { ", contains the published head \($0.sequence)" } ?? ""
      for missing in v.missingLogs { notes += "; note: record \(missing.sequence) says \(missing.detail)" }
      // Recorded by the writer, under the key: records lost after they were committed, never reused.
      for loss in v.recordedCuts { notes += "; RECORDED LOSS at record \(loss.sequence): \(loss.detail)" }
      let log = v.logID.map { ", log \($0)" } ?? ", a log made before log ids"
      print("\(path): OK, \(range)\(pruned)\(log), keyed chain intact (key \(key!.identifier)), head \(v.head.text)\(head)\(notes)")
      return 0
    } catch {
      print("\(path): cannot be read: \(error)")
      return 1
    }
  }
}
