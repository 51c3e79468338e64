import ScanConsole
import ScanCore

/// What the loop's console needs from the audit log (implemented by the SQLite log).
public protocol AuditLogAccess: AnyObject {
  /// One STATUS line about the log (path, records, faults, the chain head `SEQ:HEX`).
  func writeStatus(into w: inout ByteWriter)
  /// Asks for the newest records that `query` selects for console session `ticket`, read off
  /// the loop's thread (the log's own thread reads the disk); false while another read is pending.
  func requestRecent(_ query: AuditQuery, for ticket: SessionTicket) -> Bool
  /// A finished read: `| ` body lines (oldest first, at most `AuditRecentRead.bytesMax`) and
  /// their count.
  func takeRecent() -> AuditRecentRead?
  /// Every loggable event up to this ring sequence is durable; the console shows no later event.
  var committedSequence: UInt64 { get }
  /// Whether the log cannot write now.
  var isFaulted: Bool { get }
  /// The committed chain's end, to publish (STATUS, the journal): `chainHead.text` is the
  /// `SEQ:HEX` that `scangate log verify --head` takes.
  var chainHead: AuditChainHead { get }
}

/// The newest records, read by the log's thread for a console LOG.
public struct AuditRecentRead: Sendable {
  /// A LOG reply always fits a client's output buffer (`console.client_output_bytes` ≥ 4096).
  public static let bytesMax = 3_584
  public var ticket: SessionTicket
  public var text: [UInt8]
  public var lines: Int
}
