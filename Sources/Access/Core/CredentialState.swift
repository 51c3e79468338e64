/// A credential id (`cti`, 1–16 bytes) packed into two words and a length: compared and
/// stored without allocation.
public struct CredentialID: Hashable, Comparable, Sendable {
  public var high: UInt64 = 0
  public var low: UInt64 = 0
  public var count: UInt8 = 0

  public init() {}
  public init?(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count >= 1 && bytes.count <= 16 else { return nil }
    for i in 0..<bytes.count {
      if i < 8 { high |= UInt64(bytes[i]) << (56 - 8 * UInt64(i)) } else { low |= UInt64(bytes[i]) << (56 - 8 * UInt64(i - 8)) }
    }
    count = UInt8(bytes.count)
  }
  public static func < (a: Self, b: Self) -> Bool { (a.high, a.low, a.count) < (b.high, b.low, b.count) }

  public var bytes: [UInt8] {
    (0..<Int(count)).map { i in i < 8 ? UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i))) : UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i - 8))) }
  }
}

/// One issuer key from the trust file: Ed25519 public key by `kid`, with a validity window
/// (several keys are trusted at once while a site rotates its issuer key).
public struct IssuerKey: Sendable {
  public var kid = InlineArray<16, UInt8>(repeating: 0)
  public var kidCount = 0
  public var publicKey = InlineArray<32, UInt8>(repeating: 0)
  public var notBefore: Int64?
  public var notAfter: Int64?

  public init?(kid: [UInt8], publicKey: [UInt8], notBefore: Int64?, notAfter: Int64?) {
    guard (1...CredentialClaims.kidBytesMax).contains(kid.count), publicKey.count == 32 else { return nil }
    for i in 0..<kid.count { self.kid[i] = kid[i] }
    kidCount = kid.count
    for i in 0..<32 { self.publicKey[i] = publicKey[i] }
    self.notBefore = notBefore
    self.notAfter = notAfter
  }

  public func matches(_ candidate: UnsafeRawBufferPointer) -> Bool {
    guard candidate.count == kidCount else { return false }
    for i in 0..<kidCount where kid[i] != candidate[i] { return false }
    return true
  }

  public func isValid(at now: Int64) -> Bool {
    if let nb = notBefore, now < nb { return false }
    if let na = notAfter, now > na { return false }
    return true
  }

  public var kidText: String { withUnsafeBytes(of: kid) { String(decoding: $0[0..<kidCount], as: UTF8.self) } }
}

/// The trusted issuer keys (loaded from the trust file; replaced whole on reload).
public struct TrustStore: Sendable {
  public static let keysMax = 32
  public private(set) var keys: [IssuerKey] = []
  public init(keys: [IssuerKey] = []) { self.keys = Array(keys.prefix(Self.keysMax)) }

  public func key(for kid: UnsafeRawBufferPointer) -> IssuerKey? {
    for i in 0..<keys.count where keys[i].matches(kid) { return keys[i] }
    return nil
  }
}

/// The issuer's signed deny-list of credential ids, sorted for lookup.
public struct RevocationList: Sendable {
  public static let idsMax = 65_536
  public private(set) var version: UInt64 = 0
  public private(set) var issuedAt: Int64 = 0
  public private(set) var ids: [CredentialID] = []

  public init() {}
  public init(version: UInt64, issuedAt: Int64, ids: [CredentialID]) {
    self.version = version
    self.issuedAt = issuedAt
    self.ids = ids.sorted()
  }

  public func contains(_ id: CredentialID) -> Bool {
    var lo = 0
    var hi = ids.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if ids[mid] == id { return true }
      if ids[mid] < id { lo = mid + 1 } else { hi = mid }
    }
    return false
  }
}

/// The last accepted time step of each rotating pass seen within the acceptance window, in
/// fixed storage. A step at or before the last accepted one is a replay. Entries whose step has
/// left every window are reused; when every slot is live the pass is refused (fail-secure).
/// Each accepted step is made durable through a `ReplayStore` before the door opens, and the
/// store's slots are restored at start, so a restart forgets nothing.
public final class ReplayCache {
  public let capacity: Int
  private let ids: UnsafeMutableBufferPointer<CredentialID>
  private let steps: UnsafeMutableBufferPointer<Int64>
  public private(set) var count = 0
  /// Every step at or before this is a replay for every pass: set when a store held more live
  /// slots than this cache has (a lowered `replay_cache_entries`), so none of them is forgotten.
  public private(set) var stepFloor: Int64 = .min

  public init(capacity: Int) {
    precondition(capacity > 0)
    self.capacity = capacity
    ids = .allocate(capacity: capacity)
    ids.initialize(repeating: CredentialID())
    steps = .allocate(capacity: capacity)
    steps.initialize(repeating: .min)
  }
  deinit {
    ids.deallocate()
    steps.deallocate()
  }

  public static func bytes(capacity: Int) -> Int {
    capacity * (MemoryLayout<CredentialID>.stride + MemoryLayout<Int64>.stride)
  }

  /// The last accepted step of `id` (or the floor every pass shares), nil when none.
  public func lastStep(_ id: CredentialID) -> Int64? {
    for i in 0..<count where ids[i] == id { return max(steps[i], stepFloor) }
    return stepFloor == .min ? nil : stepFloor
  }

  /// Records `step` as accepted for `id`. `expiredBefore`: steps below it can never verify
  /// again, so their slots are free. Returns the slot it is kept in (for the durable store), or
  /// nil when no slot is free.
  public func record(_ id: CredentialID, step: Int64, expiredBefore: Int64) -> Int? {
    var free = -1
    for i in 0..<count {
      if ids[i] == id {
        steps[i] = max(steps[i], step)
        return i
      }
      if free < 0 && steps[i] < expiredBefore { free = i }
    }
    if free < 0 {
      guard count < capacity else { return nil }
      free = count
      count += 1
    }
    ids[free] = id
    steps[free] = step
    return free
  }

  /// The step kept in `slot` (what the durable store writes).
  public func entry(_ slot: Int) -> (id: CredentialID, step: Int64) { (ids[slot], steps[slot]) }

  /// Puts back what a durable store held in `slot` (at start). A slot beyond this cache's
  /// capacity raises `stepFloor` instead, so its step stays refused.
  public func restore(slot: Int, id: CredentialID, step: Int64) {
    guard slot < capacity else {
      stepFloor = max(stepFloor, step)
      return
    }
    ids[slot] = id
    steps[slot] = step
    count = max(count, slot + 1)
  }

  public func removeAll() { count = 0 }
}

/// Where rotating passes' accepted steps are kept across restarts: slot `slot` of the replay
/// cache is written and synced before the door opens.
public protocol ReplayStore: AnyObject {
  /// False when it could not be made durable: the pass is then refused.
  func persist(slot: Int, id: CredentialID, step: Int64) -> Bool
}

/// Where counted passes (single use, a number of uses, a first-use window) are remembered across
/// restarts: a file, synced before the door opens.
public protocol UseStore: AnyObject {
  /// How many times `id` has opened the door and when it first did (Unix seconds, 0 when the
  /// record predates first-use times); nil when it never has.
  func usage(_ id: CredentialID) -> (uses: Int, firstUse: Int64)?
  /// Records one more use of `id` (its first at `now`), kept until `expires` (after which it
  /// cannot verify anyway). False when it could not be made durable: the pass is then refused.
  func recordUse(_ id: CredentialID, expires: Int64, now: Int64) -> Bool
  /// False while counted passes cannot be counted as configured (uses counted site-wide, the
  /// fleet link down, the offline rule `deny`): they are refused `denied-offline`.
  var countsNow: Bool { get }
  /// Every pass this reader has counted and still remembers: id, uses, first use, kept until.
  func forEachUse(_ body: (_ id: CredentialID, _ uses: Int, _ firstUse: Int64, _ until: Int64) -> Void)
}

extension UseStore {
  public var countsNow: Bool { true }
  public func forEachUse(_ body: (_ id: CredentialID, _ uses: Int, _ firstUse: Int64, _ until: Int64) -> Void) {}
}

/// What to do with time-bound passes while the clock is not known to be right.
public enum TimePolicy: String, Sendable, CaseIterable {
  /// Refuse every signed pass while the clock is unsynchronised or behind its floor.
  case deny
  /// Judge validity against the later of the clock and the floor (never earlier than a time the
  /// reader has already seen), and accept.
  case floor
}

/// How far the reader trusts its wall clock: synchronised (the kernel's NTP status, which
/// systemd-timesyncd, chrony and ntpd set) and the persisted never-go-back floor.
public struct ClockTrust: Equatable, Sendable {
  public var synchronized: Bool
  /// The latest wall time the reader has seen (persisted), or 0.
  public var floor: Int64
  public init(synchronized: Bool, floor: Int64) {
    self.synchronized = synchronized
    self.floor = floor
  }
  public static let trusted = ClockTrust(synchronized: true, floor: 0)

  /// The clock's state for STATUS and the log.
  public func state(now: Int64) -> String {
    if now < floor { return "behind-floor" }
    return synchronized ? "synchronised" : "unsynchronised"
  }
  public func isTrusted(now: Int64) -> Bool { synchronized && now >= floor }
}

/// The highest version of a versioned file ever accepted, kept durably (the revocation list):
/// nothing older is accepted again, after a restart too.
public protocol VersionMark: AnyObject {
  var highest: UInt64 { get }
  /// Makes `version` the highest accepted, durably, before it goes live; false when it could not.
  func raise(to version: UInt64) -> Bool
}
