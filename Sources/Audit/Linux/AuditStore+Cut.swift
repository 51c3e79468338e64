import ScanCore

/// Records lost after they were committed, and pruning by age on a clock that jumped
/// (docs/audit-log.md, "Under faults").
///
/// A damaged, torn or deleted WAL takes committed records with it, and SQLite opens what is
/// left without a word. The writer keeps the committed head outside the database
/// (`AuditHeadMark`); a log that opens behind it has lost records N+1...M. Those sequence
/// numbers were already shown, published and acknowledged, so they are never used again: the
/// writer writes one cut record as record M+1, chained to record N, that names the gap, and the
/// log goes on from there. `verify` accepts a gap only where such a record bridges it exactly,
/// and says so; its chain value proves the writer (the key's holder) wrote it.
extension AuditStore {
  static let cutPrefix = "log-cut: records "

  /// The record that bridges the gap `missing` (kind records-lost, `code` the count; the
  /// detail names the gap first, then why).
  public static func cutRecord(missing: ClosedRange<Int64>, why: String, run: Int64, wallNanoseconds: Int64) -> AuditRecord {
    AuditRecord(
      sequence: 0, run: run, eventSequence: 0, wallNanoseconds: wallNanoseconds, kind: .recordsLost,
      code: missing.upperBound - missing.lowerBound + 1,
      detail: "\(cutPrefix)\(missing.lowerBound)...\(missing.upperBound) are not in this log: \(why)")
  }

  /// The gap a cut record names, or nil for any other record.
  public static func recordedCut(_ record: AuditRecord) -> ClosedRange<Int64>? {
    guard record.kind == .recordsLost, record.detail.hasPrefix(cutPrefix) else { return nil }
    let rest = record.detail.dropFirst(cutPrefix.count)
    guard let space = rest.firstIndex(of: " ") else { return nil }
    let bounds = rest[..<space].split(separator: ".", omittingEmptySubsequences: true)
    guard bounds.count == 2, let low = Int64(bounds[0]), let high = Int64(bounds[1]), low >= 1, low <= high,
      record.code == high - low + 1
    else { return nil }
    return low...high
  }

  /// Writes the cut record for `missing` as record `missing.upperBound + 1`, chained to the
  /// head (record `missing.lowerBound - 1`). On failure this store must be dropped (reopened).
  func appendCut(_ record: AuditRecord, missing: ClosedRange<Int64>, key: some RecordAuthenticator) throws(SQLiteError) {
    precondition(missing.lowerBound == lastSequence + 1, "a cut starts right after the head")
    skip(to: missing.upperBound)
    try append([record], key: key)
  }

  /// The time before which a record counts as older than `retainDays`: judged at the earlier of
  /// the clock and the floor (`TrustedTime`, a lower bound of the true time), so a clock that ran
  /// ahead of what the floor has accepted never makes records old, and one set back makes none
  /// old either. With no floor (0: no trusted time yet) nothing is pruned by age; counts and
  /// bytes still are.
  public static func ageCutoff(wallNanoseconds: Int64, floorSeconds: Int64, retainDays: Int) -> Int64 {
    guard floorSeconds > 0 else { return .min }
    let (floor, overflow) = floorSeconds.multipliedReportingOverflow(by: 1_000_000_000)
    let judged = min(wallNanoseconds, overflow ? .max : floor)
    let (cutoff, under) = judged.subtractingReportingOverflow(Int64(max(0, retainDays)) * 86_400 * 1_000_000_000)
    return under ? .min : cutoff
  }
}
