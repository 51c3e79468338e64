import ScanAccess
import ScanBase

/// The reader's own seams: the barcode engine the pipeline drives, and where a validated pass
/// goes in panel mode. The engine is generic over `CodeDecoder` (static dispatch); the adapters
/// in ScanReaderLinux and the fakes in ScanSim conform.

/// A barcode engine that fills caller-owned fixed result slots.
public protocol CodeDecoder: ~Copyable {
  /// Decodes `view` (a frame, or a region of one) into `results` (cleared first).
  mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults)
  /// The same with explicit engine options (binarizer, the engine's own downscaling); decoders
  /// without such options ignore them.
  mutating func decode(
    _ view: LumaFrame, formats: BarcodeFormats, options: EngineOptions, into results: inout DecodeResults)
  /// The engine's counters, when it keeps any.
  var engineStats: DecoderStats? { get }
}

extension CodeDecoder where Self: ~Copyable {
  public var engineStats: DecoderStats? { nil }
  public mutating func decode(
    _ view: LumaFrame, formats: BarcodeFormats, options: EngineOptions, into results: inout DecodeResults
  ) {
    decode(view, formats: formats, into: &results)
  }
}

/// A decoder's counters: calls, and how its allocation arena is used.
public struct DecoderStats: Equatable, Sendable {
  public var decodes: UInt64
  /// Allocations served from the arena.
  public var arenaAllocations: UInt64
  /// Allocations that did not fit and went to malloc (each one breaks the fixed-memory promise).
  public var arenaOverflows: UInt64
  /// The most arena bytes one decode used.
  public var arenaHighWaterBytes: Int
  /// Bytes kept for engine objects that outlive a decode (its lazily created statics).
  public var arenaPinnedBytes: Int
  public var arenaCapacityBytes: Int
  /// Decode calls that ended in a caught engine exception.
  public var engineErrors: UInt64
  public init(
    decodes: UInt64, arenaAllocations: UInt64, arenaOverflows: UInt64, arenaHighWaterBytes: Int,
    arenaPinnedBytes: Int, arenaCapacityBytes: Int, engineErrors: UInt64
  ) {
    self.decodes = decodes; self.arenaAllocations = arenaAllocations; self.arenaOverflows = arenaOverflows
    self.arenaHighWaterBytes = arenaHighWaterBytes; self.arenaPinnedBytes = arenaPinnedBytes
    self.arenaCapacityBytes = arenaCapacityBytes; self.engineErrors = engineErrors
  }
}

/// Turnstile mode: a grant is one person's passage in one direction. The engine asks the gate
/// instead of pulsing its relay; the gate checks anti-passback, makes what protects the decision
/// durable, and unlocks one passage.
public protocol PassageGate: AnyObject {
  /// A granted decision for `identity` (`AccessPolicies.identity`, unkeyed: the gate keys it
  /// before it keeps or shows it; nil when the decision names nobody): `.granted` once one passage is unlocked, or the verdict that
  /// refuses it (`.deniedPassback`; `.deniedUnavailable` when its state could not be made
  /// durable or the direction's queue is full). `label` and `tag` go on its passage events.
  func admit(identity: Digest?, label: UnsafeRawBufferPointer, tag: Digest, at now: Instant) -> Verdict
  /// An operator's OPEN (console, fleet): one passage in the current direction, no anti-passback;
  /// false when the direction's queue is full.
  func openOnce(at now: Instant) -> Bool
}

/// A second factor after the pass (a PIN on a keypad): asked before a grant takes effect.
public protocol SecondFactor: AnyObject {
  /// A granted decision for the credential whose payload's SHA-256 is `digest` (inside the
  /// reader only), whose wrong PINs count under `tag` (keyed: the payload's tag, or a signed
  /// pass's holder's, so that a rotating pass's next code does not start a new count), with PIN
  /// verifier `pin`; `hasPin`: it has one (a signed pass's that does not open is `hasPin` with no
  /// `pin`). Returns nil when no second factor is needed (the grant stands), `.pinRequired` when
  /// an entry began — its outcome comes back as `ScanEngine.completeSecondFactor(id:verdict:)` —
  /// or the verdict that refuses it (`.deniedPin`: none where one is required, a verifier that
  /// cannot be read, or no keypad; `.deniedPinLocked`).
  func begin(id: UInt64, pin: PinVerifier?, hasPin: Bool, digest: Digest, tag: Digest, at now: Instant) -> Verdict?
}

/// A grant waiting for its second factor: the decision as it will be logged.
struct PendingGrant {
  var id: UInt64
  var event: ScanEvent
  var decision: AccessDecision
  var digest: Digest
}

/// Where a validated pass goes in panel mode: the engine asks it instead of driving its relay.
/// What a grant does, chosen once at startup (`ScanEngine.outcome`; the configuration refuses a
/// turnstile in panel mode): the door's strike pulsed, one turnstile passage unlocked, or the
/// card forwarded to an access panel that decides and drives its own strike.
public enum GrantOutcome {
  /// The relay pulses the strike (a door, or a reader with no door configured).
  case strike
  /// The gate admits the grant (anti-passback, durable first) and unlocks one passage; the relay
  /// is not driven.
  case turnstile(any PassageGate)
  /// The granted pass's card number goes to the panel; the relay is not driven.
  case panel(any PanelForwarder)
}

public protocol PanelForwarder: AnyObject {
  /// Forwards a granted decision's card to the panel; false when it could not (no card number
  /// on the entry, queue full, no panel link): the reader then treats the pass as denied.
  func forward(_ decision: AccessDecision) -> Bool
  /// The link as STATUS shows it (`panel ...`).
  func statusLine(now: Instant) -> String
}
