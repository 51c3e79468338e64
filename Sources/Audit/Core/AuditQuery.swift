import ScanBase

/// What a console `LOG` asks of the audit log (docs/console.md, "LOG"): the newest `count`
/// records that pass every filter given, oldest first. Fixed storage: a LOG line is parsed on
/// the loop's thread and handed to the log's thread without allocating.
public struct AuditQuery: Sendable, Equatable {
  /// Records at most (1...100).
  public var count = 10
  /// Only records before this sequence (the page's "older").
  public var before: Int64? = nil
  /// Only records at or after this time, and before `until` (Unix seconds).
  public var since: Int64? = nil
  public var until: Int64? = nil
  public var verdict: Verdict? = nil
  public var kind: EventKind? = nil
  /// Only records whose label is exactly these bytes (`labelCount` 0: any label).
  public var label = LabelLimits.Storage(repeating: 0)
  public var labelCount = 0
  /// Whether a record's payload column (kept only with `log.raw_payloads`) may be shown: never
  /// to a session named by AS (the web page).
  public var payloads = true

  public init(count: Int = 10) { self.count = count }

  public static let countMax = 100

  /// The label filter as text (nil: none).
  public var labelText: String? {
    guard labelCount > 0 else { return nil }
    var bytes: [UInt8] = []
    for i in 0..<labelCount { bytes.append(label[i]) }
    return String(decoding: bytes, as: UTF8.self)
  }

  public static func == (a: AuditQuery, b: AuditQuery) -> Bool {
    a.count == b.count && a.before == b.before && a.since == b.since && a.until == b.until && a.verdict == b.verdict
      && a.kind == b.kind && a.labelText == b.labelText && a.payloads == b.payloads
  }
}
