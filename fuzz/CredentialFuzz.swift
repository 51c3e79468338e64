// libFuzzer harness for signed passes: the text forms, base45, the COSE_Sign1 structure and
// the CWT claims (libcbor's streaming decoder underneath), then the whole judgement. The
// crypto here accepts every signature and opens every seal, so inputs reach the claims parser
// and the time, revocation, zone, TOTP, replay and single-use rules; none may crash or grant
// what it must not. A second path builds a well-formed pass from the input's numbers (exp, nbf,
// single use, rotating, the reader's clock and floor), so extreme times and counts reach the
// judgement's arithmetic directly (a pass with exp = 2^63-1 once trapped there).
import ScanCore
import ScanLinux_CredentialCrypto

final class PermissiveCrypto: CredentialCrypto {
  func verifyEd25519(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, publicKey: UnsafeRawBufferPointer) -> Bool {
    signature.count == 64 && publicKey.count == 32
  }
  func openSealed(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
    let n = sealed.count - 48
    guard n > 0, n <= out.count else { return nil }
    for i in 0..<n { out[i] = sealed[48 + i] }
    return n
  }
  func hmacSHA1(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
    let k: UInt8 = key.first ?? 0
    let m: UInt8 = message.last ?? 0
    for i in 0..<20 {
      let v: UInt8 = UInt8(truncatingIfNeeded: i &* 31)
      out[i] = v &+ k &+ m
    }
  }
  func wipe(_ buffer: UnsafeMutableRawBufferPointer) { buffer.initializeMemory(as: UInt8.self, repeating: 0) }
}

final class MemoryStore: UseStore {
  var used: [(id: CredentialID, uses: Int, first: Int64)] = []
  func usage(_ id: CredentialID) -> (uses: Int, firstUse: Int64)? {
    used.first { $0.id == id }.map { ($0.uses, $0.first) }
  }
  func recordUse(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    if let i = used.firstIndex(where: { $0.id == id }) {
      used[i].uses += 1
      return true
    }
    guard used.count < 16 else { return false }
    used.append((id, 1, now))
    return true
  }
}

final class MemoryReplay: ReplayStore {
  func persist(slot: Int, id: CredentialID, step: Int64) -> Bool { true }
}

nonisolated(unsafe) let verifier: CredentialVerifier = {
  var settings = CredentialSettings()
  settings.trustFile = "(fuzz)"
  settings.zones = ["main"]
  settings.replayCacheEntries = 16
  let trust = TrustStore(keys: [IssuerKey(kid: Array("hq-2026".utf8), publicKey: Array(repeating: 7, count: 32), notBefore: nil, notAfter: nil)!])
  let v = CredentialVerifier(settings: settings, sign1: Sign1Verifier(trust: trust, codec: LibCBOR(), crypto: PermissiveCrypto()))
  v.useStore = MemoryStore()
  v.replayStore = MemoryReplay()
  return v
}()

/// Reads fixed-size numbers from the input, zero past its end.
struct Numbers {
  let input: UnsafeRawBufferPointer
  var at = 0
  mutating func int64() -> Int64 {
    var v: UInt64 = 0
    for _ in 0..<8 {
      v = v << 8 | UInt64(at < input.count ? input[at] : 0)
      at += 1
    }
    return Int64(bitPattern: v)
  }
  mutating func byte() -> UInt8 {
    defer { at += 1 }
    return at < input.count ? input[at] : 0
  }
}

/// A COSE_Sign1 pass (the permissive crypto takes any signature) with claims from `n`.
func structuredPass(_ n: inout Numbers, into buffer: UnsafeMutableRawBufferPointer) -> [UInt8] {
  let exp = n.int64(), nbf = n.int64(), flags = n.byte()
  let codec = verifier.sign1.codec
  var payload = CBORWriter(buffer, codec: codec)
  payload.head(.map, UInt64(4 + (flags & 4 != 0 ? 1 : 0)))
  payload.integer(CredentialLabel.exp)
  payload.integer(exp)
  payload.integer(CredentialLabel.cti)
  [n.byte(), 1].withUnsafeBytes { payload.bytes($0) }
  payload.integer(CredentialLabel.sub)
  Array("fuzz".utf8).withUnsafeBytes { payload.text($0) }
  if flags & 4 != 0 {
    payload.integer(CredentialLabel.nbf)
    payload.integer(nbf)
  }
  do {
    // The reader's zone always (else every pass stops at the zone rule), single use and rotation by the flags.
    payload.integer(CredentialLabel.scangate)
    payload.head(.map, 1 + UInt64(flags & 1 != 0 ? 1 : 0) + UInt64(flags & 2 != 0 ? 2 : 0))
    payload.integer(Int64(CredentialLabel.zones))
    payload.head(.array, 1)
    Array("main".utf8).withUnsafeBytes { payload.text($0) }
    if flags & 1 != 0 {
      payload.integer(Int64(CredentialLabel.singleUse))
      payload.boolean(true)
    }
    if flags & 2 != 0 {
      payload.integer(Int64(CredentialLabel.seed))
      [UInt8](repeating: 9, count: 68).withUnsafeBytes { payload.bytes($0) }
      payload.integer(Int64(CredentialLabel.digits))
      payload.integer(6)
    }
  }
  let claims = Array(payload.written)
  var w = CBORWriter(buffer, codec: codec)
  w.head(.array, 4)
  var protected = [UInt8](repeating: 0, count: 32)
  let p = protected.withUnsafeMutableBytes { pb in
    var h = CBORWriter(pb, codec: codec)
    h.head(.map, 2)
    h.integer(Int64(CredentialLabel.headerAlg))
    h.integer(CredentialLabel.algEdDSA)
    h.integer(Int64(CredentialLabel.headerKid))
    Array("hq-2026".utf8).withUnsafeBytes { h.bytes($0) }
    return h.written.count
  }
  protected.removeLast(protected.count - p)
  protected.withUnsafeBytes { w.bytes($0) }
  w.head(.map, 0)
  claims.withUnsafeBytes { w.bytes($0) }
  [UInt8](repeating: 1, count: 64).withUnsafeBytes { w.bytes($0) }
  let body = Base45.encode(w.written)
  let prefix = flags & 2 != 0 ? "SG1R6" + String(Int(n.byte()) % 10) + "12345:" : "SG1:"
  return Array(prefix.utf8) + body
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let input = UnsafeRawBufferPointer(start: data, count: size)
  // As scanned text.
  for mode in [DecideMode.inspect, .admit] {
    if let d = verifier.decide(input, nowUnixSeconds: 1_780_000_000, mode: mode), d.verdict.isGranted {
      precondition(verifier.last.idCount > 0 && verifier.last.expires >= 1_780_000_000 - 30, "granted without id or expired")
    }
  }
  // As a well-formed pass with the input's numbers, judged at the input's clock and floor.
  var n = Numbers(input: input)
  let now = n.int64(), floor = n.int64()
  verifier.clock = ClockTrust(synchronized: floor & 1 == 0, floor: floor)
  let pass = withUnsafeTemporaryAllocation(byteCount: 1_024, alignment: 8) { structuredPass(&n, into: $0) }
  for mode in [DecideMode.inspect, .admit] {
    if let d = pass.withUnsafeBytes({ verifier.decide($0, nowUnixSeconds: now, mode: mode) }), d.verdict.isGranted {
      precondition(verifier.last.expires >= max(now, floor).saturatingAdd(-30), "granted an expired pass")
    }
  }
  verifier.clock = .trusted
  // As a raw COSE message (the structure and the claims, without base45 in the way).
  if let parts = try? COSESign1.parse(input, codec: verifier.sign1.codec) {
    precondition(parts.signature.count == 64 && parts.payload.upperBound <= size)
    var claims = CredentialClaims()
    _ = try? CredentialVerifier.parseClaims(input, parts: parts, codec: verifier.sign1.codec, into: &claims)
    precondition(claims.zoneCount <= CredentialClaims.zonesMax && claims.labelCount <= LabelLimits.bytesMax)
  }
  return 0
}
