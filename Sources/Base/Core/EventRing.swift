import Synchronization

/// What an event records.
public enum EventKind: UInt8, Sendable {
  case decision = 1
  case left = 2
  case fault = 3
  case state = 4
  case command = 5
  case authFailure = 6
  case manualOpen = 7
  /// A GPIO line changed level: `code` is `EdgeCode` (line and level).
  case edge = 8
  /// The audit log had to drop events (ring overrun, or its bounded queue while the disk was
  /// failing). Written by the log writer, never put in the ring; the record's code is the count.
  case recordsLost = 9
  /// The door (DoorMachine): the strike released (`code`: `UnlockReason`), the door opened after
  /// an unlock, closed (`code`: seconds it was open), held open (`code`: the limit in seconds),
  /// opened without an unlock, the strike locked again, the exit button pressed, the tamper
  /// input changed (`code`: 1 active, 0 restored).
  case doorUnlocked = 20
  case doorOpened = 21
  case doorClosed = 22
  case doorHeldOpen = 23
  case doorForced = 24
  case doorLocked = 25
  case exitRequest = 26
  case tamper = 27
  /// A schedule's unlock window holds the strike released (`code` 1), stopped holding it (0),
  /// or stands but is held off because the clock is not synchronised (2).
  case unlockWindow = 28
  /// The panel link (OSDP): `code` 1 a panel polls the reader, 0 it stopped polling.
  case panelLink = 30
  /// OSDP Secure Channel: `code` 1 up, 2 up with the install-mode default key, 0 down.
  case panelSecure = 31
  /// A validated pass forwarded to the panel as a card read: `code` is the bit count, the
  /// payload the format's name (never the card number).
  case panelCard = 32
  /// The panel commanded the reader: `code` is the OSDP command (0x69 LED, 0x6A buzzer,
  /// 0x68 output, 0x6E COMSET).
  case panelCommand = 33
  /// A panel installed a new Secure Channel key: `code` 1 stored in the key file, 0 not stored.
  case panelKey = 34
  /// The turnstile (TurnstileMachine; `code`: `PassageCode`, a direction and why): a direction
  /// unlocked for one passage, a passage completed (the rotation sensor), a grant nobody used
  /// within the passage timeout, a rotation without a grant or the alarm input (forced), the
  /// direction locked again, a credential's anti-passback forgiven, occupancy reset (`code`: the
  /// count before).
  case turnstileUnlocked = 40
  case passage = 41
  case grantedNotPassed = 42
  case turnstileForced = 43
  case turnstileLocked = 44
  case passbackForgiven = 45
  case occupancyReset = 46
  /// Emergencies (EmergencyState): the fire panel's input active (`code` 1) or cleared (0); a
  /// lockdown latched (`code` 1) or cleared (0), `EmergencyAuthority` in the high byte, who in the
  /// payload.
  case fireAlarm = 50
  case lockdown = 51

  /// Every kind, for parsing the stable names back.
  public static let all: [EventKind] =
    [
      .decision, .left, .fault, .state, .command, .authFailure, .manualOpen, .edge, .recordsLost,
      .panelLink, .panelSecure, .panelCard, .panelCommand, .panelKey,
    ] + doorKinds + passageKinds
  /// The turnstile's and the emergencies' kinds (raw values 40–59).
  public static let passageKinds: [EventKind] = [
    .turnstileUnlocked, .passage, .grantedNotPassed, .turnstileForced, .turnstileLocked, .passbackForgiven,
    .occupancyReset, .fireAlarm, .lockdown,
  ]
  /// The door's kinds (raw values 20–29).
  public static let doorKinds: [EventKind] = [
    .doorUnlocked, .doorOpened, .doorClosed, .doorHeldOpen, .doorForced, .doorLocked, .exitRequest, .tamper, .unlockWindow,
  ]

  /// The kind whose `name` is `name` (the audit log's stored text), or nil.
  public init?(name: some StringProtocol) {
    guard let kind = Self.all.first(where: { $0.name == name }) else { return nil }
    self = kind
  }

  /// The stable text (console, journal, and the audit database's `kind` column).
  public var name: String {
    switch self {
    case .decision: "decision"
    case .left: "left"
    case .fault: "fault"
    case .state: "state"
    case .command: "command"
    case .authFailure: "auth-failure"
    case .manualOpen: "manual-open"
    case .edge: "edge"
    case .recordsLost: "records-lost"
    case .doorUnlocked: "door-unlocked"
    case .doorOpened: "door-opened"
    case .doorClosed: "door-closed"
    case .doorHeldOpen: "door-held-open"
    case .doorForced: "door-forced"
    case .doorLocked: "door-locked"
    case .exitRequest: "exit-request"
    case .tamper: "tamper"
    case .unlockWindow: "unlock-window"
    case .panelLink: "panel-link"
    case .panelSecure: "panel-secure"
    case .panelCard: "panel-card"
    case .panelCommand: "panel-command"
    case .panelKey: "panel-key"
    case .turnstileUnlocked: "turnstile-unlocked"
    case .passage: "passage"
    case .grantedNotPassed: "granted-not-passed"
    case .turnstileForced: "turnstile-forced"
    case .turnstileLocked: "turnstile-locked"
    case .passbackForgiven: "passback-forgiven"
    case .occupancyReset: "occupancy-reset"
    case .fireAlarm: "fire-alarm"
    case .lockdown: "lockdown"
    }
  }
}

/// Which line an edge event is about, and its new level.
public enum EdgeCode {
  public static let relay: UInt16 = 0x10
  public static let buzzer: UInt16 = 0x20
  /// The door's alarm/LED line.
  public static let alarm: UInt16 = 0x30
  /// The door's second relay (alarm output to a panel).
  public static let auxRelay: UInt16 = 0x40
  public static func code(line: UInt16, level: LineLevel) -> UInt16 { line | UInt16(level.rawValue) }
  /// The line's name for `code`.
  public static func lineName(_ code: UInt16) -> StaticString {
    switch code & 0xF0 {
    case relay: "relay"
    case alarm: "alarm"
    case auxRelay: "aux-relay"
    default: "buzzer"
    }
  }
  public static func describe(_ code: UInt16) -> String {
    "\(lineName(code))" + (code & 1 == 1 ? " active" : " inactive")
  }
}

/// One fixed-size event record: written by the loop into the ring, read by the console and
/// the log writer. Payload and label are clipped copies; the keyed tag identifies the payload.
public struct ScanEvent: Sendable {
  public static let payloadBytesMax = 64
  public static let labelBytesMax = LabelLimits.bytesMax

  public var sequence: UInt64 = 0
  public var kind: EventKind = .state
  public var monotonic = Instant(nanoseconds: 0)
  public var wallNanoseconds: Int64 = 0
  public var verdict: Verdict = .deniedUnknown
  public var format: BarcodeFormats = []
  public var variant: ImageVariant = .upright
  /// The payload's keyed tag (`PayloadTagger`; zero: none), never its SHA-256.
  public var tag = Digest.zero
  /// Frame capture → decode done, decision made, relay edge driven (µs; 0 when not applicable).
  public var decodeMicroseconds: UInt32 = 0
  public var decideMicroseconds: UInt32 = 0
  public var edgeMicroseconds: UInt32 = 0
  /// Fault, state or command code; meaning depends on `kind`.
  public var code: UInt16 = 0
  public var payloadCount: UInt16 = 0
  public var payloadTruncated = false
  /// Inline payload storage, `payloadBytesMax` bytes (checked in EventRing.init).
  public typealias PayloadStorage = InlineArray<64, UInt8>
  public var payload: PayloadStorage = .init(repeating: 0)
  public var labelCount: UInt8 = 0
  public var label: LabelLimits.Storage = .init(repeating: 0)

  public init() {}

  /// An event of `kind` with `code` that happened at `monotonic`, the wall clock then `wall`.
  public init(_ kind: EventKind, code: UInt16 = 0, at monotonic: Instant, wall: Int64) {
    self.kind = kind
    self.code = code
    self.monotonic = monotonic
    wallNanoseconds = wall
  }

  /// An event that happened at `at`, seen at `now` when the wall clock read `wallNow`: its wall
  /// time is dated back by as long (a line's transition, a guard's trip, taken after the fact).
  public init(_ kind: EventKind, code: UInt16 = 0, at: Instant, seenAt now: Instant, wallNow: Int64) {
    self.init(kind, code: code, at: at, wall: wallNow &- Int64(clamping: now.nanoseconds &- min(now.nanoseconds, at.nanoseconds)))
  }

  /// Copies (a prefix of) `bytes` in as the payload.
  public mutating func setPayload(_ bytes: UnsafeRawBufferPointer) {
    let n = min(bytes.count, Self.payloadBytesMax)
    for i in 0..<n { payload[i] = bytes[i] }
    payloadCount = UInt16(n)
    payloadTruncated = bytes.count > n
  }

  /// Copies (a prefix of) `bytes` in as the label.
  public mutating func setLabel(_ bytes: UnsafeRawBufferPointer) {
    let n = min(bytes.count, Self.labelBytesMax)
    for i in 0..<n { label[i] = bytes[i] }
    labelCount = UInt8(n)
  }

  /// Lends the payload bytes.
  public func withPayload<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: payload) { body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(payloadCount)])) }
  }
  /// Lends the label bytes.
  public func withLabel<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: label) { body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(labelCount)])) }
  }
}

/// The loop's fixed event ring: one producer (the loop), any number of readers that each keep
/// their own cursor (the console's LAST and WATCH, the log writer on its own thread).
///
/// Storage is allocated once. The producer writes a slot, then publishes the new head with
/// release ordering; a reader copies a slot and then checks that the producer has not lapped
/// it meanwhile, so a reader that falls a whole ring behind sees `.overwritten`, never a torn record.
public final class EventRing: @unchecked Sendable {
  public let capacity: Int
  private let mask: Int
  private let slots: UnsafeMutableBufferPointer<ScanEvent>
  private let published = Atomic<UInt64>(0)

  /// Capacity is rounded up to a power of two.
  public static func roundedCapacity(_ capacity: Int) -> Int {
    var c = 2
    while c < capacity { c <<= 1 }
    return c
  }

  /// Bytes a ring of `capacity` events allocates (after rounding).
  public static func bytes(capacity: Int) -> Int { roundedCapacity(capacity) * MemoryLayout<ScanEvent>.stride }

  public init(capacity: Int) {
    precondition(capacity >= 2 && capacity <= 1 << 20)
    LabelLimits.checkStorage()
    precondition(ScanEvent.PayloadStorage.count == ScanEvent.payloadBytesMax, "ScanEvent.payload's size and payloadBytesMax disagree")
    let c = Self.roundedCapacity(capacity)
    self.capacity = c
    mask = c - 1
    slots = .allocate(capacity: c)
    slots.initialize(repeating: ScanEvent())
  }

  deinit { slots.deallocate() }

  /// Sequence number the next event will get (events are numbered from 1).
  public var nextSequence: UInt64 { published.load(ordering: .acquiring) + 1 }

  /// The newest published sequence (0 when empty).
  public var lastSequence: UInt64 { published.load(ordering: .acquiring) }

  /// Appends `event`, assigning its sequence number; returns that number. Producer only.
  @discardableResult
  public func append(_ event: ScanEvent) -> UInt64 {
    let sequence = published.load(ordering: .relaxed) + 1
    var e = event
    e.sequence = sequence
    // The previous publish must be visible before this slot is overwritten (a reader's
    // re-check relies on it; ARM may otherwise reorder the stores).
    atomicMemoryFence(ordering: .releasing)
    slots[Int(sequence & UInt64(mask))] = e
    published.store(sequence, ordering: .releasing)
    return sequence
  }

  /// The outcome of reading one sequence number.
  public enum Read {
    case event(ScanEvent)
    case notYet
    case overwritten
  }

  /// Reads event `sequence`.
  public func read(_ sequence: UInt64) -> Read {
    let head = published.load(ordering: .acquiring)
    if sequence == 0 || sequence > head { return .notYet }
    if head - sequence >= UInt64(capacity - 1) { return .overwritten }
    let e = slots[Int(sequence & UInt64(mask))]
    // The copy above must complete before the re-check below reads the head (seqlock rule);
    // an acquiring load alone does not keep earlier plain loads before it.
    atomicMemoryFence(ordering: .acquiring)
    let after = published.load(ordering: .relaxed)
    if after - sequence >= UInt64(capacity - 1) || e.sequence != sequence { return .overwritten }
    return .event(e)
  }
}

/// A reader's position in the event ring: every reader (WATCH, the log writer, the journal)
/// walks the ring with one of these, so "the reader fell a whole ring behind" is handled in one
/// place: it is told how many events it lost and resumes at the oldest event still held.
public struct EventCursor: Sendable {
  /// What the reader gets for each step.
  public enum Item {
    case event(ScanEvent)
    /// This many events were overwritten before they were read.
    case overwritten(count: UInt64)
  }

  /// The next sequence number to read.
  public private(set) var next: UInt64

  public init(next: UInt64) { self.next = max(1, next) }

  /// Reads from `next` through `last` (or the newest event), calling `body` for each item.
  public mutating func read(_ ring: EventRing, upTo last: UInt64 = .max, _ body: (Item) -> Void) {
    var steps = 0
    while next <= min(last, ring.lastSequence) && steps <= ring.capacity {
      steps += 1
      switch ring.read(next) {
      case .event(let e):
        body(.event(e))
        next += 1
      case .overwritten:
        let head = ring.lastSequence
        let oldest = head > UInt64(ring.capacity) ? head - UInt64(ring.capacity) + 2 : next + 1
        let resume = max(next + 1, oldest)
        body(.overwritten(count: resume - next))
        next = resume
      case .notYet:
        return
      }
    }
  }
}
