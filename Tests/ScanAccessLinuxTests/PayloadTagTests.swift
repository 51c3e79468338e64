import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// What is shown of a payload outside the reader: its keyed tag, never a digest anyone could
/// recompute. SHA-256 and HMAC are computed by Python's hashlib and hmac (not ScanGate's code).
@Suite(.serialized) struct PayloadTagTests {
  typealias Engine = ScanEngine<FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, SodiumDigester>
  /// A low-entropy badge number: its unkeyed SHA-256 gives it back in seconds.
  static let badge = "EMP-004217"
  static let keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
  static let keyB = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"

  /// SHA-256 of `text` by Python's hashlib: 64 hex digits.
  static func pythonSHA256(_ text: String) -> String {
    let (status, output) = runCommand(
      ["/usr/bin/python3", "-c", "import hashlib,sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())", text])
    #expect(status == 0, "\(output)")
    return output.trimmingSuffix()
  }

  /// HMAC-SHA-256(key, SHA-256(text)) by Python's hmac, the first 8 bytes in hex.
  static func pythonTag(keyHex: String, _ text: String) -> String {
    let script =
      "import hmac,hashlib,sys; d=hashlib.sha256(sys.argv[2].encode()).digest(); "
      + "print(hmac.new(bytes.fromhex(sys.argv[1]), d, hashlib.sha256).hexdigest()[:16])"
    let (status, output) = runCommand(["/usr/bin/python3", "-c", script, keyHex, text])
    #expect(status == 0, "\(output)")
    return output.trimmingSuffix()
  }

  func key(_ dir: String, _ hex: String, name: String = "a.db.tag-key") throws -> TagKey {
    let path = dir + "/" + name
    writeFile(path, hex + "\n")
    chmod(path, 0o600)
    return try TagKey.load(path)
  }

  /// The badge shown to an engine with `tagger` and taken away: its decision and "left" events.
  func decideBadge(tagger: (any PayloadTagger)?) -> (decision: ScanEvent?, left: ScanEvent?) {
    let clock = ManualClock()
    let ring = EventRing(capacity: 256)
    var engine = Engine(
      settings: EngineSettings(), decoder: FixtureDecoder(payloads: [Array(Self.badge.utf8)]),
      relay: RecordingOutputLine(name: "relay", clock: clock), buzzer: RecordingOutputLine(name: "buzzer", clock: clock),
      clock: clock, wall: clock, digester: SodiumDigester(), events: ring, maxWidth: 64, maxHeight: 48)
    _ = engine.allowList.load(Array("text:\(Self.badge) label=badge\n".utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
    engine.tagger = tagger
    for index in [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] {
      FixtureDecoder.frame(width: 64, height: 48, naming: index).withUnsafeBytes { raw in
        engine.process(LumaFrame(bytes: raw, geometry: .gray(width: 64, height: 48), captured: clock.now(), sequence: 0))
      }
      clock.advance(milliseconds: 100)
      engine.tick()
    }
    var decision: ScanEvent? = nil
    var left: ScanEvent? = nil
    var s: UInt64 = 1
    while case .event(let e) = ring.read(s) {
      if e.kind == .decision { decision = e }
      if e.kind == .left { left = e }
      s += 1
    }
    return (decision, left)
  }

  @Test("the event line, the audit record and the fleet message show the keyed tag and no prefix of the payload's SHA-256")
  func nothingTestsAPayloadOffline() throws {
    let dir = temporaryDirectory("tag")
    defer { removeTree(dir) }
    let sha = Self.pythonSHA256(Self.badge)
    let expected = Self.pythonTag(keyHex: Self.keyA, Self.badge)
    #expect(sha.count == 64 && expected.count == 16)
    let (decision, left) = decideBadge(tagger: try key(dir, Self.keyA))
    let d = try #require(decision)
    let l = try #require(left)
    #expect(d.verdict == .granted)
    let record = AuditRecord(d, sequence: 1, run: 1, keepPayload: false)
    #expect(record.tag == expected)
    let texts = [
      "console/journal line": EventText.line(d, since: Instant(nanoseconds: 0), payloads: .hidden),
      "left line": EventText.line(l, since: Instant(nanoseconds: 0), payloads: .hidden),
      "audit record line": record.line,
      "audit record as chained": String(decoding: record.canonicalBytes, as: UTF8.self),
      "fleet event": String(decoding: record.fleetJSON(readerID: "door-1"), as: UTF8.self),
    ]
    // 4 bytes of the SHA-256 already cut a badge space of a million down to a guess or two.
    let prefix = String(sha.prefix(8))
    for (name, text) in texts {
      #expect(!text.lowercased().contains(prefix), "\(name) holds a prefix of SHA-256(payload): \(text)")
      #expect(!text.contains("sha256"), "\(name): \(text)")
      #expect(!text.contains(Self.badge), "\(name): \(text)")
      #expect(text.contains(expected), "\(name) does not show the tag \(expected): \(text)")
    }
    #expect(texts["console/journal line"]!.contains(" tag=\(expected) "))
    #expect(texts["left line"]!.hasSuffix(" tag=\(expected)"))
    #expect(texts["fleet event"]!.contains(#""tag":"\#(expected)""#))
  }

  @Test("the same payload under two keys has two tags; under one key always the same; no key, no tag")
  func tagsAreKeyed() throws {
    let dir = temporaryDirectory("tag")
    defer { removeTree(dir) }
    let a = try key(dir, Self.keyA, name: "a")
    let b = try key(dir, Self.keyB, name: "b")
    let digest = Array(Self.badge.utf8).withUnsafeBytes { SodiumDigester().sha256($0) }
    #expect(PayloadTag.hex(a.tag(digest)) == Self.pythonTag(keyHex: Self.keyA, Self.badge))
    #expect(PayloadTag.hex(b.tag(digest)) == Self.pythonTag(keyHex: Self.keyB, Self.badge))
    #expect(a.tag(digest) != b.tag(digest))
    #expect(a.tag(digest) == a.tag(digest))
    #expect(TagKey.ephemeral().tag(digest) != a.tag(digest))
    // Through the engine: the decisions under the two keys differ, and without a key none is shown.
    let underA = try #require(decideBadge(tagger: a).decision)
    let underB = try #require(decideBadge(tagger: b).decision)
    #expect(underA.tag != underB.tag && underA.tag != .zero)
    let untagged = try #require(decideBadge(tagger: nil).decision)
    #expect(untagged.tag == .zero)
    #expect(!EventText.line(untagged, since: Instant(nanoseconds: 0), payloads: .hidden).contains("tag="))
    #expect(AuditRecord(untagged, sequence: 1, run: 1, keepPayload: false).tag.isEmpty)
  }

  @Test("the service's tag key: made once (0600, 64 hex digits), then kept; a readable key file is refused")
  func serviceKey() throws {
    let dir = temporaryDirectory("tag")
    defer { removeTree(dir) }
    let log = dir + "/audit.db"
    let digest = Array(Self.badge.utf8).withUnsafeBytes { SodiumDigester().sha256($0) }
    let first = try #require(TagKey.forService(logPath: log))
    #expect(first.isPersistent)
    var st = stat()
    #expect(stat(dir + "/audit.db.tag-key", &st) == 0 && st.st_mode & 0o777 == 0o600)
    let text = try readWholeFile(dir + "/audit.db.tag-key", maxBytes: 1024)
    #expect(text.count == 65 && text.last == 0x0A)
    let again = try #require(TagKey.forService(logPath: log))
    #expect(again.tag(digest) == first.tag(digest), "a restart keeps the key, so tags stay the same")
    // The file's own key, as Python computes the tag from it.
    let hex = String(decoding: text.dropLast(), as: UTF8.self)
    #expect(PayloadTag.hex(first.tag(digest)) == Self.pythonTag(keyHex: hex, Self.badge))
    // Deleted while in use: written back from memory, the same key (every tag stays).
    #expect(unlink(dir + "/audit.db.tag-key") == 0)
    #expect(first.restoreIfMissing(dir + "/audit.db.tag-key"))
    #expect(try TagKey.load(dir + "/audit.db.tag-key").tag(digest) == first.tag(digest))
    #expect(!first.restoreIfMissing(dir + "/audit.db.tag-key"), "there: nothing written")
    #expect(stat(dir + "/audit.db.tag-key", &st) == 0 && st.st_mode & 0o777 == 0o600)
    chmod(dir + "/audit.db.tag-key", 0o644)
    let refused = try #require(TagKey.forService(logPath: log))
    #expect(!refused.isPersistent && refused.tag(digest) != first.tag(digest))
    #expect(!refused.restoreIfMissing(dir + "/never"), "a key for this run only is never written")
    #expect(TagKey.forService(logPath: "")?.isPersistent == false)
    // Where anti-passback keeps records by tag, a key that cannot be the one they were kept
    // under is refused: unreadable, no log path, or deleted while stopped (the list names it).
    #expect(TagKey.forService(logPath: log, stableTags: true) == nil)
    #expect(TagKey.forService(logPath: "", stableTags: true) == nil)
    #expect(unlink(dir + "/audit.db.tag-key") == 0)
    #expect(StateFileList.names(dir + "/audit.db.tag-key"))
    #expect(TagKey.forService(logPath: log, stableTags: true) == nil, "a new key would let everyone through again")
    #expect(!fileExists(dir + "/audit.db.tag-key"), "and none is made")
    #expect(TagKey.forService(logPath: log)?.isPersistent == true, "without anti-passback a new key is made (said)")
  }

  @Test("scangate tag prints the badge's tag from the key file: the payload, - on standard input, or --sha256")
  func tagCommand() throws {
    let dir = temporaryDirectory("tag")
    defer { removeTree(dir) }
    _ = try key(dir, Self.keyA, name: "audit.db.tag-key")
    writeFile(dir + "/config.toml", "[log]\npath = \"\(dir)/audit.db\"\n")
    let expected = Self.pythonTag(keyHex: Self.keyA, Self.badge)
    var (status, output) = runCommand([scangateBinary, "tag", "--config", dir + "/config.toml", Self.badge])
    #expect(status == 0 && output == expected + "\n", "\(output)")
    (status, output) = runCommand(["/bin/sh", "-c", "printf '%s\\n' \(Self.badge) | '\(scangateBinary)' tag --key '\(dir)/audit.db.tag-key' -"])
    #expect(status == 0 && output == expected + "\n", "\(output)")
    (status, output) = runCommand([scangateBinary, "tag", "--key", dir + "/audit.db.tag-key", "--sha256", Self.pythonSHA256(Self.badge)])
    #expect(status == 0 && output == expected + "\n", "\(output)")
    // No key file: an error, never a tag under some other key.
    (status, output) = runCommand([scangateBinary, "tag", "--key", dir + "/none", Self.badge])
    #expect(status != 0 && output.contains("no tag key"), "\(output)")
  }
}

extension String {
  fileprivate func trimmingSuffix() -> String {
    var s = self
    while s.last == "\n" || s.last == "\r" { s.removeLast() }
    return s
  }
}
