import ScanBase

/// Crypto the verifier needs (libsodium and nettle behind it, in ScanLinux).
public protocol CredentialCrypto: AnyObject {
  func verifyEd25519(
    signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, publicKey: UnsafeRawBufferPointer
  )
    -> Bool
  /// Opens a sealed box addressed to the site key into `out`; the plaintext's size, or nil.
  func openSealed(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int?
  func hmacSHA1(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
  /// Zeroes memory in a way the compiler keeps.
  func wipe(_ buffer: UnsafeMutableRawBufferPointer)
}

/// Where the parts of a COSE_Sign1 message are, in its buffer.
public struct COSESign1: Sendable {
  public var protected: Range<Int>
  public var kid: Range<Int>
  public var payload: Range<Int>
  public var signature: Range<Int>

  public static let protectedBytesMax = 64
  /// A pass's payload bound (a QR code holds less). Signed files and fleet bundles are verified
  /// with a larger bound of their own (`Sign1Verifier(payloadBytesMax:)`).
  public static let payloadBytesMax = 1_024

  /// Parses `[protected: bstr .cbor {1: -8, 4: kid}, unprotected: {}, payload: bstr,
  /// signature: bstr(64)]`, optionally behind tag 18, with nothing after it. Strict: any other
  /// header, an unprotected header that is not empty, another algorithm: refused.
  public static func parse(
    _ message: UnsafeRawBufferPointer, codec: any CBORCodec, payloadBytesMax: Int = payloadBytesMax
  ) throws(CredentialProblem) -> COSESign1 {
    let read: Read
    do throws(CBORProblem) { read = try structure(message, codec: codec, payloadBytesMax: payloadBytesMax) } catch { throw .cbor(error) }
    guard read.headersOK, read.alg == CredentialLabel.algEdDSA else { throw .algorithm }
    guard let kid = read.kid, kid.count > 0 else { throw .unknownIssuer }
    return COSESign1(protected: read.protected, kid: kid, payload: read.payload, signature: read.signature)
  }

  private struct Read {
    var protected = 0..<0, payload = 0..<0, signature = 0..<0
    var kid: Range<Int>? = nil
    var alg: Int64? = nil
    var headersOK = true
  }

  private static func structure(
    _ message: UnsafeRawBufferPointer, codec: any CBORCodec, payloadBytesMax: Int
  ) throws(CBORProblem) -> Read {
    var r = Read()
    var c = CBORCursor(message, codec: codec)
    if try c.peekType() == .tag {
      guard try c.next().argument == CredentialLabel.coseSign1Tag else { throw .unexpected }
    }
    guard try c.array(max: 4) == 4 else { throw .unexpected }
    r.protected = try c.bytes(max: protectedBytesMax)
    // Nothing may travel unprotected: an alg or kid there is a known way to confuse verifiers.
    if try c.map(max: 8) != 0 {
      r.headersOK = false
      return r
    }
    r.payload = try c.bytes(max: payloadBytesMax)
    r.signature = try c.bytes(max: 64)
    guard r.signature.count == 64 else { throw .unexpected }
    guard c.atEnd else { throw .trailing }
    var h = CBORCursor(c.slice(r.protected), codec: codec)
    let pairs = try h.map(max: 2)
    for _ in 0..<pairs {
      switch try h.unsigned() {
      case CredentialLabel.headerAlg where r.alg == nil: r.alg = try h.integer()
      case CredentialLabel.headerKid where r.kid == nil:
        let k = try h.bytes(max: CredentialClaims.kidBytesMax)
        r.kid = (k.lowerBound + r.protected.lowerBound)..<(k.upperBound + r.protected.lowerBound)
      default:
        // A repeated or unknown (possibly critical) header.
        r.headersOK = false
        return r
      }
    }
    guard h.atEnd else { throw .trailing }
    return r
  }

  /// Writes the Sig_structure (RFC 9052 §4.4): ["Signature1", protected, h'', payload].
  public static func signatureStructure(
    protected: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, into writer: inout CBORWriter
  ) {
    writer.head(.array, 4)
    Self.context.withUnsafeBytes { writer.text($0) }
    writer.bytes(protected)
    writer.head(.bytes, 0)
    writer.bytes(payload)
  }
  static let context: [UInt8] = Array("Signature1".utf8)
}

/// Verifies COSE_Sign1 messages against the trust store: for credentials, revocation lists and
/// signed bundles. Holds one scratch buffer for the signature structure.
public final class Sign1Verifier {
  public var trust: TrustStore
  public let codec: any CBORCodec
  public let crypto: any CredentialCrypto
  /// The largest payload it verifies (a pass's 1 KiB by default).
  public let payloadBytesMax: Int
  private let scratch: UnsafeMutableRawBufferPointer

  public init(
    trust: TrustStore, codec: any CBORCodec, crypto: any CredentialCrypto, payloadBytesMax: Int = COSESign1.payloadBytesMax
  ) {
    self.trust = trust
    self.codec = codec
    self.crypto = crypto
    self.payloadBytesMax = payloadBytesMax
    scratch = .allocate(byteCount: payloadBytesMax + COSESign1.protectedBytesMax + 32, alignment: 8)
  }
  deinit { scratch.deallocate() }

  /// The verified message's parts. The key must be trusted and valid at `now`.
  public func verify(_ message: UnsafeRawBufferPointer, now: Int64) throws(CredentialProblem) -> COSESign1 {
    let parts = try COSESign1.parse(message, codec: codec, payloadBytesMax: payloadBytesMax)
    let kid = UnsafeRawBufferPointer(rebasing: message[parts.kid])
    guard let key = trust.key(for: kid) else { throw .unknownIssuer }
    guard key.isValid(at: now) else { throw .issuerKeyNotValid }
    var w = CBORWriter(scratch, codec: codec)
    COSESign1.signatureStructure(
      protected: UnsafeRawBufferPointer(rebasing: message[parts.protected]),
      payload: UnsafeRawBufferPointer(rebasing: message[parts.payload]), into: &w)
    guard !w.overflowed else { throw .oversized }
    let ok = withUnsafeBytes(of: key.publicKey) { pk in
      crypto.verifyEd25519(signature: UnsafeRawBufferPointer(rebasing: message[parts.signature]), message: w.written, publicKey: pk)
    }
    guard ok else { throw .signature }
    return parts
  }
}

/// Whether a decision may change state (a scanned code: replay and single-use are recorded) or
/// only looks (the console's CHECK, a snapshot's outlines, `credential show`).
public enum DecideMode: Sendable {
  case admit, inspect
}

/// The signed-credential policy (docs/credentials.md): parse, verify, judge time, revocation,
/// zone, TOTP, replay and single use, in that order; the first failure is the verdict.
/// Everything it needs is allocated at init; a decision allocates nothing.
public final class CredentialVerifier {
  public let settings: CredentialSettings
  public let sign1: Sign1Verifier
  public var revocation = RevocationList()
  /// The one time policy (shared with the clock watcher, the fleet and the audit log).
  public var time = TrustedTime()
  /// The clock's state as a value; setting it replaces the shared state (tests and tools).
  public var clock: ClockTrust {
    get { time.trust() }
    set { time = TrustedTime(floor: newValue.floor, synchronized: newValue.synchronized) }
  }
  public let replay: ReplayCache
  /// Where accepted rotating steps are made durable (nil: rotating passes are refused).
  public var replayStore: (any ReplayStore)?
  public var singleUse: (any SingleUseStore)?
  /// The highest revocation list version ever accepted (nil: no durable state: with a revocation
  /// file configured, every signed pass is refused).
  public var revocationMark: (any VersionMark)?
  /// Access windows: a pass whose zones name schedules is admitted only inside one of them.
  public var schedules: ScheduleStore? = nil
  /// Whether the site key is loaded (rotating passes need it).
  public var hasSiteKey = true
  /// False while a configured revocation list has not loaded: every signed pass is refused.
  public var ready = true
  /// The last trust or revocation file that was refused, for STATUS.
  public var lastFileError: String? = nil
  /// The claims of the last credential whose signature verified (its label goes on the event).
  public private(set) var last = CredentialClaims()
  /// Whether `last` belongs to the last decision (its signature verified).
  public private(set) var lastVerified = false
  public private(set) var lastProblem: CredentialProblem? = nil
  /// Counters for STATUS.
  public private(set) var accepted: UInt64 = 0
  public private(set) var refused: UInt64 = 0

  private let message: UnsafeMutableRawBufferPointer
  private let seed: UnsafeMutableRawBufferPointer
  private let zoneNames: [[UInt8]]

  public init(settings: CredentialSettings, sign1: Sign1Verifier) {
    self.settings = settings
    self.sign1 = sign1
    replay = ReplayCache(capacity: max(1, settings.replayCacheEntries))
    message = .allocate(byteCount: CredentialText.messageBytesMax, alignment: 8)
    seed = .allocate(byteCount: 64 + TOTP.scratchBytes, alignment: 8)
    zoneNames = settings.zones.map { Array($0.utf8) }
  }
  deinit {
    sign1.crypto.wipe(seed)
    message.deallocate()
    seed.deallocate()
  }

  public static func bytes(_ settings: CredentialSettings) -> Int {
    CredentialText.messageBytesMax + 64 + ReplayCache.bytes(capacity: settings.replayCacheEntries)
      + COSESign1.payloadBytesMax + MemoryLayout<CredentialClaims>.stride
  }

  /// The decision on `payload`, or nil when it is not an SG1 credential.
  public func decide(_ payload: UnsafeRawBufferPointer, nowUnixSeconds now: Int64, mode: DecideMode) -> AccessDecision? {
    guard CredentialText.isCredential(payload) else { return nil }
    if let problem = check(payload, now: now, mode: mode) {
      lastProblem = problem
      if mode == .admit { refused &+= 1 }
      return AccessDecision(verdict: problem.verdict, source: .credential)
    }
    lastProblem = nil
    if mode == .admit { accepted &+= 1 }
    return AccessDecision(verdict: .granted, source: .credential)
  }

  /// Copies the label of the last decided credential, when its signature verified (a refused
  /// pass's label is shown only if the issuer wrote it).
  public func copyLabel(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    guard lastVerified else { return 0 }
    let n = min(last.labelCount, buffer.count)
    withUnsafeBytes(of: last.label) { src in
      for i in 0..<n { buffer[i] = src[i] }
    }
    return n
  }

  /// Verifies `payload`; on success `last` holds its claims.
  public func verify(_ payload: UnsafeRawBufferPointer, now: Int64, mode: DecideMode) throws(CredentialProblem) {
    if let problem = check(payload, now: now, mode: mode) { throw problem }
  }

  /// The verification, returning the first problem. A well-formed pass is judged without
  /// throwing (a throw is free in the reader, but a test harness may record a backtrace per throw).
  func check(_ payload: UnsafeRawBufferPointer, now: Int64, mode: DecideMode) -> CredentialProblem? {
    let text: CredentialText.Parsed
    lastVerified = false
    // Every time check below judges at the later of the clock and its floor (TrustedTime).
    let judged = time.judged(now)
    do throws(CredentialProblem) {
      text = try CredentialText.parse(payload)
      guard ready else { return .unavailable }
      guard let n = Base45.decode(UnsafeRawBufferPointer(rebasing: payload[text.body]), into: message) else {
        return text.body.count / 3 * 2 > message.count ? .oversized : .base45
      }
      let bytes = UnsafeRawBufferPointer(rebasing: message[0..<n])
      let parts = try sign1.verify(bytes, now: judged)
      last = CredentialClaims()
      try Self.parseClaims(bytes, parts: parts, codec: sign1.codec, into: &last)
      lastVerified = true
    } catch {
      return error
    }
    return judge(text, now: now, judged: judged, mode: mode)
  }

  /// Time, revocation, zone, TOTP, replay and single use, for verified claims in `last`.
  /// Arithmetic on the pass's own values saturates: a claim of 2^63−1 is a verdict, never a trap.
  private func judge(_ text: CredentialText.Parsed, now: Int64, judged: Int64, mode: DecideMode) -> CredentialProblem? {
    // Time: against the later of the clock and its floor, or refused while untrusted.
    if !time.trust().isTrusted(now: now) && settings.timePolicy == .deny { return .clockUntrusted }
    let leeway = Int64(settings.leewaySeconds)
    if let nbf = last.notBefore, judged.saturatingAdd(leeway) < nbf { return .notYetValid }
    if judged.saturatingAdd(-leeway) > last.expires { return .expired }

    let id = withUnsafeBytes(of: last.id) { CredentialID(UnsafeRawBufferPointer(rebasing: $0[0..<last.idCount])) }
    guard let id else { return .cbor(.unexpected) }
    if revocation.contains(id) { return .revoked }
    if !zoneNames.isEmpty && !zoneMatches() { return .zone }
    if let schedules, let problem = zoneWindows(schedules, now: now, judged: judged) { return problem }

    var step: Int64? = nil
    if last.rotates {
      guard let presented = text.totp else { return .totpMissing }
      guard text.digits == last.digits else { return .totpWrong }
      // Without a durable record of accepted steps a restart would accept a used code again.
      guard replayStore != nil || mode == .inspect else { return .unavailable }
      switch matchTOTP(presented, digits: last.digits, now: judged) {
      case .failure(let problem): return problem
      case .success(let matched): step = matched
      }
      if let seen = replay.lastStep(id), step! <= seen { return .replayed }
    } else if text.totp != nil {
      return .totpUnexpected
    }
    if last.singleUse {
      guard let store = singleUse else { return .unavailable }
      if store.isUsed(id) { return .used }
    }
    guard mode == .admit else { return nil }
    if let step {
      // Durable before the door opens: the slot is written and synced, or the pass is refused.
      let window = Int64(settings.totpSkewSteps)
      guard let slot = replay.record(id, step: step, expiredBefore: judged / CredentialSettings.periodSeconds - window),
        replayStore!.persist(slot: slot, id: id, step: replay.entry(slot).step)
      else { return .unavailable }
    }
    if last.singleUse {
      guard singleUse!.markUsed(id, expires: last.expires.saturatingAdd(leeway), now: judged) else { return .unavailable }
    }
    return nil
  }

  private func zoneMatches() -> Bool {
    for i in 0..<last.zoneCount where last.withZone(i, { isReaderZone($0) }) { return true }
    return false
  }

  private func isReaderZone(_ zone: UnsafeRawBufferPointer) -> Bool {
    zoneNames.contains { name in name.count == zone.count && name.withUnsafeBytes { $0.elementsEqual(zone) } }
  }

  /// Among the pass's zones this reader accepts (all of them when the reader names none), those
  /// that name a schedule: the pass is admitted when none does, or when one of them is open now.
  /// While a configured schedule file has not loaded yet, a pass that carries zones is refused
  /// (fail-secure: any of them may be a window).
  /// The time of day is unknown while the clock reads behind its floor: every window is closed then.
  private func zoneWindows(_ schedules: ScheduleStore, now: Int64, judged: Int64) -> CredentialProblem? {
    let behind = time.isBehind(now)
    var windowed = false
    var accepted = false
    for i in 0..<last.zoneCount {
      // nil: not this reader's zone; .some(nil): no schedule of that name; .some(open).
      let window: Bool?? = last.withZone(i) { zone in
        guard zoneNames.isEmpty || isReaderZone(zone) else { return nil }
        let open = schedules.allows(zoneKey: ScheduleKey.of(zone), nowUnixSeconds: judged)
        return .some(open.map { $0 && !behind })
      }
      guard let window else { continue }
      accepted = true
      if let open = window {
        if open { return nil }
        windowed = true
      }
    }
    if accepted && schedules.version == 0 { return .unavailable }
    return windowed ? .outsideSchedule : nil
  }

  /// The latest step within the skew whose TOTP (RFC 6238, HMAC-SHA1) equals `presented`.
  private func matchTOTP(_ presented: UInt32, digits: Int, now: Int64) -> Result<Int64, CredentialProblem> {
    guard hasSiteKey else { return .failure(.seal) }
    let opened = withUnsafeBytes(of: last.sealedSeed) { sealed in
      sign1.crypto.openSealed(
        UnsafeRawBufferPointer(rebasing: sealed[0..<last.sealedSeedCount]), into: UnsafeMutableRawBufferPointer(rebasing: seed[0..<64]))
    }
    guard let seedCount = opened, seedCount > 0 else { return .failure(.seal) }
    defer { sign1.crypto.wipe(seed) }
    let key = UnsafeRawBufferPointer(rebasing: seed[0..<seedCount])
    let scratch = UnsafeMutableRawBufferPointer(rebasing: seed[64...])
    let current = now / CredentialSettings.periodSeconds
    let skew = Int64(settings.totpSkewSteps)
    var matched: Int64? = nil
    // Every candidate is computed (no early exit on a match). A plain counter: iterating a
    // ClosedRange<Int64> allocates in unoptimised builds.
    var step = max(0, current - skew)
    while step <= current + skew {
      if TOTP.value(key: key, step: step, digits: digits, crypto: sign1.crypto, scratch: scratch) == presented { matched = step }
      step += 1
    }
    guard let matched else { return .failure(.totpWrong) }
    return .success(matched)
  }

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
    let pairs = try c.map(max: 6)
    var seen: UInt32 = 0
    for _ in 0..<pairs {
      let key = try c.unsigned(max: 31)
      guard key >= 1 && key <= 6, seen & (1 << UInt32(key)) == 0 else { throw .unexpected }
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
      case CredentialLabel.seed:
        let r = try c.bytes(max: CredentialClaims.sealedSeedBytesMax)
        guard r.count > 48 else { throw .unexpected }
        for i in 0..<r.count { claims.sealedSeed[i] = c.buffer[r.lowerBound + i] }
        claims.sealedSeedCount = r.count
      case CredentialLabel.digits:
        let d = try c.unsigned(max: 8)
        guard d >= 6 else { throw .unexpected }
        claims.digits = Int(d)
      default:
        guard try c.array(max: 2) == 2 else { throw .unexpected }
        claims.cardFacility = UInt32(try c.unsigned(max: UInt64(UInt32.max)))
        claims.cardNumber = try c.unsigned()
      }
    }
  }
}

/// RFC 6238 TOTP (RFC 4226 dynamic truncation), HMAC-SHA1.
public enum TOTP {
  /// Bytes of scratch `value(key:step:digits:crypto:scratch:)` needs: the counter and the MAC.
  public static let scratchBytes = 28

  /// The TOTP value at `step`, computed in `scratch` (nothing allocated).
  public static func value(
    key: UnsafeRawBufferPointer, step: Int64, digits: Int, crypto: any CredentialCrypto, scratch: UnsafeMutableRawBufferPointer
  ) -> UInt32 {
    precondition(scratch.count >= scratchBytes)
    let counter = UInt64(bitPattern: step)
    for i in 0..<8 { scratch[i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
    let mac = UnsafeMutableRawBufferPointer(rebasing: scratch[8..<28])
    crypto.hmacSHA1(key: key, message: UnsafeRawBufferPointer(rebasing: scratch[0..<8]), into: mac)
    let offset = Int(mac[19] & 0x0F)
    let binary =
      UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
      | UInt32(mac[offset + 3])
    var modulus: UInt32 = 1
    for _ in 0..<digits { modulus *= 10 }
    crypto.wipe(mac)
    return binary % modulus
  }

  /// The same, with scratch of its own (tools and tests).
  public static func value(key: UnsafeRawBufferPointer, step: Int64, digits: Int, crypto: any CredentialCrypto) -> UInt32 {
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: scratchBytes, alignment: 8)
    defer { scratch.deallocate() }
    return value(key: key, step: step, digits: digits, crypto: crypto, scratch: scratch)
  }
}
