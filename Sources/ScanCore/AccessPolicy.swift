/// Which rule a decision came from.
public enum DecisionSource: UInt8, Sendable {
  case none = 0
  case allowList = 1
}

/// A decision on one payload: the verdict, which rule decided, and (for the allow-list) the
/// entry that matched, for its label.
public struct AccessDecision: Equatable, Sendable {
  public var verdict: Verdict
  public var source: DecisionSource
  public var entry: Int?
  /// The card number a panel is sent for this pass (allow-list `card=`, or a signed
  /// credential's card claim), if it has one.
  public var card: CardNumber?
  public init(verdict: Verdict, source: DecisionSource, entry: Int? = nil, card: CardNumber? = nil) {
    self.verdict = verdict
    self.source = source
    self.entry = entry
    self.card = card
  }
  public static let unknown = AccessDecision(verdict: .deniedUnknown, source: .none)
}

/// The decision seam: payload (and its digest), wall time → decision. Every place that decides
/// (a scanned code, the console's CHECK, a snapshot's outlines) asks a policy, never a list
/// directly, so signed credentials, schedules and panel forwarding slot in here.
public protocol AccessPolicy: ~Copyable {
  func decide(_ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds: Int64) -> AccessDecision
}

extension AllowList: AccessPolicy {
  public func decide(_ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds now: Int64) -> AccessDecision {
    let (verdict, entry) = decide(digest, nowUnixSeconds: now)
    return AccessDecision(verdict: verdict, source: entry == nil ? .none : .allowList, entry: entry, card: entry.flatMap { card($0) })
  }
}

/// The reader's policies in the order they are asked: today the allow-list alone. A payload
/// one policy does not know falls through to the next; the first that knows it decides.
public struct AccessPolicies: AccessPolicy, ~Copyable {
  public var allowList: AllowList

  public init(allowList: consuming AllowList) { self.allowList = allowList }

  public func decide(_ payload: UnsafeRawBufferPointer, digest: Digest, nowUnixSeconds now: Int64) -> AccessDecision {
    let d = allowList.decide(payload, digest: digest, nowUnixSeconds: now)
    if d.source != .none { return d }
    return .unknown
  }
}
