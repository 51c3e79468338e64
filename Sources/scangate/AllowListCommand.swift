import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate allow-list import --csv FILE [--dry-run]` and `scangate allow-list export --csv`
/// (docs/admin.md, "People"). Import adds and changes entries by label, keeping every line the
/// administrator wrote; a payload is stored as its `sha256:` entry unless `--keep-text`. Export
/// writes labels, keyed tags and flags: never a payload and never a digest (a short payload's
/// SHA-256 is searched offline in seconds, and an export leaves the reader).
enum AllowListCommand {
  /// The columns import reads (`tag` and `kind` are export's, accepted and ignored).
  static let importColumns = [
    "payload", "sha256", "label", "zones", "schedule", "from", "until", "card", "static", "lockdown", "tag", "kind", "pin",
  ]
  static let exportColumns = ["label", "tag", "kind", "schedule", "from", "until", "card", "static", "lockdown", "pin"]

  static func run(_ arguments: [String]) -> Int32 {
    var arguments = arguments
    let sub = arguments.first ?? ""
    if !arguments.isEmpty { arguments.removeFirst() }
    do {
      switch sub {
      case "import":
        let options = try Options(arguments, valued: ["config", "csv"], known: ["dry-run", "keep-text", "remove-missing"])
        guard let csv = options.value("csv") else { throw ParseError(message: "import wants --csv FILE") }
        guard let config = loadConfig(options) else { return 1 }
        return importCSV(csv, config: config, options: options)
      case "export":
        let options = try Options(arguments, valued: ["config", "key"], known: ["csv"])
        guard options.flag("csv") else { throw ParseError(message: "export writes CSV only: give --csv") }
        guard let config = loadConfig(options) else { return 1 }
        return exportCSV(config: config, keyPath: options.value("key"))
      case "enrol": return try enrol(arguments)
      case "pin-key": return try pinKey(arguments)
      case "pin": return try pin(arguments)
      default:
        throw ParseError(message: "give import, export, enrol, pin or pin-key (scangate allow-list --help)")
      }
    } catch {
      writeStandardError("scangate allow-list: \(error)\n")
      return 2
    }
  }

  // MARK: - Import

  /// Imports the CSV file's rows into the allow-list (or, with --dry-run, says what it would
  /// do); any problem refuses the whole file and writes nothing.
  static func importCSV(_ csvPath: String, config: ScanConfig, options: Options) -> Int32 {
    let path = config.allowListPath
    let limits = config.engine.allowList
    do throws(AllowListImport.Refusal) {
      let csv: [UInt8]
      do { csv = try readWholeFile(csvPath, maxBytes: limits.fileBytesMax) } catch { throw AllowListImport.Refusal("\(error)") }
      var text: [UInt8] = []
      if fileExists(path) {
        switch AllowListFile.read(path, maxBytes: limits.fileBytesMax) {
        case .success(let bytes): text = bytes
        case .failure(let failure): throw AllowListImport.Refusal("\(path): \(failure.error)")
        }
      }
      let plan = try AllowListImport.plan(
        csv: csv, into: text, source: csvPath, listPath: path, limits: limits, keepText: options.flag("keep-text"),
        removeMissing: options.flag("remove-missing"), schedules: ScheduleReferences.of(file: config.door.schedulePath),
        digester: SodiumDigester())
      return try writeImport(plan, listPath: path, dryRun: options.flag("dry-run"))
    } catch {
      writeStandardError("scangate allow-list import: \(error.why); nothing written\n")
      return 1
    }
  }

  /// Prints the labels added, changed and removed and a summary; unless a dry run (or there is
  /// nothing to change), writes the list with the file's mode.
  static func writeImport(_ plan: AllowListImport.Plan, listPath path: String, dryRun: Bool) throws(AllowListImport.Refusal) -> Int32 {
    for label in plan.added { print("\(dryRun ? "would add" : "added") \(label)") }
    for label in plan.changed { print("\(dryRun ? "would change" : "changed") \(label)") }
    for label in plan.removed { print("\(dryRun ? "would remove" : "removed") \(label)") }
    let summary = "\(plan.added.count) added, \(plan.changed.count) changed, \(plan.removed.count) removed, \(plan.unchanged) unchanged"
    if dryRun {
      print("dry run: \(summary); nothing written")
      return 0
    }
    guard !(plan.added.isEmpty && plan.changed.isEmpty && plan.removed.isEmpty) else {
      print("\(path): \(summary); nothing to write")
      return 0
    }
    var status = stat()
    let mode = (try? syscall("stat", { stat(path, &status) })) != nil ? UInt32(status.st_mode & 0o777) : 0o640
    do { try writeFileAtomically(path, plan.text, mode: mode) } catch { throw AllowListImport.Refusal("\(error)") }
    print("\(path): \(summary); the reader reloads it (allow_list.watch, systemctl reload scangate or RELOAD)")
    return 0
  }

  // MARK: - Export

  static func exportCSV(config: ScanConfig, keyPath: String?) -> Int32 {
    let path = config.allowListPath
    let text: [UInt8]
    switch AllowListFile.read(path, maxBytes: config.engine.allowList.fileBytesMax) {
    case .success(let bytes): text = bytes
    case .failure(let failure):
      writeStandardError("scangate allow-list export: \(path): \(failure.error)\n")
      return 1
    }
    // The tags are the reader's (its tag key, as `scangate tag`); without the key the column is empty.
    var tagKey: TagKey? = nil
    let keyFile = keyPath ?? (config.log.path.isEmpty ? nil : TagKey.defaultPath(forLog: config.log.path))
    if let keyFile {
      var directory = stat()
      let owner: uid_t? = stat(TagCommand.parentDirectory(keyFile), &directory) == 0 ? directory.st_uid : nil
      do { tagKey = try TagKey.load(keyFile, owner: owner) } catch {
        writeStandardError("scangate allow-list export: tag key \(error): the tag column is empty\n")
      }
    } else {
      writeStandardError("scangate allow-list export: no [log] path and no --key: the reader keeps no tag key, the tag column is empty\n")
    }
    let digester = SodiumDigester()
    var out = CSV.record(exportColumns)
    for entry in AllowListEdit.entries(text) {
      var values: [String: String] = [:]
      for field in entry.fields {
        guard let eq = field.firstIndex(of: "=") else { continue }
        values[String(field[..<eq])] = String(field[field.index(after: eq)...])
      }
      let tag = AllowListImport.digestOf(entry.match, digester: digester).flatMap { d in tagKey.map { PayloadTag.hex($0.tag(d)) } } ?? ""
      let kind = entry.match.hasPrefix("text:") ? "text" : "sha256"
      // Made inert for spreadsheets (a label `+1 visitor` is text, not a formula); import reads it back.
      // The label as a spreadsheet holds it ("ivy smith" for the file's ivy%20smith): import escapes it again.
      let label = (entry.label ?? "").utf8
      let shown = (try? PayloadEscaping.unescape(label[...])).map { String(decoding: $0, as: UTF8.self) } ?? String(label)
      out += CSV.record(([shown] + [tag, kind] + exportColumns.dropFirst(3).map { values[$0] ?? "" }).map(CSV.inert))
    }
    print(out, terminator: "")
    return 0
  }
}
