import CCredential
import CLinux
import Glibc
import ScanConfigLinux
import ScanCore
import ScanPlatform

/// The files signed passes need (docs/credentials.md): the trust file, the site key, the
/// revocation list, the single-use store and the clock floor. Each is read whole and checked
/// before it replaces what is live; a bad file keeps the last good state.
public enum CredentialFiles {
  public static let trustBytesMax = 64 << 10
  public static let revocationBytesMax = 2 << 20

  /// Parses a trust file: one `[issuer.<kid>]` table per key, with `ed25519` (64 hex digits, the
  /// public key) and optional `not_before` / `not_after` (RFC 3339).
  public static func parseTrust(_ text: [UInt8]) throws(ParseError) -> TrustStore {
    let entries: [ConfigEntry]
    do { entries = try ConfigLoader.entries(fromTOML: text) } catch { throw ParseError(message: "\(error)") }
    var order: [String] = []
    var fields: [String: [String: (String, Int)]] = [:]
    for e in entries {
      let parts = e.key.split(separator: ".", omittingEmptySubsequences: false)
      guard parts.count == 3, parts[0] == "issuer" else {
        throw ParseError(message: "line \(e.line): unknown key '\(e.key)' (expected issuer.<kid>.ed25519|not_before|not_after)")
      }
      let kid = String(parts[1])
      guard (1...CredentialClaims.kidBytesMax).contains(kid.utf8.count),
        kid.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F })
      else { throw ParseError(message: "line \(e.line): kid '\(kid)' must be 1–16 of A–Z a–z 0–9 - _") }
      guard case .string(let value) = e.value else { throw ParseError(message: "line \(e.line): \(e.key) must be a string") }
      if fields[kid] == nil { order.append(kid) }
      fields[kid, default: [:]][String(parts[2])] = (value, e.line)
    }
    var keys: [IssuerKey] = []
    for kid in order {
      let f = fields[kid]!
      for name in f.keys where !["ed25519", "not_before", "not_after"].contains(name) {
        throw ParseError(message: "line \(f[name]!.1): unknown key 'issuer.\(kid).\(name)'")
      }
      guard let (hex, line) = f["ed25519"] else { throw ParseError(message: "issuer \(kid): no ed25519 key") }
      guard let pk = decodeHex(hex), pk.count == 32 else { throw ParseError(message: "line \(line): ed25519 must be 64 hex digits") }
      let nb = try f["not_before"].map { v throws(ParseError) in try RFC3339.parse(Substring(v.0)) }
      let na = try f["not_after"].map { v throws(ParseError) in try RFC3339.parse(Substring(v.0)) }
      guard let key = IssuerKey(kid: Array(kid.utf8), publicKey: pk, notBefore: nb, notAfter: na) else {
        throw ParseError(message: "issuer \(kid): bad key")
      }
      keys.append(key)
    }
    guard !keys.isEmpty else { throw ParseError(message: "no [issuer.<kid>] keys") }
    guard keys.count <= TrustStore.keysMax else { throw ParseError(message: "over \(TrustStore.keysMax) issuer keys") }
    return TrustStore(keys: keys)
  }

  public static func readTrust(_ path: String) throws(FileError) -> TrustStore {
    let text = try readWholeFile(path, maxBytes: trustBytesMax)
    do { return try parseTrust(text) } catch { throw FileError(path: path, reason: error.message) }
  }

  /// A 32-byte key as 64 hex digits in a secret file (the site's X25519 key, an issuer's Ed25519 seed).
  public static func readSecretKey(_ path: String) throws(FileError) -> [UInt8] {
    var text = try SecretFile.read(path)
    defer { sg_wipe(&text, text.count) }
    guard let key = decodeHex(String(decoding: text, as: UTF8.self)), key.count == 32 else {
      throw FileError(path: path, reason: "must hold a 32-byte key as 64 hex digits")
    }
    return key
  }

  /// Verifies and parses a revocation list: a COSE_Sign1 by a trusted issuer over
  /// `{1: version, 2: issued-at, 3: [cti, ...]}`. `current`: the live list's version; an older
  /// list is refused (a replayed old list must not un-revoke a pass).
  public static func parseRevocation(
    _ bytes: UnsafeRawBufferPointer, sign1: Sign1Verifier, now: Int64, current: UInt64
  ) throws(ParseError) -> RevocationList {
    // A list outgrows a pass's 1 KiB: verified with a bound of the file's own size (a reload,
    // off the frame path; the file's size is bounded where it is read).
    let listVerifier = Sign1Verifier(trust: sign1.trust, codec: sign1.codec, crypto: sign1.crypto, payloadBytesMax: max(bytes.count, 64))
    let parts: COSESign1
    do { parts = try listVerifier.verify(bytes, now: now) } catch { throw ParseError(message: "not a valid signed list (\(error.name))") }
    let list: RevocationList
    do throws(CBORProblem) {
      var c = CBORCursor(UnsafeRawBufferPointer(rebasing: bytes[parts.payload]), codec: sign1.codec)
      guard try c.map(max: 3) == 3 else { throw .unexpected }
      guard try c.unsigned() == 1 else { throw .unexpected }
      let version = try c.unsigned()
      guard try c.unsigned() == 2 else { throw .unexpected }
      let issued = try c.integer()
      guard try c.unsigned() == 3 else { throw .unexpected }
      let n = try c.array(max: RevocationList.idsMax)
      var ids: [CredentialID] = []
      ids.reserveCapacity(n)
      for _ in 0..<n {
        let r = try c.bytes(max: CredentialClaims.idBytesMax)
        guard let id = CredentialID(c.slice(r)) else { throw .unexpected }
        ids.append(id)
      }
      guard c.atEnd else { throw .trailing }
      list = RevocationList(version: version, issuedAt: issued, ids: ids)
    } catch {
      throw ParseError(message: "revocation list: \(CredentialProblem.cbor(error).name)")
    }
    guard list.version >= current else {
      throw ParseError(message: "version \(list.version) is older than the live list's \(current)")
    }
    return list
  }

  static func decodeHex(_ s: String) -> [UInt8]? {
    let t = Array(s.utf8.filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D })
    guard t.count % 2 == 0 else { return nil }
    var out = [UInt8](repeating: 0, count: t.count / 2)
    let ok = t.withUnsafeBytes { src in
      out.withUnsafeMutableBytes { dst in (try? Hex.decode(src, into: dst)) == dst.count }
    }
    return ok ? out : nil
  }
}
