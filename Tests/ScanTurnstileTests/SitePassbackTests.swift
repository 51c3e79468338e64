import ScanBase
import ScanTurnstile
import Testing

/// Site-wide anti-passback's pure parts: the message (good, malformed, oversized, this reader's
/// own, dated ahead), the offline rule per setting and link state, and how another reader's
/// passage merges into the table (never over a newer one, never moving the floor).
@Suite struct SitePassbackTests {
  static let identity = String(repeating: "ab", count: 32)
  static let mac = String(repeating: "0f", count: 32)
  static let key = "0123456789abcdef"
  static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
  static func line(
    reader: String = "gate-south", dir: String = "entry", seconds: String = "1700000000", id: String = identity, mac: String = mac
  )
    -> [UInt8]
  {
    bytes("scangate-passage 2 \(key) \(reader) \(dir) \(seconds) \(id) \(mac)")
  }
  static func parse(_ b: [UInt8], own: String = "gate-north", now: Int64 = 1_700_000_000) -> Result<SitePassage, SitePassage.Refusal> {
    SitePassage.parse(b, ownReader: own, nowUnixSeconds: now)
  }

  @Test("a good message parses to its fields; the MAC covers everything before ' <mac>'")
  func good() throws {
    let b = Self.line()
    let p = try Self.parse(b).get()
    #expect(p.reader == "gate-south")
    #expect(p.direction == .entry)
    #expect(p.unixSeconds == 1_700_000_000)
    #expect(p.identity.byte(0) == 0xAB && p.identity.byte(31) == 0xAB)
    #expect(p.mac.byte(0) == 0x0F && p.mac.byte(31) == 0x0F)
    #expect(p.signedCount == b.count - 65)
    #expect(String(decoding: b[0..<p.signedCount], as: UTF8.self) == p.signedText)
    #expect(p.keyID == Self.key)
    var q = SitePassage(keyID: Self.key, reader: "gate-south", direction: .exit, unixSeconds: 5, identity: p.identity)
    q.signedCount = 0
    let written = q.message(mac: p.mac)
    #expect(String(decoding: written, as: UTF8.self) == "scangate-passage 2 \(Self.key) gate-south exit 5 \(Self.identity) \(Self.mac)")
    #expect(try Self.parse(written).get().direction == .exit)
  }

  @Test(
    "malformed messages are refused whole",
    arguments: [
      "", "scangate-passage 2 ", "scangate-passage 3 \(key) gate-south entry 1 \(identity) \(mac)",
      "scangate-passage 2 gate-south entry 1 \(identity) \(mac)", "scangate-passage 2 0123456789ABCDEF gate-south entry 1 \(identity) \(mac)",
      "scangate-passage 2 0123456789abcde gate-south entry 1 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south sideways 1 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south entry -1 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 01 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 1234567890123 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 1 \(identity.uppercased()) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 1 \(identity.dropLast()) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 1 \(identity) \(mac) ",
      "scangate-passage 2 \(key) gate-south entry 1 \(identity) \(mac)\n",
      "scangate-passage 2 \(key) gate-south  entry 1 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate/south entry 1 \(identity) \(mac)",
      "scangate-passage 2 \(key) gate-south entry 1 \(identity)",
      "{\"reader\":\"gate-south\"}",
    ])
  func malformed(_ text: String) {
    #expect(Self.parse(Self.bytes(text)) == .failure(.malformed))
  }

  @Test("the earlier form (scangate-passage 1, no key id) is refused with its own reason: a reader not yet upgraded")
  func earlierForm() {
    #expect(Self.parse(Self.bytes("scangate-passage 1 gate-south entry 1 \(Self.identity) \(Self.mac)")) == .failure(.oldVersion))
    #expect(SitePassage.Refusal.oldVersion.reason.contains("upgrade every reader"))
  }

  @Test("oversized: refused before it is read")
  func oversized() {
    var b = Self.line(reader: String(repeating: "r", count: 64))
    #expect(b.count <= SitePassage.bytesMax)
    #expect((try? Self.parse(b).get()) != nil)
    b += [UInt8](repeating: 0x20, count: SitePassage.bytesMax - b.count + 1)
    #expect(Self.parse(b) == .failure(.oversized))
    #expect(Self.parse(Self.line(reader: String(repeating: "r", count: 65))) == .failure(.malformed))
  }

  @Test("this reader's own message is ignored; one dated over 300 s ahead is refused")
  func ownAndFuture() {
    #expect(Self.parse(Self.line(reader: "gate-north")) == .failure(.ownReader))
    #expect((try? Self.parse(Self.line(seconds: "1700000300")).get()) != nil)
    #expect(Self.parse(Self.line(seconds: "1700000301")) == .failure(.future))
  }

  @Test("the offline rule: applies only site-wide and only while the link is down")
  func offlineRule() {
    var s = SitePassbackSettings()
    #expect(s.judgement(mode: .hard, linkConnected: false) == .check(.hard), "per reader: the link does not matter")
    s.enabled = true
    #expect(s.judgement(mode: .off, linkConnected: false) == .off)
    #expect(s.judgement(mode: .hard, linkConnected: true) == .check(.hard))
    #expect(s.judgement(mode: .timed, linkConnected: true) == .check(.timed))
    s.offline = .deny
    #expect(s.judgement(mode: .hard, linkConnected: false) == .denyOffline)
    s.offline = .allow
    #expect(s.judgement(mode: .hard, linkConnected: false) == .check(.hard))
    s.offline = .timed
    #expect(s.judgement(mode: .hard, linkConnected: false) == .check(.timed))
  }

  static func key(_ n: UInt64) -> Digest { Digest(words: (n, n &* 31, 7, 9)) }
  static func table(_ mode: PassbackMode) -> AntiPassback {
    var s = PassbackSettings()
    s.mode = mode
    s.timedSeconds = 60
    return AntiPassback(settings: s)
  }

  @Test("offline `timed` on a hard table: the same way is refused only within passback_minutes")
  func timedOverride() {
    let t = Self.table(.hard)
    t.record(Self.key(1), .entry, now: 1_000)
    #expect(t.check(Self.key(1), .entry, now: 1_059, mode: .timed) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_060, mode: .timed) == .granted)
    #expect(t.check(Self.key(1), .entry, now: 1_060) == .deniedPassback, "hard, as configured")
  }

  @Test("another reader's passage: recorded at its time, never over a newer record, never moving the floor")
  func merge() {
    let t = Self.table(.timed)
    // An entry at the north gate 10 s ago: the south gate refuses the same way for the rest of the window.
    let m = t.merge(Self.key(1), .entry, at: 990, now: 1_000)
    #expect(m != nil && t.record(at: m!.slot)?.unixSeconds == 990)
    #expect(t.check(Self.key(1), .entry, now: 1_049) == .deniedPassback)
    #expect(t.check(Self.key(1), .entry, now: 1_050) == .granted)
    // A later local exit; then the late copy of an older entry arrives: ignored.
    t.record(Self.key(1), .exit, now: 1_100)
    #expect(t.merge(Self.key(1), .entry, at: 1_050, now: 1_100) == nil)
    #expect(t.merge(Self.key(1), .entry, at: 1_100, now: 1_100) == nil, "the same second: the local record stands")
    #expect(t.record(at: t.merge(Self.key(2), .exit, at: 1_100, now: 1_100)!.slot)?.direction == .exit)
    // Dated ahead of this reader's clock: recorded at this reader's now, and the floor stays.
    let ahead = t.merge(Self.key(3), .entry, at: 1_250, now: 1_200)
    #expect(t.record(at: ahead!.slot)?.unixSeconds == 1_200)
    #expect(t.floorSeconds == 1_200)
  }
}
