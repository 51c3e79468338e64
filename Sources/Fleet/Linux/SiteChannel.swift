import ScanAccessLinux
import ScanCore
import ScanPlatform
import Synchronization

/// One topic the readers of a site share (site passages, counted uses), between the loop and the
/// fleet link's thread: what the loop queues goes out QoS 1, not retained, while connected (an
/// item made while the broker is away waits in a queue of 64, the oldest dropped and counted);
/// what arrives is parsed and authenticated by the caller's `accept` on the link's thread, and a
/// message that passes every check waits for the loop in another queue of 64. Neither side waits
/// for the other, and the loop's side never allocates.
final class SiteChannel<Item: Copyable & Sendable>: @unchecked Sendable {
  let topic: String
  /// How the journal names what this channel carries ("site passage", "site use").
  let noun: String

  /// A fixed queue: the oldest is dropped (and counted) when full.
  struct Queue {
    static var capacity: Int { 64 }
    var items: InlineArray<64, Item>
    var head = 0
    var count = 0
    var dropped: UInt64 = 0
    init(filler: Item) { items = InlineArray(repeating: filler) }
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
  private let outbox: Mutex<Queue>
  private let inbox: Mutex<Queue>
  let publishedCount = Atomic<Int64>(0)
  let acceptedCount = Atomic<Int64>(0)
  let refusedCount = Atomic<Int64>(0)
  private var lastRefusal: SiteMessage.Refusal? = nil
  private let wall = SystemWallClock()

  init(topic: String, noun: String, filler: Item) {
    self.topic = topic
    self.noun = noun
    outbox = Mutex(Queue(filler: filler))
    inbox = Mutex(Queue(filler: filler))
  }

  // MARK: - The loop's side

  func send(_ item: Item) { outbox.withLock { $0.push(item) } }
  func takeReceived() -> Item? { inbox.withLock { $0.pop() } }
  func takeOutgoing() -> Item? { outbox.withLock { $0.pop() } }
  var hasReceived: Bool { inbox.withLock { $0.count > 0 } }

  /// Items waiting to go out, and dropped (queue full) out and in, for STATUS.
  var counts: (waiting: Int, droppedOut: UInt64, droppedIn: UInt64) {
    let (waiting, out) = outbox.withLock { ($0.count, $0.dropped) }
    return (waiting, out, inbox.withLock { $0.dropped })
  }

  // MARK: - The link's thread

  func subscribe(_ client: MQTTClient) { _ = try? client.subscribe(topic, qos: 1) }

  /// Takes `message` when it is on this topic (true): what `accept` passes is queued for the
  /// loop, anything else is refused whole, counted, and said once per kind of refusal.
  func received(_ message: MQTTMessage, accept: ([UInt8], Bool, Int64) -> Result<Item, SiteMessage.Refusal>) -> Bool {
    guard message.topic == topic else { return false }
    switch accept(message.payload, message.retained, wall.unixSeconds()) {
    case .success(let item):
      inbox.withLock { $0.push(item) }
      acceptedCount.wrappingAdd(1, ordering: .relaxed)
    case .failure(.ownReader):
      break
    case .failure(let refusal):
      refusedCount.wrappingAdd(1, ordering: .relaxed)
      if refusal != lastRefusal {
        writeStandardError("scangate: fleet: \(noun) refused: \(refusal.reason)\n")
        lastRefusal = refusal
      }
    }
    return true
  }

  /// Publishes what the loop queued (while connected); what cannot go now waits for the next
  /// connection.
  func publishPending(_ client: MQTTClient, encode: (Item) -> [UInt8]) {
    while let item = takeOutgoing() {
      do throws(MQTTError) {
        _ = try client.publish(topic: topic, encode(item), qos: 1, retain: false)
        publishedCount.wrappingAdd(1, ordering: .relaxed)
      } catch {
        outbox.withLock { $0.push(item) }
        return
      }
    }
  }
}

/// The keys a site message needs, all derived from the site key (docs/credentials.md, "The key
/// tree"): one to key identities, one for the MAC, and the key's public id.
struct SiteKeys: @unchecked Sendable {
  let identity: TagKey
  let macKey: TagKey
  let keyID: String

  init(siteKey: TagKey, identity: KeyPurpose, mac: KeyPurpose) {
    self.identity = siteKey.derived(identity)
    macKey = siteKey.derived(mac)
    keyID = siteKey.keyID
  }

  /// The MAC of a message's signed text.
  func mac(_ signed: UnsafeRawBufferPointer) -> Digest { macKey.tag(SodiumDigester().sha256(signed)) }

  /// The message whose signed text is `text`, with its MAC.
  func sign(_ text: String) -> [UInt8] {
    let signed = Array(text.utf8)
    return Array((text + " " + SiteMessage.hex(signed.withUnsafeBytes { mac($0) })).utf8)
  }

  /// Whether `payload`'s MAC (over its first `signedCount` bytes) verifies: `.otherKey` when it
  /// names another key, `.badMAC` when it names this one.
  func verify(_ payload: [UInt8], signedCount: Int, mac presented: Digest, keyID named: String) -> SiteMessage.Refusal? {
    let expected = payload.withUnsafeBytes { mac(UnsafeRawBufferPointer(rebasing: $0[0..<signedCount])) }
    guard expected.constantTimeEquals(presented) else { return named == keyID ? .badMAC : .otherKey }
    return nil
  }
}

extension Digest {
  /// Equality that reads every word (a MAC's check).
  func constantTimeEquals(_ other: Digest) -> Bool {
    (words.0 ^ other.words.0) | (words.1 ^ other.words.1) | (words.2 ^ other.words.2) | (words.3 ^ other.words.3) == 0
  }
}
