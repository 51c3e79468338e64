import ScanAccessLinux
import ScanCore
import ScanLoop
import ScanPlatform
import Synchronization

/// Counted passes' uses counted across the readers of a site (`credentials.uses_scope = "site"`,
/// docs/credentials.md "Visitors across a site"), over `<prefix>/site/uses` (`SiteChannel`).
///
/// It is the verifier's use store: each use is kept in this reader's used-passes file under the
/// pass's site identity (its id keyed by the site key's `.useIdentity` subkey, the same on every
/// reader, never the id itself), written and synced before the door opens as before, then sent
/// to the site (`SiteUse`, MACed under the `.useMAC` subkey). A use another reader sends is
/// checked on the link's thread and written into the same file by the loop (`service`), once:
/// each message is told apart by its MAC, and the last 256 are remembered. A pass is then judged
/// by every use the reader knows: its own, and those the site told it.
///
/// While the fleet link is down the offline rule applies (`credentials.uses_offline`): `deny`
/// refuses every counted pass (`denied-offline`), `allow` counts on what this reader knows and
/// says so in the journal for each such grant. Uses kept under the pass's own id (counted while
/// `uses_scope` was "reader") still count.
public final class SiteUses: UseStore, PollParticipant, @unchecked Sendable {
  public let readerID: String
  public let topic: String
  public let offline: UsesOffline
  private let keys: SiteKeys
  private let store: any UseStore
  private let linkState: () -> Bool

  struct Item: Sendable {
    var identity = Digest.zero
    var unixMilliseconds: Int64 = 0
    var expires: Int64 = 0
    var tag: UInt64 = 0
  }
  let channel: SiteChannel<Item>
  /// The MACs (first word) of the last messages recorded: a duplicate delivery counts once.
  private var recent = InlineArray<256, UInt64>(repeating: 0)
  private var recentNext = 0
  private var lastSentMilliseconds: Int64 = 0
  public private(set) var learned: UInt64 = 0
  public private(set) var duplicates: UInt64 = 0
  public private(set) var notKept: UInt64 = 0
  public private(set) var deniedOffline: UInt64 = 0
  public private(set) var grantedOffline: UInt64 = 0

  /// `store`: the durable used-passes file; `linkConnected`: the fleet link's state now.
  public init(
    readerID: String, topicPrefix: String, siteKey: TagKey, store: any UseStore, offline: UsesOffline,
    linkConnected: @escaping () -> Bool
  ) {
    self.readerID = readerID
    topic = topicPrefix + "/site/uses"
    self.offline = offline
    keys = SiteKeys(siteKey: siteKey, identity: .useIdentity, mac: .useMAC)
    self.store = store
    linkState = linkConnected
    channel = SiteChannel(topic: topic, noun: "site use", filler: Item())
  }

  public convenience init(link: FleetLink, siteKey: TagKey, store: any UseStore, offline: UsesOffline) {
    self.init(
      readerID: link.settings.readerID, topicPrefix: link.settings.topicPrefix, siteKey: siteKey, store: store, offline: offline,
      linkConnected: { [unowned link] in link.isConnected })
  }

  public var keyID: String { keys.keyID }

  /// The pass's site identity: HMAC-SHA-256 under the `.useIdentity` subkey of its id's SHA-256.
  public func identity(_ id: CredentialID) -> Digest {
    withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { raw in
      for k in 0..<8 {
        raw[k] = UInt8(truncatingIfNeeded: id.high >> (56 - 8 * UInt64(k)))
        raw[8 + k] = UInt8(truncatingIfNeeded: id.low >> (56 - 8 * UInt64(k)))
      }
      return keys.identity.tag(SodiumDigester().sha256(UnsafeRawBufferPointer(rebasing: raw[0..<Int(id.count)])))
    }
  }

  /// Where an identity's uses are kept in the file: its first 16 bytes.
  static func slotID(_ identity: Digest) -> CredentialID {
    var id = CredentialID()
    id.high = identity.words.0
    id.low = identity.words.1
    id.count = 16
    return id
  }

  // MARK: - The verifier's store (the loop's thread)

  public var countsNow: Bool {
    if linkState() || offline == .allow { return true }
    deniedOffline &+= 1
    return false
  }

  /// This reader's slots: its own passes by id, and the site's counts under their slot ids.
  public func forEachUse(_ body: (_ id: CredentialID, _ uses: Int, _ firstUse: Int64, _ until: Int64) -> Void) {
    store.forEachUse(body)
  }

  public func usage(_ id: CredentialID) -> (uses: Int, firstUse: Int64)? {
    let site = store.usage(Self.slotID(identity(id)))
    guard let before = store.usage(id) else { return site }
    guard let site else { return before }
    let first = before.firstUse == 0 || site.firstUse == 0 ? 0 : min(before.firstUse, site.firstUse)
    return (before.uses + site.uses, first)
  }

  public func recordUse(_ id: CredentialID, expires: Int64, now: Int64) -> Bool {
    let who = identity(id)
    guard store.recordUse(Self.slotID(who), expires: expires, now: now) else { return false }
    if !linkState() {
      grantedOffline &+= 1
      writeStandardError("scangate: credentials: fleet link down: a counted pass admitted on this reader's records alone (uses_offline)\n")
    }
    // Unix milliseconds tell this reader's uses apart: strictly increasing here.
    let ms = max(now &* 1000, lastSentMilliseconds &+ 1)
    lastSentMilliseconds = ms
    channel.send(Item(identity: who, unixMilliseconds: ms, expires: expires))
    return true
  }

  // MARK: - The loop

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? { channel.hasReceived ? now : now.adding(milliseconds: 200) }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    while let item = channel.takeReceived() { _ = learn(item) }
  }

  /// Records a use another reader made (durably); false for a duplicate or one not kept.
  func learn(_ item: Item) -> Bool {
    for i in 0..<256 where recent[i] == item.tag && item.tag != 0 {
      duplicates &+= 1
      return false
    }
    guard store.recordUse(Self.slotID(item.identity), expires: item.expires, now: item.unixMilliseconds / 1000) else {
      notKept &+= 1
      writeStandardError("scangate: credentials: a use at another reader could not be kept (the used-passes file is full or failing)\n")
      return false
    }
    recent[recentNext] = item.tag
    recentNext = (recentNext + 1) % 256
    learned &+= 1
    return true
  }

  /// STATUS's part of the credentials line.
  public var statusText: String {
    let c = channel.counts
    return "uses counted site-wide (offline rule \(offline.rawValue), link \(linkState() ? "up" : "DOWN")): "
      + "\(channel.publishedCount.load(ordering: .relaxed)) sent, \(c.waiting) waiting, \(learned) learned, "
      + "\(channel.refusedCount.load(ordering: .relaxed)) refused, \(duplicates) duplicates, \(notKept) not kept, "
      + "\(deniedOffline) refused offline, \(grantedOffline) granted offline"
  }

  // MARK: - The link's thread

  func subscribe(_ client: MQTTClient) { channel.subscribe(client) }

  func received(_ message: MQTTMessage) -> Bool {
    channel.received(message) { payload, retained, now in
      accept(payload, retained: retained, nowUnixSeconds: now).map {
        Item(identity: $0.identity, unixMilliseconds: $0.unixMilliseconds, expires: $0.expires, tag: $0.mac.words.0)
      }
    }
  }

  /// Parses and authenticates one message (fuzzable: any bytes are accepted or refused whole).
  public func accept(_ payload: [UInt8], retained: Bool, nowUnixSeconds: Int64) -> Result<SiteUse, SiteMessage.Refusal> {
    guard !retained else { return .failure(.retained) }
    switch SiteUse.parse(payload, ownReader: readerID, nowUnixSeconds: nowUnixSeconds) {
    case .success(let u):
      if let refusal = keys.verify(payload, signedCount: u.signedCount, mac: u.mac, keyID: u.keyID) { return .failure(refusal) }
      return .success(u)
    case .failure(let f): return .failure(f)
    }
  }

  /// The whole message for `use` (signed).
  public func message(_ use: SiteUse) -> [UInt8] { keys.sign(use.signedText) }

  func publishPending(_ client: MQTTClient) {
    channel.publishPending(client) { item in
      message(SiteUse(keyID: keyID, reader: readerID, unixMilliseconds: item.unixMilliseconds, expires: item.expires, identity: item.identity))
    }
  }
}
