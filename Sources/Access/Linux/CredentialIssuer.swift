import CCredential
import ScanCore

/// What a pass says (the issuing tools' input).
public struct PassClaims: Sendable {
  public var subject: String
  public var label = ""
  public var zones: [String] = []
  public var notBefore: Int64?
  public var expires: Int64
  public var issuedAt: Int64?
  /// The credential id (`cti`), 1–16 bytes.
  public var id: [UInt8]
  public var singleUse = false
  /// A guest pass: how many times it opens (0: not counted), and how long it stays valid from
  /// its first use (0: no window).
  public var uses = 0
  public var firstUseWindow: Int64 = 0
  /// Granted during a lockdown (the private claim `lockdown`: true).
  public var lockdown = false
  /// A rotating pass: TOTP digits (6–8); the seed is made here and sealed to `sitePublicKey`.
  public var rotatingDigits = 0
  public var sitePublicKey: [UInt8] = []
  /// A PIN after the pass (4–8 digits): its verifier (a random salt and the PIN's MAC under it)
  /// is sealed to `sitePublicKey`; the PIN itself is neither kept nor written.
  public var pin: [UInt8]? = nil
  public var card: (facility: UInt32, number: UInt64)? = nil

  public init(subject: String, expires: Int64, id: [UInt8]) {
    self.subject = subject
    self.expires = expires
    self.id = id
  }
}

/// A pass as issued: its text (the static form, or the rotating form's body), and for a
/// rotating pass the TOTP seed — a secret of the holder's wallet, never stored by ScanGate.
public struct IssuedPass: Sendable {
  public var message: [UInt8]
  /// `SG1:` + base45, or for a rotating pass the base45 body that follows `SG1R<d><totp>:`.
  public var body: String
  public var seed: [UInt8]
  public var digits: Int
  public var staticText: String { "SG1:" + body }
  /// The text a rotating pass shows during the step with TOTP `value`.
  public func presented(totp value: UInt32) -> String {
    var digitsText = String(value)
    while digitsText.count < digits { digitsText = "0" + digitsText }
    return "SG1R\(digits)\(digitsText):" + body
  }
  /// The Google Wallet `rotatingBarcode` pattern: the wallet substitutes the TOTP value.
  public var walletPattern: String { "SG1R\(digits){totp_value_0}:" + body }
}

public struct IssueError: Error, CustomStringConvertible, Sendable {
  public var description: String
  public init(_ d: String) { description = d }
}

/// Builds and signs credentials, revocation lists and other COSE_Sign1 documents with an
/// issuer's Ed25519 key (the tools; a reader never signs).
public enum CredentialIssuer {
  static let codec = LibCBOR()

  /// COSE_Sign1 (tag 18) over `payload`, protected header {1: EdDSA, 4: kid}.
  public static func sign(payload: [UInt8], kid: [UInt8], issuerSeed: [UInt8]) throws(IssueError) -> [UInt8] {
    guard issuerSeed.count == 32 else { throw IssueError("issuer key must be 32 bytes") }
    guard (1...CredentialClaims.kidBytesMax).contains(kid.count) else { throw IssueError("kid must be 1–16 bytes") }
    var pk = [UInt8](repeating: 0, count: 32)
    var sk = [UInt8](repeating: 0, count: 64)
    defer { sg_wipe(&sk, 64) }
    guard sg_ed25519_from_seed(issuerSeed, &pk, &sk) == 0 else { throw IssueError("bad issuer key") }
    let protected = encode(256) { w in
      w.head(.map, 2)
      w.head(.unsigned, CredentialLabel.headerAlg)
      w.integer(CredentialLabel.algEdDSA)
      w.head(.unsigned, CredentialLabel.headerKid)
      kid.withUnsafeBytes { w.bytes($0) }
    }
    let toBeSigned = encode(payload.count + 512) { w in
      protected.withUnsafeBytes { p in payload.withUnsafeBytes { COSESign1.signatureStructure(protected: p, payload: $0, into: &w) } }
    }
    var signature = [UInt8](repeating: 0, count: 64)
    guard sg_ed25519_sign(&signature, toBeSigned, toBeSigned.count, sk) == 0 else { throw IssueError("signing failed") }
    return encode(payload.count + 512) { w in
      w.head(.tag, CredentialLabel.coseSign1Tag)
      w.head(.array, 4)
      protected.withUnsafeBytes { w.bytes($0) }
      w.head(.map, 0)
      payload.withUnsafeBytes { w.bytes($0) }
      signature.withUnsafeBytes { w.bytes($0) }
    }
  }

  /// Issues a pass.
  public static func issue(_ c: PassClaims, kid: [UInt8], issuerSeed: [UInt8]) throws(IssueError) -> IssuedPass {
    try check(c)
    let (seed, sealed) = try sealSeed(c)
    let sealedPin = try sealPin(c)
    let privatePairs = privatePairCount(c, seed: !sealed.isEmpty, pin: !sealedPin.isEmpty)
    let claims = encode(1024) { w in
      var pairs: UInt64 = 3  // sub, exp, cti
      if c.notBefore != nil { pairs += 1 }
      if c.issuedAt != nil { pairs += 1 }
      if privatePairs > 0 { pairs += 1 }
      w.head(.map, pairs)
      w.integer(CredentialLabel.sub)
      text(c.subject, &w)
      w.integer(CredentialLabel.exp)
      w.integer(c.expires)
      if let nbf = c.notBefore {
        w.integer(CredentialLabel.nbf)
        w.integer(nbf)
      }
      if let iat = c.issuedAt {
        w.integer(CredentialLabel.iat)
        w.integer(iat)
      }
      w.integer(CredentialLabel.cti)
      c.id.withUnsafeBytes { w.bytes($0) }
      guard privatePairs > 0 else { return }
      writePrivate(c, pairs: privatePairs, sealedSeed: sealed, sealedPin: sealedPin, into: &w)
    }
    let message = try sign(payload: claims, kid: kid, issuerSeed: issuerSeed)
    guard message.count <= CredentialText.messageBytesMax else { throw IssueError("the pass is over \(CredentialText.messageBytesMax) bytes") }
    let body = String(decoding: Base45.encode(message), as: UTF8.self)
    return IssuedPass(message: message, body: body, seed: seed, digits: c.rotatingDigits)
  }

  /// Refuses claims a reader would refuse (sizes, zones, uses, the first-use window).
  static func check(_ c: PassClaims) throws(IssueError) {
    guard (1...CredentialClaims.idBytesMax).contains(c.id.count) else { throw IssueError("credential id must be 1–16 bytes") }
    guard c.subject.utf8.count <= CredentialClaims.subjectBytesMax else { throw IssueError("subject over 64 bytes") }
    guard c.label.utf8.count <= LabelLimits.bytesMax else { throw IssueError("label over \(LabelLimits.bytesMax) bytes") }
    guard c.zones.count <= CredentialClaims.zonesMax,
      c.zones.allSatisfy({ (1...CredentialClaims.zoneBytesMax).contains($0.utf8.count) }),
      c.zones.reduce(0, { $0 + $1.utf8.count }) <= CredentialClaims.zoneStorageBytes
    else { throw IssueError("at most 8 zones of 1–32 bytes (128 in all)") }
    guard c.uses == 0 || (1...CredentialClaims.usesMax).contains(c.uses) else { throw IssueError("uses must be 1–65535") }
    guard !(c.singleUse && c.uses > 0) else { throw IssueError("a single-use pass is counted already: give --single-use or --uses, not both") }
    guard c.firstUseWindow == 0 || (CredentialClaims.firstUseWindowMin...CredentialClaims.firstUseWindowMax).contains(c.firstUseWindow) else {
      throw IssueError("a first-use window must be a minute to 366 days")
    }
  }

  /// A rotating pass's TOTP seed, and the seed sealed to the site's public key (empty for a static pass).
  static func sealSeed(_ c: PassClaims) throws(IssueError) -> (seed: [UInt8], sealed: [UInt8]) {
    var seed: [UInt8] = []
    var sealed: [UInt8] = []
    if c.rotatingDigits != 0 {
      guard (6...8).contains(c.rotatingDigits) else { throw IssueError("TOTP digits must be 6–8") }
      guard c.sitePublicKey.count == 32 else { throw IssueError("a rotating pass needs the site's public key (32 bytes)") }
      seed = [UInt8](repeating: 0, count: 20)  // RFC 4226's recommended 160-bit HMAC-SHA1 key
      sg_random(&seed, seed.count)
      sealed = [UInt8](repeating: 0, count: seed.count + Int(SG_SEAL_OVERHEAD))
      guard sg_seal(&sealed, seed, seed.count, c.sitePublicKey) == 0 else { throw IssueError("sealing the seed failed") }
    }
    return (seed, sealed)
  }

  /// Claim 10: salt and HMAC(salt, PIN) sealed to the site's public key (empty without a PIN).
  static func sealPin(_ c: PassClaims) throws(IssueError) -> [UInt8] {
    var sealedPin: [UInt8] = []
    if let pin = c.pin {
      guard (PinEntry.digitsMin...PinEntry.digitsMax).contains(pin.count), pin.allSatisfy({ (0x30...0x39).contains($0) }) else {
        throw IssueError("a PIN is \(PinEntry.digitsMin)–\(PinEntry.digitsMax) digits")
      }
      guard c.sitePublicKey.count == 32 else { throw IssueError("a pass with a PIN needs the site's public key (32 bytes)") }
      var verifier = [UInt8](repeating: 0, count: 64)  // salt, then the MAC
      defer { sg_wipe(&verifier, verifier.count) }
      sg_random(&verifier, 32)
      let mac = verifier.withUnsafeBytes { v in
        pin.withUnsafeBytes { PinMAC.verifier(key: UnsafeRawBufferPointer(rebasing: v[0..<32]), digest: .zero, pin: $0) }
      }
      for i in 0..<32 { verifier[32 + i] = mac.byte(i) }
      sealedPin = [UInt8](repeating: 0, count: CredentialClaims.sealedPinBytes)
      guard sg_seal(&sealedPin, verifier, verifier.count, c.sitePublicKey) == 0 else { throw IssueError("sealing the PIN verifier failed") }
    }
    return sealedPin
  }

  /// How many entries the ScanGate-private map carries.
  static func privatePairCount(_ c: PassClaims, seed: Bool, pin: Bool) -> UInt64 {
    var privatePairs: UInt64 = 0
    if !c.label.isEmpty { privatePairs += 1 }
    if !c.zones.isEmpty { privatePairs += 1 }
    if c.singleUse { privatePairs += 1 }
    if c.uses > 0 { privatePairs += 1 }
    if c.firstUseWindow > 0 { privatePairs += 1 }
    if c.lockdown { privatePairs += 1 }
    if seed { privatePairs += 2 }
    if c.card != nil { privatePairs += 1 }
    if pin { privatePairs += 1 }
    return privatePairs
  }

  /// The ScanGate-private claims map (label, zones, flags, uses, the sealed seed and PIN, card).
  static func writePrivate(_ c: PassClaims, pairs privatePairs: UInt64, sealedSeed sealed: [UInt8], sealedPin: [UInt8], into w: inout CBORWriter) {
    w.integer(CredentialLabel.scangate)
    w.head(.map, privatePairs)
    if !c.label.isEmpty {
      w.head(.unsigned, CredentialLabel.label)
      text(c.label, &w)
    }
    if !c.zones.isEmpty {
      w.head(.unsigned, CredentialLabel.zones)
      w.head(.array, UInt64(c.zones.count))
      for z in c.zones { text(z, &w) }
    }
    if c.singleUse {
      w.head(.unsigned, CredentialLabel.singleUse)
      w.boolean(true)
    }
    if c.lockdown {
      w.head(.unsigned, CredentialLabel.lockdown)
      w.boolean(true)
    }
    if c.uses > 0 {
      w.head(.unsigned, CredentialLabel.uses)
      w.head(.unsigned, UInt64(c.uses))
    }
    if c.firstUseWindow > 0 {
      w.head(.unsigned, CredentialLabel.firstUseWindow)
      w.head(.unsigned, UInt64(c.firstUseWindow))
    }
    if !sealed.isEmpty {
      w.head(.unsigned, CredentialLabel.seed)
      sealed.withUnsafeBytes { w.bytes($0) }
      w.head(.unsigned, CredentialLabel.digits)
      w.head(.unsigned, UInt64(c.rotatingDigits))
    }
    if let card = c.card {
      w.head(.unsigned, CredentialLabel.card)
      w.head(.array, 2)
      w.head(.unsigned, UInt64(card.facility))
      w.head(.unsigned, card.number)
    }
    if !sealedPin.isEmpty {
      w.head(.unsigned, CredentialLabel.pin)
      sealedPin.withUnsafeBytes { w.bytes($0) }
    }
  }

  /// A signed revocation list: {1: version, 2: issued-at, 3: [cti...]}.
  public static func revocationList(
    version: UInt64, issuedAt: Int64, ids: [[UInt8]], kid: [UInt8], issuerSeed: [UInt8]
  ) throws(IssueError) -> [UInt8] {
    guard ids.count <= RevocationList.idsMax, ids.allSatisfy({ (1...16).contains($0.count) }) else {
      throw IssueError("at most \(RevocationList.idsMax) ids of 1–16 bytes")
    }
    let payload = encode(32 + ids.count * 18) { w in
      w.head(.map, 3)
      w.head(.unsigned, 1)
      w.head(.unsigned, version)
      w.head(.unsigned, 2)
      w.integer(issuedAt)
      w.head(.unsigned, 3)
      w.head(.array, UInt64(ids.count))
      for id in ids { id.withUnsafeBytes { w.bytes($0) } }
    }
    return try sign(payload: payload, kid: kid, issuerSeed: issuerSeed)
  }

  /// The public half of an issuer's Ed25519 seed.
  public static func issuerPublicKey(_ seed: [UInt8]) -> [UInt8]? {
    var pk = [UInt8](repeating: 0, count: 32)
    var sk = [UInt8](repeating: 0, count: 64)
    defer { sg_wipe(&sk, 64) }
    return seed.count == 32 && sg_ed25519_from_seed(seed, &pk, &sk) == 0 ? pk : nil
  }

  /// The public half of the site's X25519 key.
  public static func sitePublicKey(_ secret: [UInt8]) -> [UInt8]? {
    var pk = [UInt8](repeating: 0, count: 32)
    return secret.count == 32 && sg_x25519_public(secret, &pk) == 0 ? pk : nil
  }

  public static func randomBytes(_ n: Int) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: n)
    sg_random(&b, n)
    return b
  }

  private static func text(_ s: String, _ w: inout CBORWriter) {
    var s = s
    s.withUTF8 { w.text(UnsafeRawBufferPointer($0)) }
  }

  private static func encode(_ capacity: Int, _ body: (inout CBORWriter) -> Void) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: capacity)
    let n = out.withUnsafeMutableBytes { b in
      var w = CBORWriter(b, codec: codec)
      body(&w)
      precondition(!w.overflowed, "CBOR buffer too small")
      return w.count
    }
    return Array(out[0..<n])
  }
}
