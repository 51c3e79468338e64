import ScanConsole
import ScanCore
import ScanLinux

/// What the console's people commands keep and need: an IMPORT under way; BACKUP's reader of the
/// files the configuration names (secrets left out; nil: started without the configuration's
/// path); PIN's keyed hash under the keypad's PIN key (nil: no keypad asks for a PIN here).
public struct ConsoleHelpers {
  var peopleImport = PeopleImport()
  public var backupFiles: (() throws(BackupArchive.Refusal) -> BackupArchive)? = nil
  public var pinVerifier: ((Digest, UnsafeRawBufferPointer) -> Digest)? = nil
  public init() {}
}

/// A console IMPORT under way: whose it is, and the CSV so far.
struct PeopleImport {
  var owner: SessionTicket? = nil
  var data: [UInt8] = []
  var startedAt = Instant(nanoseconds: 0)
  /// A console import holds at most this much CSV (the web page sends at most 64 KiB).
  static let bytesMax = 1 << 20
  /// An import left unfinished this long no longer blocks another session's.
  static let idleMillisecondsMax = 120_000
}

/// The console's IMPORT (docs/console.md, "People"): a CSV sent in pieces by one session, then
/// checked or applied with the same code as `scangate allow-list import --csv`; APPLY writes the
/// file through the one durable write and reloads it (as ENROL does), and is recorded with who.
/// One import at a time; another session's unfinished one is given up after 2 minutes idle or
/// when its client goes.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  public mutating func importPeople(
    _ step: ImportStep, data: UnsafeRawBufferPointer, session: SessionTicket, who: UnsafeRawBufferPointer
  ) -> ImportOutcome {
    guard let path = settings.allowListPath, !path.isEmpty else {
      return .refused(code: 503, reason: "no allow_list.path is configured: there is no file to import into")
    }
    let now = engine.clock.now()
    if let owner = helpers.peopleImport.owner, owner != session {
      let gone = console.map { !$0.commands.isCurrent(owner) } ?? true
      let idle = now.milliseconds(since: helpers.peopleImport.startedAt) > PeopleImport.idleMillisecondsMax
      guard gone || idle else { return .refused(code: 409, reason: "another session's import is under way: try again later") }
      helpers.peopleImport = PeopleImport()
    }
    switch step {
    case .begin:
      helpers.peopleImport = PeopleImport(owner: session, data: [], startedAt: now)
      return .accepted("import begun: send IMPORT DATA, then IMPORT CHECK or IMPORT APPLY")
    case .cancel:
      helpers.peopleImport = PeopleImport()
      return .accepted("import cancelled")
    case .data:
      guard helpers.peopleImport.owner == session else { return .refused(code: 409, reason: "IMPORT BEGIN first") }
      guard helpers.peopleImport.data.count + data.count <= PeopleImport.bytesMax else {
        helpers.peopleImport = PeopleImport()
        return .refused(code: 413, reason: "the CSV is over 1 MiB: import given up (use scangate allow-list import on the reader)")
      }
      helpers.peopleImport.data.append(contentsOf: data)
      helpers.peopleImport.startedAt = now
      return .accepted("\(helpers.peopleImport.data.count) bytes")
    case .check(let removeMissing), .apply(let removeMissing):
      guard helpers.peopleImport.owner == session else { return .refused(code: 409, reason: "IMPORT BEGIN first") }
      let csv = helpers.peopleImport.data
      helpers.peopleImport = PeopleImport()
      let plan = planner(csv, path: path, removeMissing: removeMissing)
      if case .apply = step { return applyImport(plan, path: path, who: who, what: "IMPORT APPLY") }
      return checkImport(plan, path: path)
    case .checkList, .applyList:
      guard helpers.peopleImport.owner == session else { return .refused(code: 409, reason: "IMPORT BEGIN first") }
      let list = helpers.peopleImport.data
      helpers.peopleImport = PeopleImport()
      let plan = { (text: [UInt8]) throws(AllowListImport.Refusal) in AllowListImport.Plan(replacing: text, with: list) }
      if step == .applyList { return applyImport(plan, path: path, who: who, what: "IMPORT APPLY LIST") }
      return checkImport(plan, path: path)
    }
  }

  /// How `csv` would change `text`, with this reader's limits, schedules and digester; whether
  /// the result loads is checked in the spare table (CHECK here, APPLY in `editAllowList`), never
  /// in a table allocated for the import.
  private func planner(_ csv: [UInt8], path: String, removeMissing: Bool) -> ([UInt8]) throws(AllowListImport.Refusal) -> AllowListImport.Plan {
    let limits = engine.allowList.limits, schedules = scheduleReferences, digester = engine.digester
    return { (text: [UInt8]) throws(AllowListImport.Refusal) in
      try AllowListImport.plan(
        csv: csv, into: text, source: "the CSV", listPath: path, limits: limits, keepText: false, removeMissing: removeMissing,
        schedules: schedules, digester: digester, validating: false)
    }
  }

  private static func lines(_ plan: AllowListImport.Plan, done: Bool) -> (lines: [String], summary: String) {
    let lines =
      plan.added.map { (done ? "added " : "add ") + $0 } + plan.changed.map { (done ? "changed " : "change ") + $0 }
      + plan.removed.map { (done ? "removed " : "remove ") + $0 }
    let counts = "\(plan.added.count) added, \(plan.changed.count) changed, \(plan.removed.count) removed, \(plan.unchanged) unchanged"
    return (lines, done ? "import applied: " + counts : "import check: " + counts + "; nothing written")
  }

  private mutating func checkImport(
    _ planned: ([UInt8]) throws(AllowListImport.Refusal) -> AllowListImport.Plan, path: String
  ) -> ImportOutcome {
    let text: [UInt8]
    switch AllowListFile.read(path, maxBytes: engine.allowList.limits.fileBytesMax) {
    case .failure(let failure): return .refused(code: 503, reason: "the allow-list file cannot be read: \(failure.error)")
    case .success(let bytes): text = bytes
    }
    do throws(AllowListImport.Refusal) {
      let plan = try planned(text)
      if let error = engine.allowList.validate(plan.text, digester: engine.digester, schedules: scheduleReferences) {
        return .refused(code: 409, reason: "the result would not load (\(error)); nothing written")
      }
      let (lines, summary) = Self.lines(plan, done: false)
      return .plan(lines: lines, summary: summary, sequence: 0)
    } catch {
      return .refused(code: 409, reason: error.why + "; nothing written")
    }
  }

  private mutating func applyImport(
    _ plan: ([UInt8]) throws(AllowListImport.Refusal) -> AllowListImport.Plan, path: String, who: UnsafeRawBufferPointer, what: String
  ) -> ImportOutcome {
    var done: AllowListImport.Plan? = nil
    let edited = editAllowList(path) { text in
      do throws(AllowListImport.Refusal) {
        let p = try plan(text)
        done = p
        return .success(p.text)
      } catch {
        return .failure(AllowListEdit.Refusal(error.why))
      }
    }
    if case .refused(let code, let reason) = edited { return .refused(code: code, reason: reason + (reason.hasSuffix("written") ? "" : "; nothing written")) }
    guard let done else { return .refused(code: 500, reason: "no plan") }
    let (lines, summary) = Self.lines(done, done: true)
    var e = ScanEvent(.command, code: UInt16(ConsoleVerb.importList.rawValue), at: engine.clock.now(), wall: engine.wall.unixNanoseconds())
    withUnsafeTemporaryAllocation(byteCount: 160, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write(what)
      w.write(" by ")
      w.write(bytes: who)
      w.write(": \(done.added.count) added, \(done.changed.count) changed, \(done.removed.count) removed")
      e.setPayload(w.written)
    }
    let sequence = engine.events.append(e)
    return .plan(lines: lines, summary: summary + ", allow-list version \(engine.allowList.version)", sequence: sequence)
  }
}
