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
    }
  }
}

/// Which line an edge event is about, and its new level.
public enum EdgeCode {
  public static let relay: UInt16 = 0x10
  public static let buzzer: UInt16 = 0x20
  public static func code(line: UInt16, level: LineLevel) -> UInt16 { line | UInt16(level.rawValue) }
  public static func describe(_ code: UInt16) -> String {
    (code & 0xF0 == relay ? "relay" : "buzzer") + (code & 1 == 1 ? " active" : " inactive")
  }
}

/// One fixed-size event record: written by the loop into the ring, read by the console and
/// the log writer. Payload and label are clipped copies; the digest identifies the payload.
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
  public var digest = Digest.zero
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
  public init(capacity: Int) {
    precondition(capacity >= 2 && capacity <= 1 << 20)
    LabelLimits.checkStorage()
    precondition(ScanEvent.PayloadStorage.count == ScanEvent.payloadBytesMax, "ScanEvent.payload's size and payloadBytesMax disagree")
    var c = 2
    while c < capacity { c <<= 1 }
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
    let after = published.load(ordering: .acquiring)
    if after - sequence >= UInt64(capacity - 1) || e.sequence != sequence { return .overwritten }
    return .event(e)
  }
}
