import ScanCore

/// Who is asking. A network peer is keyed as a network rather than one address, so an attacker
/// does not get a fresh failure budget per address: IPv4 per /32, IPv6 per /64 (what one host
/// usually controls). A client on this host (loopback, or the host's own address) is keyed by the
/// user that owns its socket (`localUser`), so one local user's failures and connections count
/// against that user only; `loopback` is a client on this host whose owner could not be told.
/// The serial port is its own.
public struct PeerKey: Hashable, Sendable {
  public var high: UInt64
  public var low: UInt64
  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }
  /// The serial console's key.
  public static let serial = PeerKey(high: .max, low: .max)
  /// A client on this host whose owner is unknown (the lookup was unavailable, or its socket
  /// was already closed): all such clients are one peer.
  public static let loopback = PeerKey(high: 0, low: 1)

  private static let localUserTag: UInt64 = 0x0001_0000_0000_0000

  /// A client on this host whose socket belongs to user `uid`.
  public static func localUser(_ uid: UInt32) -> PeerKey { PeerKey(high: 0, low: localUserTag | UInt64(uid)) }

  /// The owning user of a `localUser` key.
  public var localUID: UInt32? {
    high == 0 && low & 0xFFFF_FFFF_0000_0000 == Self.localUserTag ? UInt32(truncatingIfNeeded: low) : nil
  }

  /// Whether this is a client on this host (a user, or the unknown-owner key).
  public var isLocal: Bool { self == .loopback || localUID != nil }

  /// Whether this is a peer on the network (neither local nor the serial port).
  public var isNetwork: Bool { self != .serial && !isLocal }

  /// An IPv4 peer; `address` in host order (127.0.0.1 is 0x7F00_0001). Loopback addresses give
  /// `loopback` (the transport refines it to `localUser` when it can tell the owner).
  public static func ipv4(_ address: UInt32) -> PeerKey {
    if address >> 24 == 127 { return .loopback }
    return PeerKey(high: 0, low: 0xFFFF_0000_0000 | UInt64(address))
  }

  /// An IPv6 peer from its 16 address bytes read as two big-endian words. IPv4-mapped
  /// addresses (::ffff:a.b.c.d) are keyed as the IPv4 peer they are.
  public static func ipv6(high: UInt64, low: UInt64) -> PeerKey {
    if high == 0 && low == 1 { return .loopback }
    if high == 0 && low >> 32 == 0xFFFF { return ipv4(UInt32(truncatingIfNeeded: low)) }
    return PeerKey(high: high, low: 0)  // the /64
  }
}

/// Failed-AUTH accounting: per peer, exponential backoff between attempts, then a lockout; and a
/// global budget across all network peers, so many networks cannot guess in parallel.
///
/// Three fixed tables, so that no class of peer can crowd out another: network peers
/// (`capacity`), users on this host (`localCapacity`), and one record for the serial port. A
/// full table reuses the record idle longest, but never one that is locked out now (while every
/// record of a table is, new peers of that class are refused too). The global budget and a full
/// network table refuse network peers only: a local user and the serial port keep their own
/// records, so a lockout from the network never reaches the operator on the reader itself, and
/// one local user's failures lock out that user alone.
public struct AuthGate: ~Copyable {
  public typealias Settings = AuthSettings

  /// What the gate says about an attempt.
  public enum Admission: Equatable, Sendable {
    case allowed
    /// Too soon after a failure: retry after this many milliseconds.
    case backingOff(milliseconds: Int)
    /// Locked out for this many more milliseconds.
    case lockedOut(milliseconds: Int)
  }

  private struct Record {
    var peer = PeerKey(high: 0, low: 0)
    var used = false
    var failures = 0
    var nextAttempt = Instant(nanoseconds: 0)
    var lockedUntil = Instant(nanoseconds: 0)
    var lastFailure = Instant(nanoseconds: 0)
  }

  public let settings: Settings
  /// Network records first, then local users' records, then the serial port's.
  private let records: UnsafeMutableBufferPointer<Record>
  private let networkCount: Int
  private var globalWindowStart = Instant(nanoseconds: 0)
  private var globalFailures = 0
  private var globalLockedUntil = Instant(nanoseconds: 0)
  /// Until when a full table of active lockouts refuses new network peers, and new local users.
  private var networkTableFullUntil = Instant(nanoseconds: 0)
  private var localTableFullUntil = Instant(nanoseconds: 0)

  public init(settings: Settings, capacity: Int = 64, localCapacity: Int = 16) {
    precondition(capacity > 0 && localCapacity > 0 && settings.failuresMax > 0)
    self.settings = settings
    networkCount = capacity
    records = .allocate(capacity: capacity + localCapacity + 1)
    records.initialize(repeating: Record())
  }

  deinit { records.deallocate() }

  /// The records `peer`'s class lives in.
  private func table(_ peer: PeerKey) -> Range<Int> {
    if peer == .serial { return (records.count - 1)..<records.count }
    return peer.isLocal ? networkCount..<(records.count - 1) : 0..<networkCount
  }

  private func find(_ peer: PeerKey) -> Int? {
    for i in table(peer) where records[i].used && records[i].peer == peer { return i }
    return nil
  }

  private static func remaining(_ until: Instant, _ now: Instant) -> Int {
    Int((until.nanoseconds - now.nanoseconds) / 1_000_000) + 1
  }

  /// Whether `peer` may try AUTH at `now`.
  public func admit(_ peer: PeerKey, at now: Instant) -> Admission {
    if peer.isNetwork && now < globalLockedUntil { return .lockedOut(milliseconds: Self.remaining(globalLockedUntil, now)) }
    guard let i = find(peer) else {
      let fullUntil = peer.isNetwork ? networkTableFullUntil : peer.isLocal ? localTableFullUntil : Instant(nanoseconds: 0)
      if now < fullUntil { return .lockedOut(milliseconds: Self.remaining(fullUntil, now)) }
      return .allowed
    }
    let r = records[i]
    if now < r.lockedUntil { return .lockedOut(milliseconds: Self.remaining(r.lockedUntil, now)) }
    if now < r.nextAttempt { return .backingOff(milliseconds: Self.remaining(r.nextAttempt, now)) }
    return .allowed
  }

  /// Records a failed attempt; returns the peer's failure count.
  @discardableResult
  public mutating func recordFailure(_ peer: PeerKey, at now: Instant) -> Int {
    if peer.isNetwork { countGlobally(at: now) }
    guard let i = find(peer) ?? claimRecord(for: peer, at: now) else { return settings.failuresMax }
    if now >= records[i].lockedUntil && records[i].failures >= settings.failuresMax {
      records[i].failures = 0  // a lockout served starts the count again
    }
    records[i].failures += 1
    records[i].lastFailure = now
    let failures = records[i].failures
    if failures >= settings.failuresMax {
      records[i].lockedUntil = now.adding(milliseconds: settings.lockoutSeconds * 1000)
    } else {
      let backoff = settings.firstBackoffMilliseconds << min(failures - 1, 16)
      records[i].nextAttempt = now.adding(milliseconds: backoff)
    }
    return failures
  }

  /// A free record of `peer`'s table, else the one idle longest that is not locked out now; nil
  /// (and new peers of that class refused for a lockout period) when every record is an active
  /// lockout. The serial port's record is always its own.
  private mutating func claimRecord(for peer: PeerKey, at now: Instant) -> Int? {
    var best = -1
    for k in table(peer) {
      if !records[k].used { best = k; break }
      guard now >= records[k].lockedUntil else { continue }
      if best < 0 || records[k].lastFailure < records[best].lastFailure { best = k }
    }
    guard best >= 0 else {
      let until = now.adding(milliseconds: settings.lockoutSeconds * 1000)
      if peer.isNetwork { networkTableFullUntil = until } else { localTableFullUntil = until }
      return nil
    }
    records[best] = Record(peer: peer, used: true)
    return best
  }

  private mutating func countGlobally(at now: Instant) {
    if now.milliseconds(since: globalWindowStart) >= settings.globalWindowSeconds * 1000 || globalFailures == 0 {
      globalWindowStart = now
      globalFailures = 0
    }
    globalFailures += 1
    if globalFailures >= settings.globalFailuresMax {
      globalLockedUntil = now.adding(milliseconds: settings.lockoutSeconds * 1000)
      globalFailures = 0
    }
  }

  /// A successful AUTH clears the peer's record (not the global count).
  public mutating func recordSuccess(_ peer: PeerKey) {
    if let i = find(peer) { records[i].used = false }
  }
}
