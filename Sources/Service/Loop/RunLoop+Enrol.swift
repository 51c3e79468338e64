import Glibc
import ScanConsole
import ScanCore
import ScanLinux

/// The console's ENROL LAST, REMOVE and LIST (docs/console.md, "People"): the allow-list file is
/// edited line by line (AllowListEdit keeps what the administrator wrote), checked in the spare
/// table, written through the one durable write, then reloaded through the normal reload path.
/// Anything that fails leaves the file and the live list as they were.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// How old the last decision may be for ENROL LAST: older, the badge is scanned again (the
  /// person at the door may have changed).
  static var enrolDecisionAgeMillisecondsMax: Int { 300_000 }

  public mutating func enrol(
    tag: UInt64?, label: UnsafeRawBufferPointer, schedule: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer
  ) -> AllowListChange {
    guard let path = settings.allowListPath, !path.isEmpty else {
      return .refused(code: 503, reason: "no allow_list.path is configured: there is no file to add to")
    }
    let candidate: EnrolCandidates.Candidate
    switch enrolCandidate(tag) {
    case .success(let c): candidate = c
    case .failure(let refusal): return refusal.change
    }
    if engine.clock.now().milliseconds(since: candidate.event.monotonic) > Self.enrolDecisionAgeMillisecondsMax {
      return .refused(code: 409, reason: "that code was scanned over 5 minutes ago: scan the badge again")
    }
    // What a badge never is: refused, whatever was scanned (a hostile or damaged code, a pass).
    if candidate.hasControl {
      return .refused(code: 409, reason: "that code holds control characters (a damaged or hostile code, never a badge): not enrolled")
    }
    if candidate.isSignedPass {
      return .refused(code: 409, reason: "that code is a signed pass (SG1): issue passes with scangate credential issue, never enrol them")
    }
    let digest = candidate.digest
    if engine.allowList.decide(digest, nowUnixSeconds: engine.wall.unixSeconds()).1 != nil {
      return .refused(code: 409, reason: "an entry of the allow-list already decides that code")
    }
    var entry = AllowListEdit.Entry(match: "sha256:" + Self.hex(digest), label: String(decoding: label, as: UTF8.self))
    entry.schedule = String(decoding: schedule, as: UTF8.self)
    let shownTag = engine.tagger.map { PayloadTag.hex($0.tag(digest)) } ?? "none"
    let edited = editAllowList(path) { text in
      if AllowListEdit.entry(labelled: entry.label, in: text) != nil {
        return .failure(AllowListEdit.Refusal("label \(entry.label) is used by another entry: pick another or REMOVE it first"))
      }
      return AllowListEdit.appending(entry.line, to: text)
    }
    if case .refused(let code, let reason) = edited { return .refused(code: code, reason: reason) }
    let sequence = recordPeopleChange("ENROL by ", who: who, label: label, tag: engine.tagger?.tag(digest) ?? .zero)
    return .enrolled(tag: shownTag, version: engine.allowList.version, sequence: sequence)
  }

  /// Why ENROL found nothing to enrol.
  private struct EnrolRefusal: Error {
    var change: AllowListChange
    init(_ code: Int, _ reason: String) { change = .refused(code: code, reason: reason) }
  }

  /// The code ENROL LAST (`tag` nil) or ENROL <tag> names, when it was denied as unknown.
  private func enrolCandidate(_ tag: UInt64?) -> Result<EnrolCandidates.Candidate, EnrolRefusal> {
    if let tag {
      guard let tagger = engine.tagger, let c = engine.enrolCandidates.find(tagPrefix: tag, tagger: tagger) else {
        return .failure(EnrolRefusal(404, "no recent unknown code has that tag: ENROL CANDIDATES lists them"))
      }
      return .success(c)
    }
    guard let last = engine.lastDecision, engine.lastDecisionDigest != .zero else {
      return .failure(EnrolRefusal(404, "no code has been decided since the reader started: scan the badge first"))
    }
    if last.verdict.isGranted { return .failure(EnrolRefusal(409, "the last code was granted: it is on the list already")) }
    guard last.verdict == .deniedUnknown, last.code == UInt16(DecisionSource.none.rawValue),
      let c = engine.enrolCandidates.find(digest: engine.lastDecisionDigest)
    else {
      return .failure(EnrolRefusal(409, "the last code was not denied as unknown (an entry or a signed pass decided it): nothing to enrol"))
    }
    return .success(c)
  }

  /// ENROL CANDIDATES: the newest codes denied as unknown, newest first, each on one line:
  /// `| <tag> <time> <verdict> <format> payload=<escaped>` (no payload when `payloads` hides
  /// them: the web page's sessions), and why it cannot be enrolled.
  public func writeEnrolCandidates(payloads: PayloadVisibility, into w: inout ByteWriter) -> Int {
    let candidates = engine.enrolCandidates
    for i in 0..<candidates.count {
      let c = candidates[newest: i]
      w.write("| ")
      if let tagger = engine.tagger { w.writeHex(tagger.tag(c.digest), bytes: PayloadTag.shownBytes) } else { w.write("none") }
      w.write(" ")
      w.write(RFC3339.format(c.event.wallNanoseconds / 1_000_000_000))
      w.write(" ")
      w.write(c.event.verdict.name)
      w.write(" ")
      w.write(c.event.format.name)
      if payloads == .shown {
        w.write(" payload=")
        c.event.withPayload { w.writeEscaped($0) }
        if c.event.payloadTruncated { w.write("...") }
      }
      if c.hasControl { w.write(" (control characters: not enrolled)") }
      if c.isSignedPass { w.write(" (a signed pass: not enrolled)") }
      w.newline()
    }
    return candidates.count
  }

  public mutating func removeEntry(label: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer) -> AllowListChange {
    guard let path = settings.allowListPath, !path.isEmpty else {
      return .refused(code: 503, reason: "no allow_list.path is configured: there is no file to remove from")
    }
    let name = String(decoding: label, as: UTF8.self)
    // The tag of the entry as it is live now (before the edit), for the reply and the record.
    var tagged = Digest.zero
    // The live table holds the name (ivy smith); the console gives it as shown (ivy%20smith).
    let held = (try? PayloadEscaping.unescape(Substring(name).utf8)) ?? Array(label)
    for i in 0..<engine.allowList.count where engine.allowList.withLabel(i, { $0.elementsEqual(held) }) {
      if let tagger = engine.tagger { tagged = tagger.tag(engine.allowList.digest(i)) }
    }
    let edited = editAllowList(path) { text in
      guard let found = AllowListEdit.entry(labelled: name, in: text) else {
        return .failure(AllowListEdit.Refusal("no entry labelled \(name) in the allow-list file"))
      }
      return .success(AllowListEdit.removingLine(found.line, from: text))
    }
    if case .refused(let code, let reason) = edited { return .refused(code: code, reason: reason) }
    let sequence = recordPeopleChange("REMOVE by ", who: who, label: label, tag: tagged)
    return .removed(tag: tagged == .zero ? "none" : PayloadTag.hex(tagged), version: engine.allowList.version, sequence: sequence)
  }

  public func writeEntries(_ query: EntryQuery, into w: inout ByteWriter) -> (shown: Int, total: Int, next: Int?) {
    var shown = 0
    var i = query.from
    while i < engine.allowList.count && shown < query.count {
      defer { i += 1 }
      let matched = withUnsafeTemporaryAllocation(byteCount: 3 * LabelLimits.bytesMax, alignment: 1) { buffer in
        engine.allowList.withLabel(i) { label in
          let n = PayloadEscaping.escape(label, into: buffer).written
          return query.matches(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
      }
      guard matched else { continue }
      shown += 1
      w.write("| ")
      engine.allowList.withLabel(i) { label in
        if label.isEmpty { w.write("(no label)") } else { w.writeEscaped(label) }
      }
      w.write(" tag=")
      if let tagger = engine.tagger { w.writeHex(tagger.tag(engine.allowList.digest(i)), bytes: PayloadTag.shownBytes) } else { w.write("none") }
      if engine.allowList.hasSchedule(i) { w.write(" schedule") }
      if engine.allowList.hasWindow(i) { w.write(" window") }
      if engine.allowList.card(i) != nil { w.write(" card") }
      if engine.allowList.isStatic(i) { w.write(" static") }
      if engine.allowList.isLockdown(i) { w.write(" lockdown") }
      w.newline()
    }
    return (shown, engine.allowList.count, i < engine.allowList.count ? i : nil)
  }

  /// Reads the file, applies `edit`, checks the result loads, writes it durably (keeping the
  /// file's mode) and reloads. `.refused` when any step fails; the live list is kept then.
  mutating func editAllowList(
    _ path: String, _ edit: ([UInt8]) -> Result<[UInt8], AllowListEdit.Refusal>
  ) -> AllowListChange? {
    let text: [UInt8]
    switch AllowListFile.read(path, maxBytes: engine.allowList.limits.fileBytesMax) {
    case .failure(let failure): return .refused(code: 503, reason: "the allow-list file cannot be read: \(failure.error)")
    case .success(let bytes): text = bytes
    }
    let edited: [UInt8]
    switch edit(text) {
    case .failure(let refusal): return .refused(code: 409, reason: refusal.reason)
    case .success(let bytes): edited = bytes
    }
    if let error = engine.allowList.validate(edited, digester: engine.digester, schedules: scheduleReferences) {
      return .refused(code: 409, reason: "the edited allow-list would not load (\(error)): nothing written")
    }
    var status = stat()
    let mode = (try? syscall("stat", { stat(path, &status) })) != nil ? UInt32(status.st_mode & 0o777) : 0o640
    do { try writeFileAtomically(path, edited, mode: mode) } catch {
      return .refused(
        code: 503,
        reason: "the allow-list file cannot be written (\(error.reason)): nothing changed (the service writes only under its state directory: docs/admin.md)")
    }
    if let error = reloadAllowList() {
      return .refused(code: 500, reason: "the file was written but did not reload (\(error)); the live list stays")
    }
    return nil
  }

  /// Records ENROL/REMOVE once done: who (as LOCKDOWN's record names them), the label, the tag.
  mutating func recordPeopleChange(
    _ what: StaticString, who: UnsafeRawBufferPointer, label: UnsafeRawBufferPointer, tag: Digest
  ) -> UInt64 {
    let verb = what.description.hasPrefix("ENROL") ? ConsoleVerb.enrol : what.description.hasPrefix("PIN") ? .pin : .remove
    var e = ScanEvent(.command, code: UInt16(verb.rawValue), at: engine.clock.now(), wall: engine.wall.unixNanoseconds())
    e.tag = tag
    // The name the label stands for, as the live table holds it (the console gives it as shown).
    let shown = String(decoding: label, as: UTF8.self)
    let held = (try? PayloadEscaping.unescape(Substring(shown).utf8)) ?? Array(label)
    held.withUnsafeBytes { e.setLabel($0) }
    withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write(what)
      w.write(bytes: who)
      e.setPayload(w.written)
    }
    return engine.events.append(e)
  }

  /// 64 lowercase hex digits of `digest` (for the file's `sha256:` entry only: never shown).
  static func hex(_ digest: Digest) -> String {
    String(unsafeUninitializedCapacity: 64) { out in
      for i in 0..<32 {
        out[2 * i] = Hex.digit(digest.byte(i) >> 4)
        out[2 * i + 1] = Hex.digit(digest.byte(i))
      }
      return 64
    }
  }
}
