import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanSim
import ScanTestSupport
import Testing

/// Site-wide anti-passback on the Linux side: messages authenticated under the site key (another
/// key, a changed byte, a retained copy refused), and the turnstile's offline rule and remote
/// records (on the manual clock, the link's state from a fake).
@Suite(.serialized) struct SitePassagesTests {
  static func key(_ byte: UInt8) -> TagKey { [UInt8](repeating: byte, count: 32).withUnsafeBytes { TagKey(bytes: $0, persistent: false) } }
  static func exchange(_ reader: String, key: TagKey = key(7)) -> SitePassages {
    var s = FleetSettings()
    s.readerID = reader
    return SitePassages(link: FleetLink(settings: s, logPath: "", auditLog: nil), siteKey: key)
  }
  static let who = Digest(words: (1, 2, 3, 4))

  @Test("a message signed under the site key is accepted by another reader; another key, a changed byte, retained: refused")
  func authenticated() throws {
    let north = Self.exchange("gate-north"), south = Self.exchange("gate-south")
    #expect(north.topic == "scangate/site/passages")
    #expect(north.keyID == south.keyID && north.keyID.count == 16)
    let bytes = north.message(SitePassage(keyID: north.keyID, reader: "gate-north", direction: .entry, unixSeconds: 1_700_000_000, identity: Self.who))
    let p = try south.accept(bytes, retained: false, nowUnixSeconds: 1_700_000_001).get()
    #expect(p.reader == "gate-north" && p.direction == .entry && p.identity == Self.who && p.unixSeconds == 1_700_000_000)
    #expect(north.accept(bytes, retained: false, nowUnixSeconds: 1_700_000_001) == .failure(.ownReader))
    let other = Self.exchange("gate-east", key: Self.key(8))
    #expect(other.accept(bytes, retained: false, nowUnixSeconds: 1_700_000_001) == .failure(.otherKey), "another site key: said so by its id")
    var flipped = bytes
    let at = Array("scangate-passage 2 \(north.keyID) gate-north ".utf8).count
    flipped.replaceSubrange(at..<at + 5, with: Array("exit ".utf8))
    flipped.remove(at: at + 4)  // "entry" → "exit": one byte shorter
    #expect(String(decoding: flipped, as: UTF8.self).contains(" exit 1700000000 "))
    #expect(south.accept(flipped, retained: false, nowUnixSeconds: 1_700_000_001) == .failure(.badMAC))
    #expect(south.accept(bytes, retained: true, nowUnixSeconds: 1_700_000_001) == .failure(.retained))
  }

  final class FakeSite: SitePassageSink {
    var linkConnected = true
    var sent: [(Digest, PassageDirection, Int64)] = []
    func send(identity: Digest, direction: PassageDirection, unixSeconds: Int64) { sent.append((identity, direction, unixSeconds)) }
  }

  static func world(_ offline: PassbackOffline, dir: String, clock: ManualClock = ManualClock()) -> (TurnstileControllerTests.World, FakeSite) {
    var c = TurnstileControllerTests.World.config(.hard)
    c.site.enabled = true
    c.site.offline = offline
    let w = TurnstileControllerTests.World(c, dir: dir, clock: clock)
    let site = FakeSite()
    w.turnstile.site = site
    return (w, site)
  }

  @Test("a passage is sent with its identity, direction and time; a grant nobody used is not")
  func sends() {
    let dir = temporaryDirectory("site")
    defer { removeTree(dir) }
    let (w, site) = Self.world(.deny, dir: dir)
    #expect(w.admit("alice") == .granted)
    w.rotate(w.entryPassage, in: 300)
    w.run(ms: 600)
    #expect(site.sent.count == 1)
    #expect(site.sent.first?.0 == TurnstileControllerTests.World.who("alice") && site.sent.first?.1 == .entry)
    #expect(site.sent.first?.2 == w.clock.unixSeconds())
    #expect(w.admit("bob") == .granted)
    w.run(ms: 2_500)
    #expect(site.sent.count == 1, "bob's grant timed out: nothing to share")
  }

  @Test("another reader's entry: refused entry here (denied-passback), kept across a restart; an older copy ignored; FORGIVE lets it through")
  func remote() {
    let dir = temporaryDirectory("site")
    defer { removeTree(dir) }
    let clock = ManualClock()
    do {
      let (w, _) = Self.world(.deny, dir: dir, clock: clock)
      #expect(w.turnstile.recordRemote(identity: TurnstileControllerTests.World.who("carol"), direction: .entry, unixSeconds: clock.unixSeconds() - 5))
      #expect(w.admit("carol") == .deniedPassback)
      #expect(w.status().contains("1 learned"))
    }
    let (w, _) = Self.world(.deny, dir: dir, clock: clock)
    #expect(w.admit("carol") == .deniedPassback)
    // An older copy of a passage the table already holds a newer one of: not recorded.
    #expect(!w.turnstile.recordRemote(identity: TurnstileControllerTests.World.who("carol"), direction: .exit, unixSeconds: clock.unixSeconds() - 60))
    w.turnstile.perform(.action(.forgiveLast, authority: .console, who: []))
    #expect(w.admit("carol") == .granted)
  }

  @Test("link down, rule deny: every grant refused denied-offline, nothing recorded; link up again: granted")
  func offlineDeny() {
    let dir = temporaryDirectory("site")
    defer { removeTree(dir) }
    let (w, site) = Self.world(.deny, dir: dir)
    site.linkConnected = false
    #expect(w.admit("dave") == .deniedOffline)
    #expect(w.entry.edges.isEmpty)
    #expect(w.status().contains("link DOWN") && w.status().contains("1 refused offline"))
    site.linkConnected = true
    #expect(w.admit("dave") == .granted)
  }

  @Test("link down, rule allow: decided on local records (hard), counted; rule timed: the timed window even in hard mode")
  func offlineAllowAndTimed() {
    let dir = temporaryDirectory("site")
    defer { removeTree(dir) }
    let (w, site) = Self.world(.allow, dir: dir)
    site.linkConnected = false
    #expect(w.admit("erin") == .granted)
    w.rotate(w.entryPassage, in: 300)
    w.run(ms: 600)
    #expect(w.admit("erin") == .deniedPassback, "this reader's own record still counts")
    #expect(w.status().contains("1 granted offline"))

    let dir2 = temporaryDirectory("site")
    defer { removeTree(dir2) }
    let (t, tsite) = Self.world(.timed, dir: dir2)
    #expect(t.turnstile.recordRemote(identity: TurnstileControllerTests.World.who("frank"), direction: .entry, unixSeconds: t.clock.unixSeconds()))
    tsite.linkConnected = false
    #expect(t.admit("frank") == .deniedPassback, "within passback_minutes (60 s)")
    t.clock.advance(milliseconds: 60_000)
    #expect(t.admit("frank") == .granted, "past the timed window while offline, though the mode is hard")
    tsite.linkConnected = true
    #expect(t.admit("frank") == .deniedPassback, "online again: hard (the grant above was recorded as an entry)")
  }
}
