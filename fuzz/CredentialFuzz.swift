// libFuzzer harness for signed passes: the text forms, base45, the COSE_Sign1 structure and
// the CWT claims (libcbor's streaming decoder underneath), then the whole judgement. The
// crypto here accepts every signature and opens every seal, so inputs reach the claims parser
// and the time, revocation, zone, TOTP, replay and single-use rules; none may crash or grant
// what it must not.
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

final class MemoryStore: SingleUseStore {
  var used: [CredentialID] = []
  func isUsed(_ id: CredentialID) -> Bool { used.contains(id) }
  func markUsed(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    guard used.count < 16 else { return false }
    used.append(id)
    return true
  }
}

nonisolated(unsafe) let verifier: CredentialVerifier = {
  var settings = CredentialSettings()
  settings.trustFile = "(fuzz)"
  settings.zones = ["main"]
  settings.replayCacheEntries = 16
  let trust = TrustStore(keys: [IssuerKey(kid: Array("hq-2026".utf8), publicKey: Array(repeating: 7, count: 32), notBefore: nil, notAfter: nil)!])
  let v = CredentialVerifier(settings: settings, sign1: Sign1Verifier(trust: trust, codec: LibCBOR(), crypto: PermissiveCrypto()))
  v.singleUse = MemoryStore()
  return v
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let input = UnsafeRawBufferPointer(start: data, count: size)
  // As scanned text.
  for mode in [DecideMode.inspect, .admit] {
    if let d = verifier.decide(input, nowUnixSeconds: 1_780_000_000, mode: mode), d.verdict.isGranted {
      precondition(verifier.last.idCount > 0 && verifier.last.expires >= 1_780_000_000 - 30, "granted without id or expired")
    }
  }
  // As a raw COSE message (the structure and the claims, without base45 in the way).
  if let parts = try? COSESign1.parse(input, codec: verifier.sign1.codec) {
    precondition(parts.signature.count == 64 && parts.payload.upperBound <= size)
    var claims = CredentialClaims()
    _ = try? CredentialVerifier.parseClaims(input, parts: parts, codec: verifier.sign1.codec, into: &claims)
    precondition(claims.zoneCount <= CredentialClaims.zonesMax && claims.labelCount <= LabelLimits.bytesMax)
  }
  return 0
}
