import ScanCore
import ScanPlatform

/// Verification: the chain recomputed from its anchor, the gaps a cut record bridges, the log
/// id's record, and a published head checked against the file.
extension AuditStore {
  /// The outcome of `verify`.
  public struct Verification: Sendable {
    public var records: Int64 = 0
    public var firstSequence: Int64 = 0
    public var lastSequence: Int64 = 0
    /// Where the chain starts (the last pruned record; 0 when nothing was pruned).
    public var anchorSequence: Int64 = 0
    /// The chain's end as found: the last record's sequence and chain value.
    public var head = AuditChainHead.empty
    /// The file was written before the keyed chain: its SHA-256 chain proves nothing against
    /// whoever could write the file (they can recompute it), so it never counts as verified.
    public var unkeyed = false
    /// The first problem: the sequence it was found at and what is wrong.
    public var firstBreak: (sequence: Int64, reason: String)? = nil
    /// The log id (`meta.log_id`, checked against the chain's identity record while that record
    /// is kept) and that record's sequence; nil for a log made before log ids.
    public var logID: String? = nil
    public var identitySequence: Int64? = nil
    /// The `log-missing` records: logs that were gone when this one began or while it was written.
    public var missingLogs: [(sequence: Int64, detail: String)] = []
    /// The gaps the writer recorded (`log-cut` records: committed records lost with a damaged,
    /// torn or deleted WAL): each record's sequence and detail, which names the missing numbers.
    public var recordedCuts: [(sequence: Int64, detail: String)] = []
  }

  /// Recomputes the chain from the anchor (HMAC-SHA-256 under `key`; plain SHA-256 for an
  /// unkeyed file, reported as such) and checks that sequences have no gaps. With `published`,
  /// a chain head a reader saw earlier, it also finds the tail cut (the log ends before that
  /// sequence) and re-chaining (that record's chain value is not the one published).
  /// `key` may be nil only for an unkeyed file (a keyed one then breaks at its first record).
  public func verify(key: AuditChainKey?, published: PublishedChainHead? = nil) throws(SQLiteError) -> Verification {
    var v = Verification()
    let format = try chainFormat()
    v.unkeyed = format == .unkeyed
    var (expectedSequence, previous) = try anchor()
    v.anchorSequence = expectedSequence
    v.head = AuditChainHead(sequence: expectedSequence, value: previous.withUnsafeBytes { Digest(bytes: $0) })
    let digester = SodiumDigester()
    let identity = try identity()
    v.logID = identity.id
    v.identitySequence = identity.recordSequence
    let q = try database.prepare("SELECT \(Self.columns) FROM events ORDER BY seq")
    while try q.step() {
      let sequence = q.int(0)
      if v.records == 0 { v.firstSequence = sequence }
      v.records += 1
      v.lastSequence = sequence
      expectedSequence = expectedSequence.saturatingAdd(1)  // an anchor at 2^63-1 is a gap, not a trap
      if sequence != expectedSequence {
        // A gap passes only where the writer recorded it: the record after it is the cut record
        // naming exactly the missing numbers (its chain value, checked below, proves who wrote it).
        guard sequence > expectedSequence, case .success(let cut) = Self.record(q),
          Self.recordedCut(cut) == expectedSequence...(sequence - 1)
        else {
          v.firstBreak = (sequence, "sequence gap: expected \(expectedSequence), found \(sequence)")
          return v
        }
        v.recordedCuts.append((sequence, cut.detail))
        expectedSequence = sequence
      }
      let record: AuditRecord
      switch Self.record(q) {
      case .success(let r): record = r
      case .failure(let problem):
        v.firstBreak = (sequence, problem.reason)
        return v
      }
      switch Self.checkedChainValue(record, stored: q.bytes(16), previous: previous, key: key, format: format, digester: digester) {
      case .success(let value): previous = value
      case .failure(let problem):
        v.firstBreak = (sequence, problem.reason)
        return v
      }
      v.head = AuditChainHead(sequence: sequence, value: previous.withUnsafeBytes { Digest(bytes: $0) })
      if let problem = Self.identityProblem(record, identity) {
        v.firstBreak = (sequence, problem)
        return v
      }
      if record.kind == .fault && record.code == Int64(FaultCode.logMissing.rawValue) {
        v.missingLogs.append((sequence, record.detail))
      }
    }
    if let published {
      if let problem = try check(published, lastSequence: v.head.sequence, anchorSequence: v.anchorSequence) {
        v.firstBreak = (published.sequence, problem)
      }
    }
    return v
  }

  /// The record's chain value (HMAC-SHA-256 under `key`; plain SHA-256 for an unkeyed file)
  /// when it is the one stored, or why not.
  private static func checkedChainValue(
    _ record: AuditRecord, stored: [UInt8], previous: [UInt8], key: AuditChainKey?, format: ChainFormat, digester: SodiumDigester
  ) -> Result<[UInt8], RecordProblem> {
    let value: [UInt8]
    if format == .unkeyed {
      value = record.unkeyedChainedHash(previous: previous, digester: digester)
    } else if let key {
      value = record.chainValue(previous: previous, key: key)
    } else {
      return .failure(RecordProblem(reason: "the log is keyed and no chain key was given"))
    }
    guard value == stored else {
      var reason = "chain value mismatch: the record or one before it was altered, or the log was re-chained"
      if case .keyed(let id) = format, let key, id != key.identifier {
        reason += " (the log names key \(id), the key given is \(key.identifier))"
      }
      return .failure(RecordProblem(reason: reason))
    }
    return .success(value)
  }

  /// Why a verified chain does not contain the published head, or nil if it does.
  private func check(_ published: PublishedChainHead, lastSequence: Int64, anchorSequence: Int64) throws(SQLiteError) -> String? {
    let shown = published.prefix.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    if published.sequence > lastSequence {
      return
        "the log ends at record \(lastSequence) but a chain head through record \(published.sequence) was published: records \(lastSequence + 1)...\(published.sequence) were cut"
    }
    let stored: [UInt8]
    if published.sequence == anchorSequence {
      stored = try anchor().1
    } else if published.sequence < anchorSequence {
      return "record \(published.sequence) has been pruned (the log starts after record \(anchorSequence)): this head cannot be checked, give a newer one"
    } else {
      let q = try database.prepare("SELECT hash FROM events WHERE seq = ?")
      q.bind(1, published.sequence)
      guard try q.step() else { return "record \(published.sequence) is missing" }
      stored = q.bytes(0)
    }
    if stored.count < published.prefix.count || Array(stored.prefix(published.prefix.count)) != published.prefix {
      return "record \(published.sequence)'s chain value does not start with the published \(shown): the log was re-chained"
    }
    return nil
  }
}
