import ScanCore

/// What the loop's console needs from the audit log (implemented by the SQLite log).
public protocol AuditLogAccess: AnyObject {
  /// One STATUS line about the log (path, records, faults, the chain head `SEQ:HEX`).
  func writeStatus(into w: inout ByteWriter)
  /// Writes the newest `count` records, oldest first, one `| ` body line each; returns lines written.
  func writeRecent(_ count: Int, into w: inout ByteWriter) -> Int
  /// Every loggable event up to this ring sequence is durable; the console shows no later event.
  var committedSequence: UInt64 { get }
  /// Whether the log cannot write now.
  var isFaulted: Bool { get }
  /// The committed chain's end, to publish (STATUS, the journal): `chainHead.text` is the
  /// `SEQ:HEX` that `scangate log verify --head` takes.
  var chainHead: AuditChainHead { get }
}
