/// The frame every message between the readers of a site shares (site passages, counted uses):
/// one line of ASCII, nothing else (no trailing newline), at most `bytesMax`:
///
///     <magic: "<name> <version> "> <key id: 16 hex> <reader id> <field> ... <mac: 64 hex>
///
/// The MAC covers every byte before the space that precedes it. The message's own type reads its
/// fields; anything that does not fit the frame is refused whole.
public struct SiteMessage: Sendable {
  /// The site key's id (16 lowercase hex digits): the key the sender holds.
  public var keyID: String
  /// The sending reader: 1–64 of [A-Za-z0-9._-].
  public var reader: String
  /// The fields between the reader and the MAC, as sent.
  public var fields: [ArraySlice<UInt8>]
  public var mac: Digest
  /// How many leading bytes of the message the MAC covers.
  public var signedCount: Int

  public static let bytesMax = 256
  /// A message dated further ahead of this reader's clock is refused (clock skew allowance).
  public static let futureSecondsMax: Int64 = 300

  /// Why a message was refused (each with its own text: a site admin reads it in the journal).
  public enum Refusal: Error, Equatable, Sendable {
    case oversized, malformed, ownReader, future, badMAC, retained, otherKey, oldVersion
    public var reason: String {
      switch self {
      case .oversized: "over \(SiteMessage.bytesMax) bytes"
      case .malformed: "not a site message of this kind"
      case .ownReader: "this reader's own"
      case .future: "dated more than \(SiteMessage.futureSecondsMax) s ahead"
      case .badMAC: "the MAC does not verify (another site key?)"
      case .retained: "retained"
      case .otherKey: "sent under another site key (its key id differs: a reader with an old or a wrong site key file)"
      case .oldVersion: "the form of an earlier ScanGate: upgrade every reader of the site"
      }
    }
  }

  /// Splits `bytes` into the frame: `magic`, then the key id, the reader, `fieldCount` fields
  /// and the MAC. A message from `ownReader` is refused (a reader ignores its own).
  public static func parse(
    _ bytes: [UInt8], magic: String, previousMagic: String? = nil, fieldCount: Int, ownReader: String
  ) -> Result<SiteMessage, Refusal> {
    guard bytes.count <= bytesMax else { return .failure(.oversized) }
    if let previousMagic, bytes.starts(with: previousMagic.utf8) { return .failure(.oldVersion) }
    let m = Array(magic.utf8)
    guard bytes.count > m.count, Array(bytes.prefix(m.count)) == m else { return .failure(.malformed) }
    let all = bytes[m.count...].split(separator: 0x20, omittingEmptySubsequences: false)
    guard all.count == fieldCount + 3 else { return .failure(.malformed) }
    let k = all[0]
    guard k.count == 16, k.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return .failure(.malformed) }
    let r = all[1]
    guard (1...64).contains(r.count), r.allSatisfy(isIDByte) else { return .failure(.malformed) }
    guard let mac = digest(all[all.count - 1]) else { return .failure(.malformed) }
    let reader = String(decoding: r, as: UTF8.self)
    guard reader != ownReader else { return .failure(.ownReader) }
    let message = SiteMessage(
      keyID: String(decoding: k, as: UTF8.self), reader: reader, fields: Array(all[2..<(all.count - 1)]), mac: mac,
      signedCount: bytes.count - 65)
    return .success(message)
  }

  /// A decimal of 1 to `digitsMax` digits without a leading zero, or nil.
  public static func decimal(_ field: ArraySlice<UInt8>, digitsMax: Int = 12) -> Int64? {
    guard (1...digitsMax).contains(field.count), field.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), field.first != 0x30 || field.count == 1 else {
      return nil
    }
    var value: Int64 = 0
    for b in field { value = value * 10 + Int64(b - 0x30) }
    return value
  }

  /// 64 lowercase hex digits, or nil.
  public static func digest(_ field: ArraySlice<UInt8>) -> Digest? {
    guard field.count == 64 else { return nil }
    var bytes = InlineArray<32, UInt8>(repeating: 0)
    var i = 0
    for b in field {
      let v: UInt8
      switch b {
      case 0x30...0x39: v = b - 0x30
      case 0x61...0x66: v = b - 0x61 + 10
      default: return nil
      }
      bytes[i / 2] = i % 2 == 0 ? v << 4 : bytes[i / 2] | v
      i += 1
    }
    return withUnsafeBytes(of: bytes) { Digest(bytes: $0) }
  }

  /// All 64 lowercase hex digits of `d`.
  public static func hex(_ d: Digest) -> String {
    String(unsafeUninitializedCapacity: 64) { out in
      for i in 0..<32 {
        out[2 * i] = Hex.digit(d.byte(i) >> 4)
        out[2 * i + 1] = Hex.digit(d.byte(i))
      }
      return 64
    }
  }

  private static func isIDByte(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x2D
  }
}
