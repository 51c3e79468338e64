import ScanBase

// MARK: The CWT claims

extension CredentialVerifier {
  /// Reads the CWT claims map from the verified payload into `claims`.
  public static func parseClaims(
    _ message: UnsafeRawBufferPointer, parts: COSESign1, codec: any CBORCodec, into claims: inout CredentialClaims
  ) throws(CredentialProblem) {
    for i in 0..<parts.kid.count { claims.kid[i] = message[parts.kid.lowerBound + i] }
    claims.kidCount = parts.kid.count
    do throws(CBORProblem) {
      var c = CBORCursor(UnsafeRawBufferPointer(rebasing: message[parts.payload]), codec: codec)
      let pairs = try c.map(max: 12)
      var seen: UInt32 = 0
      var hasExp = false
      for _ in 0..<pairs {
        let key = try c.integer()
        let bit: UInt32 =
          switch key {
          case 1...7: 1 << UInt32(key)
          case CredentialLabel.scangate: 1 << 8
          default: 0
          }
        guard bit != 0, seen & bit == 0 else { throw .unexpected }  // unknown or repeated claim
        seen |= bit
        switch key {
        case CredentialLabel.iss: _ = try c.text(max: 64)
        case CredentialLabel.sub:
          let r = try c.text(max: CredentialClaims.subjectBytesMax)
          for i in 0..<r.count { claims.subject[i] = c.buffer[r.lowerBound + i] }
          claims.subjectCount = r.count
        case CredentialLabel.aud: throw .unexpected
        case CredentialLabel.exp:
          claims.expires = try c.integer()
          hasExp = true
        case CredentialLabel.nbf: claims.notBefore = try c.integer()
        case CredentialLabel.iat: claims.issuedAt = try c.integer()
        case CredentialLabel.cti:
          let r = try c.bytes(max: CredentialClaims.idBytesMax)
          guard r.count > 0 else { throw .unexpected }
          for i in 0..<r.count { claims.id[i] = c.buffer[r.lowerBound + i] }
          claims.idCount = r.count
        default: try parsePrivate(&c, into: &claims)
        }
      }
      guard c.atEnd else { throw .trailing }
      // exp and cti are required: a pass that never expires, or that cannot be revoked, is refused.
      guard hasExp, claims.idCount > 0 else { throw .unexpected }
      guard claims.rotates == (claims.digits != 0) else { throw .unexpected }
    } catch {
      throw .cbor(error)
    }
  }

  private static func parsePrivate(_ c: inout CBORCursor, into claims: inout CredentialClaims) throws(CBORProblem) {
    let pairs = try c.map(max: 10)
    var seen: UInt32 = 0
    for _ in 0..<pairs {
      let key = try c.unsigned(max: 31)
      guard key >= 1 && key <= 10, seen & (1 << UInt32(key)) == 0 else { throw .unexpected }
      seen |= 1 << UInt32(key)
      switch key {
      case CredentialLabel.label:
        let r = try c.text(max: LabelLimits.bytesMax)
        for i in 0..<r.count { claims.label[i] = c.buffer[r.lowerBound + i] }
        claims.labelCount = r.count
      case CredentialLabel.zones:
        let n = try c.array(max: CredentialClaims.zonesMax)
        var end = 0
        for z in 0..<n {
          let r = try c.text(max: CredentialClaims.zoneBytesMax)
          guard r.count > 0, end + r.count <= CredentialClaims.zoneStorageBytes else { throw .oversized }
          for i in 0..<r.count { claims.zoneBytes[end + i] = c.buffer[r.lowerBound + i] }
          end += r.count
          claims.zoneEnds[z] = UInt8(end)
        }
        claims.zoneCount = n
      case CredentialLabel.singleUse: claims.singleUse = try c.boolean()
      case CredentialLabel.lockdown: claims.lockdown = try c.boolean()
      case CredentialLabel.uses:
        let n = try c.unsigned(max: UInt64(CredentialClaims.usesMax))
        guard n >= 1 else { throw .unexpected }
        claims.uses = Int(n)
      case CredentialLabel.firstUseWindow:
        let s = try c.unsigned(max: UInt64(CredentialClaims.firstUseWindowMax))
        guard s >= UInt64(CredentialClaims.firstUseWindowMin) else { throw .unexpected }
        claims.firstUseWindow = Int64(s)
      case CredentialLabel.seed:
        let r = try c.bytes(max: CredentialClaims.sealedSeedBytesMax)
        guard r.count > 48 else { throw .unexpected }
        for i in 0..<r.count { claims.sealedSeed[i] = c.buffer[r.lowerBound + i] }
        claims.sealedSeedCount = r.count
      case CredentialLabel.digits:
        let d = try c.unsigned(max: 8)
        guard d >= 6 else { throw .unexpected }
        claims.digits = Int(d)
      case CredentialLabel.pin:
        let r = try c.bytes(max: CredentialClaims.sealedPinBytes)
        guard r.count == CredentialClaims.sealedPinBytes else { throw .unexpected }
        for i in 0..<r.count { claims.sealedPin[i] = c.buffer[r.lowerBound + i] }
        claims.hasPin = true
      default:  // CredentialLabel.card
        guard try c.array(max: 2) == 2 else { throw .unexpected }
        claims.cardFacility = UInt32(try c.unsigned(max: UInt64(UInt32.max)))
        claims.cardNumber = try c.unsigned()
      }
    }
    // Single use and a number of uses say the same thing two ways: a pass says it once.
    guard !(claims.singleUse && claims.uses > 0) else { throw .unexpected }
  }
}
