import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

@testable import ScanFleetLinux

/// Counted passes across a site (issue 43, "Visitors across a site"): a pass with `--uses 2`
/// opens twice in all at two readers that share a site key, its uses moved between them as the
/// fleet link moves them (the signed message, parsed and checked by the other reader); a
/// duplicate delivery counts once; the offline rule; the uses survive a restart.
@Suite(.serialized) struct SiteUsesTests {
  let site = CredentialSite()
  static func key(_ byte: UInt8) -> TagKey { [UInt8](repeating: byte, count: 32).withUnsafeBytes { TagKey(bytes: $0, persistent: false) } }

  final class Reader {
    let exchange: SiteUses
    let verifier: CredentialVerifier
    var connected = true
    init(_ name: String, site: CredentialSite, key: TagKey = SiteUsesTests.key(7), offline: UsesOffline = .deny) throws {
      verifier = site.verifier()
      let file = try UsedCredentialFile(path: site.stateDirectory + "/used-\(name)", capacity: 16)
      var link: (() -> Bool)? = nil
      exchange = SiteUses(
        readerID: name, topicPrefix: "scangate", siteKey: key, store: file, offline: offline, linkConnected: { link!() })
      verifier.useStore = exchange
      link = { [unowned self] in self.connected }
    }
    /// What this reader sent since the last call, as the broker carries it.
    func outgoing() -> [[UInt8]] {
      var out: [[UInt8]] = []
      while let item = exchange.channel.takeOutgoing() {
        out.append(
          exchange.message(
            SiteUse(
              keyID: exchange.keyID, reader: exchange.readerID, unixMilliseconds: item.unixMilliseconds, expires: item.expires,
              identity: item.identity)))
      }
      return out
    }
    /// Delivers `messages` as the fleet link's thread does, then lets the loop record them.
    func deliver(_ messages: [[UInt8]]) {
      for m in messages { #expect(exchange.received(MQTTMessage(topic: "scangate/site/uses", payload: m, qos: 1, retained: false))) }
      while let item = exchange.channel.takeReceived() { _ = exchange.learn(item) }
    }
  }

  func guest(uses: Int, id: [UInt8] = [0x67, 1]) throws -> String {
    var c = site.claims("guest", id: id)
    c.uses = uses
    return try site.issue(c).staticText
  }

  @Test("--uses 2 at two readers: two grants in all, then denied-used at both, after a restart too")
  func twoReaders() throws {
    let north = try Reader("north", site: site), south = try Reader("south", site: site)
    let pass = try guest(uses: 2)
    #expect(decide(north.verifier, pass, at: site.now) == .granted)
    let first = north.outgoing()
    #expect(first.count == 1)
    let text = String(decoding: first[0], as: UTF8.self)
    #expect(text.hasPrefix("scangate-use 1 \(north.exchange.keyID) north \(site.now * 1000) "), "\(text)")
    #expect(!text.contains("6701"), "the pass's id is never sent, only its keyed identity")
    south.deliver(first)
    #expect(south.exchange.learned == 1)
    #expect(decide(south.verifier, pass, at: site.now + 5) == .granted)
    #expect(decide(south.verifier, pass, at: site.now + 6) == .deniedUsed)
    north.deliver(south.outgoing())
    #expect(decide(north.verifier, pass, at: site.now + 7) == .deniedUsed)
    // Per reader, the same pass would have opened twice at each: the count is the site's.
    let restarted = try Reader("south", site: site)
    #expect(decide(restarted.verifier, pass, at: site.now + 8) == .deniedUsed, "the learned use was kept durably")
    // Another pass is counted on its own.
    #expect(decide(restarted.verifier, try guest(uses: 1, id: [0x67, 2]), at: site.now + 9) == .granted)
  }

  @Test("a use delivered twice (QoS 1 may) counts once; the broker's retained copy, another key, a changed byte: refused")
  func duplicatesAndForgeries() throws {
    let north = try Reader("north", site: site), south = try Reader("south", site: site)
    let pass = try guest(uses: 2)
    #expect(decide(north.verifier, pass, at: site.now) == .granted)
    let sent = north.outgoing()
    south.deliver(sent + sent)
    #expect(south.exchange.learned == 1 && south.exchange.duplicates == 1)
    #expect(decide(south.verifier, pass, at: site.now + 1) == .granted, "one use left, not none")
    let bytes = sent[0]
    #expect(south.exchange.accept(bytes, retained: true, nowUnixSeconds: site.now) == .failure(.retained))
    let other = try Reader("east", site: site, key: Self.key(8))
    #expect(other.exchange.accept(bytes, retained: false, nowUnixSeconds: site.now) == .failure(.otherKey))
    var flipped = bytes
    let at = Array("scangate-use 1 \(north.exchange.keyID) north \(site.now * 1000)".utf8).count - 1
    flipped[at] = flipped[at] == UInt8(ascii: "1") ? UInt8(ascii: "2") : UInt8(ascii: "1")  // another millisecond
    #expect(south.exchange.accept(flipped, retained: false, nowUnixSeconds: site.now) == .failure(.badMAC))
    #expect(north.exchange.accept(bytes, retained: false, nowUnixSeconds: site.now) == .failure(.ownReader))
    #expect(south.exchange.accept(bytes, retained: false, nowUnixSeconds: site.now - 400) == .failure(.future))
    #expect(SiteUse.parse(Array("scangate-passage 2 x".utf8), ownReader: "a", nowUnixSeconds: 0) == .failure(.malformed))
  }

  @Test("the link down: \"deny\" refuses a counted pass (denied-offline) and spends nothing; \"allow\" counts locally and says so")
  func offline() throws {
    let deny = try Reader("deny", site: site, offline: .deny)
    deny.connected = false
    let pass = try guest(uses: 1)
    #expect(decide(deny.verifier, pass, at: site.now) == .deniedOffline)
    #expect(deny.outgoing().isEmpty && deny.exchange.deniedOffline == 1)
    deny.connected = true
    #expect(decide(deny.verifier, pass, at: site.now + 1) == .granted, "nothing was spent while refused")
    let allow = try Reader("allow", site: site, offline: .allow)
    allow.connected = false
    #expect(decide(allow.verifier, pass, at: site.now + 2) == .granted)
    #expect(allow.exchange.grantedOffline == 1)
    #expect(allow.outgoing().count == 1, "sent when the link is back")
    #expect(decide(allow.verifier, pass, at: site.now + 3) == .deniedUsed)
    // A pass that counts nothing is not touched by the rule.
    #expect(decide(deny.verifier, try site.issue(site.claims("staff", id: [0x70])).staticText, at: site.now + 4) == .granted)
  }

  @Test("uses counted per reader before the switch to \"site\" still count")
  func earlierRecords() throws {
    let path = site.stateDirectory + "/used-switch"
    let pass = try guest(uses: 2)
    do {
      let v = site.verifier()
      v.useStore = try UsedCredentialFile(path: path, capacity: 16)
      #expect(decide(v, pass, at: site.now) == .granted)
    }
    let v = site.verifier()
    v.useStore = SiteUses(
      readerID: "north", topicPrefix: "scangate", siteKey: Self.key(7), store: try UsedCredentialFile(path: path, capacity: 16),
      offline: .deny, linkConnected: { true })
    #expect(decide(v, pass, at: site.now + 1) == .granted)
    #expect(decide(v, pass, at: site.now + 2) == .deniedUsed)
  }
}
