import CLinux
import Glibc
import ScanAccessLinux
import ScanCore
import ScanPlatform
import Synchronization

/// What the turnstile needs of site-wide anti-passback: whether the fleet link is connected now
/// (the offline rule applies while it is not) and where its own passages go.
public protocol SitePassageSink: AnyObject {
  var linkConnected: Bool { get }
  /// Queues a passage this reader saw for the site (the loop's thread: no wait, no allocation).
  func send(identity: Digest, direction: PassageDirection, unixSeconds: Int64)
}

/// Site-wide anti-passback's exchange over the fleet link (docs/turnstiles.md "Site-wide
/// anti-passback", docs/fleet.md).
///
/// Out: the turnstile queues each passage it saw (`send`, on the loop); the link's thread
/// publishes them on `<prefix>/site/passages`, QoS 1, not retained, while connected (a passage
/// made while the broker is away waits in a queue of 64, the oldest dropped and counted).
/// In: the link's thread parses each message on that topic strictly (`SitePassage.parse`: a
/// bounded line, refused whole when anything is wrong, its own reader's ignored), checks its MAC
/// under the key derived from the site key, and queues it (64, the oldest dropped and counted);
/// the loop takes them in `service` and records them in the turnstile (`recordRemote`, durably).
/// The link's thread never touches the loop's state.
/// Who keeps the passages other readers report (the turnstile, durably, on the loop).
public protocol SitePassageRecorder: AnyObject {
  /// Records a passage seen at another reader; false when it could not be kept.
  func recordRemote(identity: Digest, direction: PassageDirection, unixSeconds: Int64) -> Bool
}

public final class SitePassages: SitePassageSink, PollParticipant, @unchecked Sendable {
  public let readerID: String
  public let topic: String
  private let link: FleetLink
  /// Keys the MAC: the site key's `.passageMAC` subkey (libsodium's KDF, docs/credentials.md).
  private let macKey: TagKey
  /// Keys the identities of credentials (the turnstile's keyer): the site key's
  /// `.passageIdentity` subkey, never the MAC key (no identity can be a key).
  public let identityKey: TagKey
  /// The site key's id, in every message: another id is another key.
  public let keyID: String
  /// Where received passages go (set before the loop starts; the loop's thread only).
  public weak var turnstile: (any SitePassageRecorder)? = nil

  struct Item {
    var identity = Digest.zero
    var direction = PassageDirection.entry
    var unixSeconds: Int64 = 0
  }
  /// A fixed queue: the oldest is dropped (and counted) when full.
  struct Queue {
    static let capacity = 64
    var items = InlineArray<64, Item>(repeating: Item())
    var head = 0
    var count = 0
    var dropped: UInt64 = 0
    mutating func push(_ item: Item) {
      if count == Self.capacity {
        head = (head + 1) % Self.capacity
        count -= 1
        dropped &+= 1
      }
      items[(head + count) % Self.capacity] = item
      count += 1
    }
    mutating func pop() -> Item? {
      guard count > 0 else { return nil }
      let item = items[head]
      head = (head + 1) % Self.capacity
      count -= 1
      return item
    }
  }
  private let outbox = Mutex<Queue>(Queue())
  private let inbox = Mutex<Queue>(Queue())
  public let publishedCount = Atomic<Int64>(0)
  public let acceptedCount = Atomic<Int64>(0)
  public let refusedCount = Atomic<Int64>(0)
  private var lastRefusal: SitePassage.Refusal? = nil
  private let wall = SystemWallClock()

  /// `siteKey`: the site key (`turnstile.site_key_file`); every key used here is derived from it.
  public init(link: FleetLink, siteKey: TagKey) {
    self.link = link
    readerID = link.settings.readerID
    topic = Self.topic(prefix: link.settings.topicPrefix)
    macKey = siteKey.derived(.passageMAC)
    identityKey = siteKey.derived(.passageIdentity)
    keyID = siteKey.keyID
  }

  public static func topic(prefix: String) -> String { prefix + "/site/passages" }

  /// The MAC of a message's signed text.
  func mac(_ signed: UnsafeRawBufferPointer) -> Digest { macKey.tag(SodiumDigester().sha256(signed)) }

  /// The whole message for `passage` (signed).
  public func message(_ passage: SitePassage) -> [UInt8] {
    let text = Array(passage.signedText.utf8)
    return passage.message(mac: text.withUnsafeBytes { mac($0) })
  }

  // MARK: - The loop's side

  public var linkConnected: Bool { link.isConnected }

  public func send(identity: Digest, direction: PassageDirection, unixSeconds: Int64) {
    outbox.withLock { $0.push(Item(identity: identity, direction: direction, unixSeconds: unixSeconds)) }
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    inbox.withLock { $0.count > 0 } ? now : now.adding(milliseconds: 200)
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    while let item = inbox.withLock({ $0.pop() }) {
      _ = turnstile?.recordRemote(identity: item.identity, direction: item.direction, unixSeconds: item.unixSeconds)
    }
  }

  /// Passages waiting to go out, and dropped (queue full) out and in, for STATUS.
  public var counts: (waiting: Int, droppedOut: UInt64, droppedIn: UInt64) {
    let (waiting, out) = outbox.withLock { ($0.count, $0.dropped) }
    return (waiting, out, inbox.withLock { $0.dropped })
  }

  // MARK: - The link's thread

  func subscribe(_ client: MQTTClient) { _ = try? client.subscribe(topic, qos: 1) }

  /// Takes `message` when it is on the site topic (true); a passage that passes every check is
  /// queued for the loop, anything else is refused whole and counted.
  func received(_ message: MQTTMessage) -> Bool {
    guard message.topic == topic else { return false }
    switch accept(message.payload, retained: message.retained, nowUnixSeconds: wall.unixSeconds()) {
    case .success(let p):
      inbox.withLock { $0.push(Item(identity: p.identity, direction: p.direction, unixSeconds: p.unixSeconds)) }
      acceptedCount.wrappingAdd(1, ordering: .relaxed)
    case .failure(.ownReader):
      break
    case .failure(let refusal):
      refusedCount.wrappingAdd(1, ordering: .relaxed)
      if refusal != lastRefusal {
        writeStandardError("scangate: fleet: site passage refused: \(refusal.reason)\n")
        lastRefusal = refusal
      }
    }
    return true
  }

  /// Parses and authenticates one message (fuzzable: any bytes are accepted or refused whole).
  public func accept(_ payload: [UInt8], retained: Bool, nowUnixSeconds: Int64) -> Result<SitePassage, SitePassage.Refusal> {
    guard !retained else { return .failure(.retained) }
    let passage: SitePassage
    switch SitePassage.parse(payload, ownReader: readerID, nowUnixSeconds: nowUnixSeconds) {
    case .success(let p): passage = p
    case .failure(let f): return .failure(f)
    }
    let expected = payload.withUnsafeBytes { mac(UnsafeRawBufferPointer(rebasing: $0[0..<passage.signedCount])) }
    guard expected.constantTimeEquals(passage.mac) else { return .failure(passage.keyID == keyID ? .badMAC : .otherKey) }
    return .success(passage)
  }

  /// Publishes what the loop queued (while connected).
  func publishPending(_ client: MQTTClient) {
    while let item = outbox.withLock({ $0.pop() }) {
      var p = SitePassage(keyID: keyID, reader: readerID, direction: item.direction, unixSeconds: item.unixSeconds, identity: item.identity)
      p.signedCount = 0
      do throws(MQTTError) {
        _ = try client.publish(topic: topic, message(p), qos: 1, retain: false)
        publishedCount.wrappingAdd(1, ordering: .relaxed)
      } catch {
        outbox.withLock { $0.push(item) }  // kept for the next connection
        return
      }
    }
  }
}

extension Digest {
  /// Equality that reads every word (a MAC's check).
  func constantTimeEquals(_ other: Digest) -> Bool {
    (words.0 ^ other.words.0) | (words.1 ^ other.words.1) | (words.2 ^ other.words.2) | (words.3 ^ other.words.3) == 0
  }
}
