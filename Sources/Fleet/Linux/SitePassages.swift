import ScanAccessLinux
import ScanCore
import ScanLoop
import ScanPlatform

/// What the turnstile needs of site-wide anti-passback: whether the fleet link is connected now
/// (the offline rule applies while it is not) and where its own passages go.
public protocol SitePassageSink: AnyObject {
  var linkConnected: Bool { get }
  /// Queues a passage this reader saw for the site (the loop's thread: no wait, no allocation).
  func send(identity: Digest, direction: PassageDirection, unixSeconds: Int64)
}

/// Who keeps the passages other readers report (the turnstile, durably, on the loop).
public protocol SitePassageRecorder: AnyObject {
  /// Records a passage seen at another reader; false when it could not be kept.
  func recordRemote(identity: Digest, direction: PassageDirection, unixSeconds: Int64) -> Bool
}

/// Site-wide anti-passback's exchange over the fleet link (docs/turnstiles.md "Site-wide
/// anti-passback", docs/fleet.md), on `<prefix>/site/passages` (`SiteChannel`).
///
/// Out: the turnstile queues each passage it saw (`send`, on the loop); the link's thread
/// publishes them. In: the link's thread parses each message strictly (`SitePassage.parse`),
/// checks its MAC under the key derived from the site key and queues it; the loop takes them in
/// `service` and records them in the turnstile (`recordRemote`, durably). The link's thread
/// never touches the loop's state.
public final class SitePassages: SitePassageSink, PollParticipant, @unchecked Sendable {
  public let readerID: String
  public let topic: String
  private let link: FleetLink
  private let keys: SiteKeys
  /// Keys the identities of credentials (the turnstile's keyer): the site key's
  /// `.passageIdentity` subkey, never the MAC key (no identity can be a key).
  public var identityKey: TagKey { keys.identity }
  /// The site key's id, in every message: another id is another key.
  public var keyID: String { keys.keyID }
  /// Where received passages go (set before the loop starts; the loop's thread only).
  public weak var turnstile: (any SitePassageRecorder)? = nil

  struct Item: Sendable {
    var identity = Digest.zero
    var direction = PassageDirection.entry
    var unixSeconds: Int64 = 0
  }
  let channel: SiteChannel<Item>

  /// `siteKey`: the site key; every key used here is derived from it.
  public init(link: FleetLink, siteKey: TagKey) {
    self.link = link
    readerID = link.settings.readerID
    topic = Self.topic(prefix: link.settings.topicPrefix)
    keys = SiteKeys(siteKey: siteKey, identity: .passageIdentity, mac: .passageMAC)
    channel = SiteChannel(topic: topic, noun: "site passage", filler: Item())
  }

  public static func topic(prefix: String) -> String { prefix + "/site/passages" }

  /// The whole message for `passage` (signed).
  public func message(_ passage: SitePassage) -> [UInt8] { keys.sign(passage.signedText) }

  // MARK: - The loop's side

  public var linkConnected: Bool { link.isConnected }

  public func send(identity: Digest, direction: PassageDirection, unixSeconds: Int64) {
    channel.send(Item(identity: identity, direction: direction, unixSeconds: unixSeconds))
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? { channel.hasReceived ? now : now.adding(milliseconds: 200) }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    while let item = channel.takeReceived() {
      _ = turnstile?.recordRemote(identity: item.identity, direction: item.direction, unixSeconds: item.unixSeconds)
    }
  }

  /// Passages waiting to go out, and dropped (queue full) out and in, for STATUS.
  public var counts: (waiting: Int, droppedOut: UInt64, droppedIn: UInt64) { channel.counts }

  // MARK: - The link's thread

  func subscribe(_ client: MQTTClient) { channel.subscribe(client) }

  func received(_ message: MQTTMessage) -> Bool {
    channel.received(message) { payload, retained, now in
      accept(payload, retained: retained, nowUnixSeconds: now).map { Item(identity: $0.identity, direction: $0.direction, unixSeconds: $0.unixSeconds) }
    }
  }

  /// Parses and authenticates one message (fuzzable: any bytes are accepted or refused whole).
  public func accept(_ payload: [UInt8], retained: Bool, nowUnixSeconds: Int64) -> Result<SitePassage, SitePassage.Refusal> {
    guard !retained else { return .failure(.retained) }
    switch SitePassage.parse(payload, ownReader: readerID, nowUnixSeconds: nowUnixSeconds) {
    case .success(let p):
      if let refusal = keys.verify(payload, signedCount: p.signedCount, mac: p.mac, keyID: p.keyID) { return .failure(refusal) }
      return .success(p)
    case .failure(let f): return .failure(f)
    }
  }

  /// Publishes what the loop queued (while connected).
  func publishPending(_ client: MQTTClient) {
    channel.publishPending(client) { item in
      message(SitePassage(keyID: keyID, reader: readerID, direction: item.direction, unixSeconds: item.unixSeconds, identity: item.identity))
    }
  }
}
