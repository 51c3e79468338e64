import Glibc
import ScanCore
import ScanPlatform

/// The fleet link's durable state: which log it publishes and the highest audit sequence of
/// that log the broker acknowledged, in a small file written whole and renamed into place
/// (temporary file, fsync, rename), so a power cut leaves the old value or the new one, never
/// half. Format, one line: `scangate-fleet log <log id> acked <sequence>`. A file written
/// before log ids, `scangate-fleet acked <sequence>`, is still read (its log id is nil).
/// It sits with the audit log because it is a mark on that log: the fleet link writes it, and the
/// log's identity check reads it to say which records a replaced log had already published.
public enum FleetState {
  static let magic = "scangate-fleet acked "
  static let logMagic = "scangate-fleet log "

  /// What the file holds: the log (nil in a file written before log ids) and its acknowledged
  /// sequence.
  public typealias Entry = FleetAckMark

  /// The acknowledged sequence in `path`, whatever log it is of (see `loadEntry`).
  public static func load(_ path: String) throws(FileError) -> Int64 { try loadEntry(path).acked }

  /// The entry in `path`; (nil, 0) when the file does not exist (nothing sent yet). A file that
  /// is not exactly the format is an error naming it (the link then starts from the log's first
  /// record: duplicates, never a gap).
  public static func loadEntry(_ path: String) throws(FileError) -> Entry {
    guard fileExists(path) else { return Entry(logID: nil, acked: 0) }
    let bytes = try readWholeFile(path, maxBytes: 256)
    return try parseEntry(bytes, path: path)
  }

  /// The acknowledged sequence in the file's bytes.
  public static func parse(_ bytes: [UInt8], path: String = "fleet state") throws(FileError) -> Int64 {
    try parseEntry(bytes, path: path).acked
  }

  /// Parses the file's bytes (fuzzable: any bytes either parse or are refused whole).
  public static func parseEntry(_ bytes: [UInt8], path: String = "fleet state") throws(FileError) -> Entry {
    var text = bytes
    if text.last == 0x0A { text.removeLast() }
    var logID: String? = nil
    let l = Array(logMagic.utf8)
    if text.count > l.count + AuditLogID.hexDigits && Array(text.prefix(l.count)) == l {
      let id = String(decoding: text[l.count..<l.count + AuditLogID.hexDigits], as: UTF8.self)
      guard AuditLogID.isValid(id) else { throw FileError(path: path, reason: "the log id is not 32 lowercase hex digits") }
      logID = id
      text = [UInt8]("scangate-fleet".utf8) + text[(l.count + AuditLogID.hexDigits)...]
    }
    let m = Array(magic.utf8)
    guard text.count > m.count, text.count <= m.count + 19, Array(text.prefix(m.count)) == m else {
      throw FileError(path: path, reason: "not a fleet state file ('\(magic)<sequence>')")
    }
    var value: Int64 = 0
    for b in text.dropFirst(m.count) {
      guard b >= 0x30 && b <= 0x39 else { throw FileError(path: path, reason: "the sequence is not a decimal number") }
      let (times, o1) = value.multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(Int64(b - 0x30))
      if o1 || o2 { throw FileError(path: path, reason: "the sequence is too large") }
      value = sum
    }
    // A sequence no log reaches (a damaged or hostile file) is refused like any other damage.
    guard value <= 1 << 62 else { throw FileError(path: path, reason: "the sequence is out of range") }
    return Entry(logID: logID, acked: value)
  }

  /// Writes `acked` of log `logID` (the form before log ids when `logID` is nil: a log made
  /// before them, published by a link with no writer in its process). Whole, but its name may
  /// lag after a power cut (no directory fsync: one sync per write, not two): a stale point only
  /// means records published again, and the log pruned below the newer point only records the
  /// broker had acknowledged, so the link resuming from the oldest record left leaves no gap.
  public static func store(_ path: String, acked: Int64, logID: String? = nil) throws(FileError) {
    let text = logID.map { logMagic + $0 + " acked " + String(acked) + "\n" } ?? magic + String(acked) + "\n"
    try writeFileMayLag(path, Array(text.utf8), mode: 0o600)
  }

  /// The wall time (unix seconds) of the last contact with a broker, from `path`; nil when there
  /// is none or it is not one decimal number (`scangate-fleet contact <seconds>`).
  public static func loadContact(_ path: String) -> Int64? {
    guard fileExists(path), let bytes = try? readWholeFile(path, maxBytes: 64) else { return nil }
    var text = String(decoding: bytes, as: UTF8.self)
    if text.hasSuffix("\n") { text.removeLast() }
    guard text.hasPrefix(contactMagic) else { return nil }
    let digits = text.dropFirst(contactMagic.count)
    guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return Int64(digits)
  }

  static let contactMagic = "scangate-fleet contact "

  /// The last contact: a stale one after a power cut only starts the offline policy sooner.
  public static func storeContact(_ path: String, unixSeconds: Int64) throws(FileError) {
    try writeFileMayLag(path, Array((contactMagic + String(unixSeconds) + "\n").utf8), mode: 0o600)
  }
}
