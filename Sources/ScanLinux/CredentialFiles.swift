import CCredential
import CLinux
import Glibc
import ScanCore

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

/// Single-use passes remembered in a file of fixed 32-byte slots (id, length, expiry): loaded
/// at start, one slot written and synced before the pass opens the door. Expired slots are reused.
public final class UsedCredentialFile: SingleUseStore {
  public let path: String
  public let capacity: Int
  private var ids: [CredentialID]
  private var expiries: [Int64]
  private var descriptor: Int32
  private let slot: UnsafeMutableRawBufferPointer
  public private(set) var count = 0
  public private(set) var writeFailures = 0

  public init(path: String, capacity: Int) throws(FileError) {
    self.path = path
    self.capacity = capacity
    ids = Array(repeating: CredentialID(), count: capacity)
    expiries = Array(repeating: .min, count: capacity)
    slot = .allocate(byteCount: 32, alignment: 8)
    descriptor = sg_open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard descriptor >= 0 else {
      slot.deallocate()
      throw FileError(path: path, reason: SystemError.describe(lastErrno()))
    }
    var st = stat()
    _ = fstat(descriptor, &st)
    let slots = min(Int(st.st_size) / 32, capacity)
    for i in 0..<slots {
      guard pread(descriptor, slot.baseAddress, 32, off_t(i * 32)) == 32 else { break }
      let n = Int(slot[16])
      guard n >= 1 && n <= 16 else { continue }
      ids[i] = CredentialID(UnsafeRawBufferPointer(rebasing: slot[0..<n]))!
      expiries[i] = slot.load(fromByteOffset: 24, as: Int64.self).littleEndian
      count = i + 1
    }
    count = slots
  }
  deinit {
    if descriptor >= 0 { close(descriptor) }
    slot.deallocate()
  }

  public func isUsed(_ id: CredentialID) -> Bool {
    for i in 0..<count where ids[i] == id { return true }
    return false
  }

  public func markUsed(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    var index = -1
    for i in 0..<count where expiries[i] < now {
      index = i
      break
    }
    if index < 0 {
      guard count < capacity else { return false }
      index = count
    }
    slot.initializeMemory(as: UInt8.self, repeating: 0)
    var v = id
    withUnsafeBytes(of: &v.high) { b in for k in 0..<8 { slot[k] = b[7 - k] } }
    withUnsafeBytes(of: &v.low) { b in for k in 0..<8 { slot[8 + k] = b[7 - k] } }
    slot[16] = v.count
    slot.storeBytes(of: expires.littleEndian, toByteOffset: 24, as: Int64.self)
    guard pwrite(descriptor, slot.baseAddress, 32, off_t(index * 32)) == 32, fdatasync(descriptor) == 0 else {
      writeFailures += 1
      return false
    }
    ids[index] = id
    expiries[index] = expires
    if index == count { count += 1 }
    return true
  }
}

/// Watches how far the wall clock can be trusted: the kernel's NTP status once a minute, and a
/// persisted floor (the latest time seen) written every ten minutes while synchronised. Sets
/// the verifier's `clock` and records each change of state in the ring. A poll participant with
/// a deadline only; allocates nothing after start.
public final class CredentialClock: PollParticipant {
  public static let checkMilliseconds = 60_000
  public static let floorWriteSeconds: Int64 = 600

  private let verifier: CredentialVerifier
  private let ring: EventRing
  private let wall: any WallClock
  private var floorDescriptor: Int32 = -1
  private var next: Instant? = nil
  private var lastState = ""
  private var lastFloorWrite: Int64 = 0
  private let floorText: UnsafeMutableRawBufferPointer
  /// Overrides the kernel's status (tests, the demo).
  public var synchronizedOverride: Bool? = nil

  public init(verifier: CredentialVerifier, ring: EventRing, wall: any WallClock, floorPath: String?) {
    self.verifier = verifier
    self.ring = ring
    self.wall = wall
    floorText = .allocate(byteCount: 24, alignment: 8)
    var floor: Int64 = 0
    if let floorPath {
      floorDescriptor = sg_open(floorPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
      if floorDescriptor >= 0 {
        let n = pread(floorDescriptor, floorText.baseAddress, 23, 0)
        if n > 0 {
          floor = Int64(String(decoding: UnsafeRawBufferPointer(rebasing: floorText[0..<n]), as: UTF8.self).filter(\.isNumber)) ?? 0
        }
      }
    }
    verifier.clock = ClockTrust(synchronized: sg_clock_synchronized() == 1, floor: floor)
    lastFloorWrite = floor
  }
  deinit {
    if floorDescriptor >= 0 { close(floorDescriptor) }
    floorText.deallocate()
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if next == nil { next = now }
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard let due = next, now >= due else { return }
    next = now.adding(milliseconds: Self.checkMilliseconds)
    refresh(now: now)
  }

  /// Reads the clock's state now, records a change, and moves the floor up.
  public func refresh(now: Instant) {
    let t = wall.unixSeconds()
    var trust = verifier.clock
    trust.synchronized = synchronizedOverride ?? (sg_clock_synchronized() == 1)
    if trust.synchronized && t > trust.floor { trust.floor = t }
    verifier.clock = trust
    let state = trust.state(now: t)
    if state != lastState {
      lastState = state
      let code: FaultCode =
        switch state {
        case "synchronised": .clockSynchronised
        case "behind-floor": .clockBehindFloor
        default: .clockUnsynchronised
        }
      var e = ScanEvent()
      e.kind = code == .clockSynchronised ? .state : .fault
      e.code = code.rawValue
      e.monotonic = now
      e.wallNanoseconds = wall.unixNanoseconds()
      _ = ring.append(e)
    }
    if trust.synchronized && floorDescriptor >= 0 && t - lastFloorWrite >= Self.floorWriteSeconds {
      writeFloor(t)
    }
  }

  private func writeFloor(_ t: Int64) {
    var w = ByteWriter(floorText)
    w.write(UInt64(max(0, t)))
    w.write("\n")
    if pwrite(floorDescriptor, floorText.baseAddress, w.count, 0) == w.count {
      _ = ftruncate(floorDescriptor, off_t(w.count))
      _ = fdatasync(floorDescriptor)
      lastFloorWrite = t
    }
  }

  /// Writes the floor now (a clean stop), when the clock is trusted.
  public func persist() {
    let t = wall.unixSeconds()
    if verifier.clock.synchronized && floorDescriptor >= 0 { writeFloor(t) }
  }
}
