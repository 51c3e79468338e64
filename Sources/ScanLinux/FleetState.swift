import Glibc
import ScanCore

/// The fleet link's durable state: the highest audit sequence the broker acknowledged, in a
/// small file written whole and renamed into place (temporary file, fsync, rename), so a power
/// cut leaves the old value or the new one, never half. Format, one line:
/// `scangate-fleet acked <sequence>`.
public enum FleetState {
  static let magic = "scangate-fleet acked "

  /// The acknowledged sequence in `path`; 0 when the file does not exist (nothing sent yet).
  /// A file that is not exactly the format is an error naming it (the link then starts from
  /// 0: duplicates, never a gap).
  public static func load(_ path: String) throws(FileError) -> Int64 {
    guard fileExists(path) else { return 0 }
    let bytes = try readWholeFile(path, maxBytes: 256)
    return try parse(bytes, path: path)
  }

  /// Parses the file's bytes (fuzzable: any bytes either parse or are refused whole).
  public static func parse(_ bytes: [UInt8], path: String = "fleet state") throws(FileError) -> Int64 {
    var text = bytes
    if text.last == 0x0A { text.removeLast() }
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
    return value
  }

  public static func store(_ path: String, acked: Int64) throws(FileError) {
    try writeFileAtomically(path, Array((magic + String(acked) + "\n").utf8))
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

  public static func storeContact(_ path: String, unixSeconds: Int64) throws(FileError) {
    try writeFileAtomically(path, Array((contactMagic + String(unixSeconds) + "\n").utf8))
  }
}
