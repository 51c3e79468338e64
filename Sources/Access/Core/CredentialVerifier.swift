import ScanBase

/// Crypto the verifier needs (libsodium and nettle behind it, in ScanAccessLinux).
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
  /// Where counted passes' uses are made durable (nil: counted passes are refused).
  public var useStore: (any UseStore)?
  /// The highest revocation list version ever accepted (nil: no durable state: with a revocation
  /// file configured, every signed pass is refused).
  public var revocationMark: (any VersionMark)?
  /// Access windows: a pass whose zones name schedules is admitted only inside one of them.
  public var schedules: ScheduleStore? = nil
  /// A lockdown is in force: only passes with the lockdown claim are admitted.
  public var lockdown = false
  /// Whether this reader asks for a PIN and checks it (a keypad as the engine's second factor).
  /// False: a pass with the PIN claim is `denied-pin-unavailable`, before any step or use is spent.
  public var pinAvailable = false
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
  let seed: UnsafeMutableRawBufferPointer
  let zoneNames: [[UInt8]]

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

  /// The PIN verifier of the last decided credential, opened from its sealed claim with the site
  /// key: nil when it has none, its signature did not verify, or the seal does not open (then no
  /// PIN can be checked: the caller refuses, fail-secure). Nothing allocated; the opened bytes are
  /// wiped.
  public func pinVerifier() -> PinVerifier? {
    guard lastVerified, last.hasPin, hasSiteKey else { return nil }
    let opened = withUnsafeBytes(of: last.sealedPin) { sealed in
      sign1.crypto.openSealed(sealed, into: UnsafeMutableRawBufferPointer(rebasing: seed[0..<64]))
    }
    defer { sign1.crypto.wipe(seed) }
    guard opened == 64 else { return nil }
    return PinVerifier(
      salt: Digest(bytes: UnsafeRawBufferPointer(rebasing: seed[0..<32])), mac: Digest(bytes: UnsafeRawBufferPointer(rebasing: seed[32..<64])))
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
}
