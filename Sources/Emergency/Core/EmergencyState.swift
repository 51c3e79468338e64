import ScanBase

/// The emergency inputs: the fire panel's release contact and a lockdown switch, read with the
/// line's active-low setting applied (`.active`: the fire alarm stands, the switch is on).
public enum EmergencyInput: Int, Sendable, CaseIterable {
  case fire = 0
  case lockdown = 1

  public var name: String { self == .fire ? "fire" : "lockdown" }
}

/// Who latched the lockdown in force, when, and who they said they were (an operator's console
/// peer, a fleet command's key id): kept durably, so a restart does not lift a lockdown.
public struct LockdownLatch: Equatable, Sendable {
  public static let whoBytesMax = 32
  public static let encodedBytes = 48
  public private(set) var authority: EmergencyAuthority? = nil
  public private(set) var sinceUnixSeconds: Int64 = 0
  private var who = InlineArray<32, UInt8>(repeating: 0)
  public private(set) var whoCount = 0

  public init() {}
  public init(authority: EmergencyAuthority, who: UnsafeRawBufferPointer, sinceUnixSeconds: Int64) {
    self.authority = authority
    self.sinceUnixSeconds = sinceUnixSeconds
    whoCount = min(who.count, Self.whoBytesMax)
    for i in 0..<whoCount { self.who[i] = who[i] }
  }

  public var isActive: Bool { authority != nil }

  public func withWho<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: who) { body(UnsafeRawBufferPointer(rebasing: $0[0..<whoCount])) }
  }

  public static func == (a: LockdownLatch, b: LockdownLatch) -> Bool {
    a.authority == b.authority && a.sinceUnixSeconds == b.sinceUnixSeconds
      && a.withWho { x in b.withWho { y in x.elementsEqual(y) } }
  }

  /// The durable form: version 1, authority (0: none), who's length, 5 reserved, since (8, little
  /// endian), who (32).
  public func encode(into out: UnsafeMutableRawBufferPointer) {
    precondition(out.count >= Self.encodedBytes)
    for i in 0..<Self.encodedBytes { out[i] = 0 }
    out[0] = 1
    out[1] = authority?.rawValue ?? 0
    out[2] = UInt8(whoCount)
    out.storeBytes(of: sinceUnixSeconds.littleEndian, toByteOffset: 8, as: Int64.self)
    for i in 0..<whoCount { out[16 + i] = who[i] }
  }

  /// The latch `bytes` hold, or nil when they are not a whole, valid record (refused whole).
  public init?(decoding bytes: UnsafeRawBufferPointer) {
    guard bytes.count == Self.encodedBytes, bytes[0] == 1, Int(bytes[2]) <= Self.whoBytesMax else { return nil }
    for i in 3..<8 where bytes[i] != 0 { return nil }
    let n = Int(bytes[2])
    for i in (16 + n)..<Self.encodedBytes where bytes[i] != 0 { return nil }
    if bytes[1] == 0 {
      // No lockdown: nothing else may be set (a record is whole and exact, or refused).
      for i in 8..<16 where bytes[i] != 0 { return nil }
      guard n == 0 else { return nil }
      self.init()
      return
    }
    guard let authority = EmergencyAuthority(rawValue: bytes[1]) else { return nil }
    let since = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: Int64.self))
    self.init(authority: authority, who: UnsafeRawBufferPointer(rebasing: bytes[16..<(16 + n)]), sinceUnixSeconds: since)
  }
}

/// An emergency transition (`fire-alarm`, `lockdown`).
public typealias EmergencyTransition = Transition

/// The emergencies, free of I/O, on the monotonic clock: the fire input's release and the
/// latched lockdown.
///
/// - Fire: while the debounced fire input is active, every strike and turnstile is released
///   (the owner asks the loop); it follows the input both ways (a fire panel's reset ends it).
/// - Lockdown: latched by the lockdown input, an operator's console command or a signed fleet
///   command, and cleared only by the authority that latched it (a switch turned back, the
///   console, the fleet): a lockdown from the fleet is not lifted by a switch on site, nor one
///   latched on site by the fleet. Fire overrides lockdown (life safety).
/// Nothing allocates.
public struct EmergencyState: Sendable {
  public let settings: EmergencySettings
  public private(set) var latch: LockdownLatch
  public private(set) var fireActive = false
  /// Fire, lockdown, debounced (`EmergencyInput`'s order).
  private var inputs: DebouncedInputs
  public private(set) var now: Instant
  /// Wall seconds the owner last gave (when the input latched a lockdown).
  public var unixSeconds: Int64 = 0
  public var droppedTransitions: UInt64 { queue.dropped }
  public static var queueCapacity: Int { TransitionQueue.capacity }
  private var queue = TransitionQueue()

  /// The state with the inputs at `levels` (fire, lockdown) at `now` and `latch` from the durable
  /// file. A fire input found active at start is a fire (recorded); a lockdown input found active
  /// latches one, and a latch by the input whose switch is found off is cleared.
  public init(
    settings: EmergencySettings, now: Instant, levels: InlineArray<2, LineLevel> = .init(repeating: .inactive),
    latch: LockdownLatch = LockdownLatch(), unixSeconds: Int64 = 0
  ) {
    self.settings = settings
    self.now = now
    self.latch = latch
    self.unixSeconds = unixSeconds
    // Debounced levels start inactive: an input found active settles at once, below (recorded).
    inputs = DebouncedInputs(count: 2, levels: { _ in .inactive }, at: now)
    for i in 0..<2 { inputs.edge(i, level: levels[i], at: now) }
    if levels[EmergencyInput.fire.rawValue] == .active { settle(.fire, at: now) }
    if levels[EmergencyInput.lockdown.rawValue] == .active {
      settle(.lockdown, at: now)
    } else if latch.authority == .input {
      clearLatch(at: now)
    }
  }

  public var lockdownActive: Bool { latch.isActive }
  /// Grants need a credential marked for lockdown (never during a fire: everything is released).
  public var grantsRestricted: Bool { latch.isActive && !fireActive }
  /// The exit button releases the strike now.
  public var exitAllowed: Bool { !latch.isActive || settings.exitDuringLockdown || fireActive }

  public func level(_ input: EmergencyInput) -> LineLevel { inputs.level(input.rawValue) }

  // MARK: - Inputs

  /// A raw edge (the kernel's timestamp): a level counts once it has held `debounceMilliseconds`.
  public mutating func edge(_ input: EmergencyInput, level: LineLevel, at time: Instant) {
    advance(to: time)
    inputs.edge(input.rawValue, level: level, at: time)
    if settings.debounceMilliseconds == 0 { settle(input, at: time) }
  }

  /// Moves time on to `time`, settling inputs that have held their level long enough.
  public mutating func advance(to time: Instant) {
    while let next = nextSettle(), next.1 <= time { settle(next.0, at: next.1) }
    if time > now { now = time }
  }

  /// When an input will next settle (nil: none pending).
  public func nextDeadline(after time: Instant) -> Instant? { nextSettle().map { max($0.1, time) } }

  private func nextSettle() -> (EmergencyInput, Instant)? {
    let debounce = Int(settings.debounceMilliseconds)
    guard let next = inputs.nextSettle(debounceMilliseconds: { _ in debounce }), let input = EmergencyInput(rawValue: next.index)
    else { return nil }
    return (input, next.at)
  }

  private mutating func settle(_ input: EmergencyInput, at time: Instant) {
    _ = inputs.settle(input.rawValue)  // an edge to the level it had (a made-up one) acts again: harmless
    if time > now { now = time }
    let active = inputs.level(input.rawValue) == .active
    switch input {
    case .fire:
      guard active != fireActive else { return }
      fireActive = active
      record(.fireAlarm, code: active ? 1 : 0, at: time)
    case .lockdown:
      if active {
        _ = latch(by: .input, who: UnsafeRawBufferPointer(start: nil, count: 0), unixSeconds: unixSeconds, at: time)
      } else if latch.authority == .input {
        clearLatch(at: time)
      }
    }
  }

  // MARK: - Lockdown by command

  public enum LatchResult: Equatable, Sendable {
    case latched
    /// Already in force (by this or another authority): nothing changes.
    case alreadyLatched(EmergencyAuthority)
  }

  public enum ClearResult: Equatable, Sendable {
    case cleared
    case notLatched
    /// Latched by another authority: only it clears the lockdown.
    case heldBy(EmergencyAuthority)
  }

  /// Latches a lockdown by `authority` (`who`: the console peer or fleet key id, clipped to 32 bytes).
  public mutating func latch(
    by authority: EmergencyAuthority, who: UnsafeRawBufferPointer, unixSeconds: Int64, at time: Instant
  ) -> LatchResult {
    if let held = latch.authority { return .alreadyLatched(held) }
    latch = LockdownLatch(authority: authority, who: who, sinceUnixSeconds: unixSeconds)
    record(.lockdown, code: 1 | UInt16(authority.rawValue) << 8, at: max(time, now))
    return .latched
  }

  /// Clears the lockdown when `authority` is the one that latched it.
  public mutating func clear(by authority: EmergencyAuthority, at time: Instant) -> ClearResult {
    guard let held = latch.authority else { return .notLatched }
    guard held == authority else { return .heldBy(held) }
    clearLatch(at: time)
    return .cleared
  }

  private mutating func clearLatch(at time: Instant) {
    guard let held = latch.authority else { return }
    latch = LockdownLatch()
    record(.lockdown, code: UInt16(held.rawValue) << 8, at: max(time, now))
  }

  // MARK: - Transitions

  public mutating func takeTransition() -> EmergencyTransition? {
    queue.take()
  }

  private mutating func record(_ kind: EventKind, code: UInt16, at time: Instant) {
    queue.append(EmergencyTransition(kind: kind, code: code, at: time))
  }
}
