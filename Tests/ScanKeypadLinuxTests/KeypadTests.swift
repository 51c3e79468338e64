import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// A PIN after the pass on the real loop: the engine's second factor, the keypad participant,
/// the allow-list's `pin=` made by Python's hmac (an implementation that is not ours), the relay.
@Suite(.serialized) struct KeypadTests {
  typealias Loop = RunLoop<
    ScriptedFrameSource, FixtureDecoder, RecordingOutputLine, RecordingOutputLine, ManualClock, ManualClock, SodiumDigester
  >
  static let keyHex = String(repeating: "5a", count: 16) + String(repeating: "c3", count: 16)
  static let key = [UInt8](repeating: 0x5A, count: 16) + [UInt8](repeating: 0xC3, count: 16)

  /// The allow-list's `pin=` for `payload` and `pin`, computed by Python's hmac and hashlib.
  static func pinHash(_ payload: String, _ pin: String) -> String {
    let script =
      "import hmac,hashlib,sys; k=bytes.fromhex(sys.argv[1]); d=hashlib.sha256(sys.argv[2].encode()).digest(); "
      + "print(hmac.new(k, b'scangate-pin-v1\\x00'+d+sys.argv[3].encode(), hashlib.sha256).hexdigest())"
    let (status, out) = runCommand(["/usr/bin/python3", "-c", script, keyHex, payload, pin])
    precondition(status == 0, out)
    return String(out.prefix(64))
  }

  final class World {
    let clock = ManualClock()
    let ring = EventRing(capacity: 1024)
    let relay: RecordingOutputLine
    let buzzer: RecordingOutputLine
    let keys = PipeKeys()
    var loop: Loop
    let keypad: KeypadController

    /// Frames: 1 ALICE (pin 2468), 2 BOB (no pin), 3 CAROL (pin 1357), then `passes` (signed
    /// passes' texts, verified by `credentials`) from 4 on, 0 none; 10 ms a step.
    init(
      script: [Int], dir: String, require: Bool = false, keypad present: Bool = true, attemptsMax: Int = 3,
      passes: [String] = [], credentials: CredentialVerifier? = nil
    ) throws {
      relay = RecordingOutputLine(name: "relay", clock: clock)
      buzzer = RecordingOutputLine(name: "buzzer", clock: clock)
      var settings = EngineSettings()
      settings.presence.leaveAfterMilliseconds = 100
      settings.presence.cooldownMilliseconds = 0
      let engine = ScanEngine(
        settings: settings, decoder: FixtureDecoder(payloads: [Array("ALICE".utf8), Array("BOB".utf8), Array("CAROL".utf8)] + passes.map { Array($0.utf8) }),
        relay: relay,
        buzzer: buzzer, clock: clock, wall: clock, digester: SodiumDigester(),
        events: ring, maxWidth: 64, maxHeight: 48)
      var loopSettings = LoopSettings()
      loopSettings.handleSignals = false
      loopSettings.allowListPath = nil
      let frames = (0..<(4 + passes.count)).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
      let clock = self.clock
      loop = Loop(engine: engine, settings: loopSettings) { () throws(CaptureError) in
        var s = ScriptedFrameSource(width: 64, height: 48, frames: frames, script: script.map { .frame($0) }, loops: false, clock: clock)
        s.advanceMicrosecondsPerStep = 10_000
        return s
      }
      let list =
        "text:ALICE label=alice pin=\(KeypadTests.pinHash("ALICE", "2468"))\ntext:BOB label=bob\n"
        + "text:CAROL label=carol pin=\(KeypadTests.pinHash("CAROL", "1357"))\n"
      _ = loop.engine.allowList.load(Array(list.utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
      loop.engine.tagger = TestTagger()
      loop.engine.policy.credentials = credentials
      var k = KeypadSettings()
      k.device = "/dev/input/test-keypad"
      k.requirePin = require
      k.attemptsMax = attemptsMax
      k.lockoutSeconds = 300
      keypad = try KeypadController(
        settings: k, source: present ? keys : nil, sourceName: k.device, pinKey: KeypadTests.key, wall: clock,
        time: TrustedTime(), attemptPath: dir + "/pin-attempts")
      loop.engine.secondFactor = keypad
      loop.register(keypad)
    }

    func run(_ iterations: Int) { for _ in 0..<iterations { loop.runOnce(maximumWaitMilliseconds: 0) } }

    /// Decisions in the ring, as "verdict label".
    func decisions() -> [String] { ring.decisionLines() }
    var pulses: Int { relay.edges.filter { $0.level == .active }.count }
  }

  /// Keys a tag by the payload's digest (the service keys it with its tag key).
  final class TestTagger: PayloadTagger {
    func tag(_ digest: Digest) -> Digest { digest }
  }

  @Test("the right PIN after the pass opens the door; the pass alone does not")
  func rightPin() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let w = try World(script: [1] + Array(repeating: 0, count: 300), dir: dir)
    w.run(20)
    #expect(w.decisions() == ["pin-required alice"])
    #expect(w.pulses == 0)
    // The prompt: two short chirps (40 ms on, 60 off, 40 on), not the grant's beep.
    let chirps = w.buzzer.edges.map { ($0.level, $0.at.nanoseconds / 1_000_000) }
    #expect(chirps.count == 4 && chirps[0].0 == .active && chirps[2].0 == .active, "\(chirps)")
    if chirps.count == 4 { #expect(chirps[1].1 - chirps[0].1 == 40 && chirps[2].1 - chirps[1].1 == 60 && chirps[3].1 - chirps[2].1 == 40) }
    w.keys.type("2468#")
    w.run(5)
    #expect(w.decisions() == ["pin-required alice", "granted alice"])
    #expect(w.pulses == 1)
  }

  @Test("a wrong PIN is denied-pin; a typo cleared with * and then the right PIN opens")
  func wrongPin() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let w = try World(script: [1] + Array(repeating: 0, count: 50) + [1] + Array(repeating: 0, count: 300), dir: dir)
    w.run(10)
    w.keys.type("1357#")
    w.run(60)
    #expect(w.decisions() == ["pin-required alice", "denied-pin alice", "pin-required alice"])
    w.keys.type("99*2468#")
    w.run(5)
    #expect(w.decisions().last == "granted alice")
    #expect(w.pulses == 1)
  }

  @Test("three wrong PINs lock the credential out: denied-pin-locked at once, still after a restart")
  func lockout() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let shown = [1] + Array(repeating: 0, count: 30)
    do {
      let w = try World(script: shown + shown + shown + shown + Array(repeating: 0, count: 100), dir: dir)
      for _ in 0..<3 {
        w.run(10)
        w.keys.type("0000#")
        w.run(25)
      }
      w.run(30)
      #expect(
        w.decisions() == [
          "pin-required alice", "denied-pin alice", "pin-required alice", "denied-pin alice", "pin-required alice",
          "denied-pin-locked alice", "denied-pin-locked alice",
        ])
      #expect(w.pulses == 0)
    }
    // A restart keeps the count (the attempts file); the right PIN is not even asked for.
    let w = try World(script: shown, dir: dir)
    w.run(20)
    #expect(w.decisions() == ["denied-pin-locked alice"])
  }

  @Test("no key for the entry timeout: denied-pin; BOB (no pin=) is granted without one unless require_pin")
  func timeoutAndRequire() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let w = try World(script: [1] + Array(repeating: 0, count: 1_200) + [2] + Array(repeating: 0, count: 30), dir: dir)
    w.run(1_300)
    #expect(w.decisions() == ["pin-required alice", "denied-pin alice", "granted bob"])
    let required = try World(script: [2] + Array(repeating: 0, count: 30), dir: dir, require: true)
    required.run(30)
    #expect(required.decisions() == ["denied-pin bob"])
  }

  @Test("no keypad (unplugged, or never opened): a pass that needs a PIN is denied-pin, never granted")
  func noKeypad() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let w = try World(script: [1, 0, 0, 0, 0, 2] + Array(repeating: 0, count: 30), dir: dir, keypad: false)
    w.run(40)
    #expect(w.decisions() == ["denied-pin alice", "granted bob"])
  }

  @Test("a refused pass while a PIN is awaited leaves the entry; a second PIN pass replaces it (the first refused)")
  func superseded() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let w = try World(script: [1, 0, 0, 0, 2] + Array(repeating: 0, count: 200), dir: dir, require: true)
    w.run(13)
    // BOB has no pin=: with require_pin he is refused, which ends nothing of ALICE's entry.
    #expect(w.decisions() == ["pin-required alice", "denied-pin bob"])
    w.keys.type("2468#")
    w.run(5)
    #expect(w.decisions().last == "granted alice")

    let v = try World(script: [1, 0, 0, 0, 3] + Array(repeating: 0, count: 200), dir: dir)
    v.run(13)
    #expect(v.decisions() == ["pin-required alice", "denied-pin alice", "pin-required carol"])
    v.keys.type("1357#")
    v.run(5)
    #expect(v.decisions().last == "granted carol")
    #expect(v.pulses == 1)
  }

  /// A site, and passes for DAVE (PIN 9753), ERIN (none) and DAVE again (a new pass, same holder).
  static func signedPasses() throws -> (CredentialSite, [String]) {
    let site = CredentialSite()
    let sitePublic = CredentialIssuer.sitePublicKey(site.siteSecret)!
    var dave = site.claims("dave", id: [4, 4, 4])
    dave.pin = Array("9753".utf8)
    dave.sitePublicKey = sitePublic
    var again = site.claims("dave", id: [4, 4, 5])
    again.pin = Array("9753".utf8)
    again.sitePublicKey = sitePublic
    return (site, [try site.issue(dave).staticText, try site.issue(site.claims("erin", id: [5])).staticText, try site.issue(again).staticText])
  }

  @Test("a signed pass with a sealed PIN claim: pin-required, the right PIN opens, a wrong one is denied-pin; a pass without one opens at once")
  func signedPassPin() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let (site, passes) = try Self.signedPasses()
    let w = try World(
      script: [4] + Array(repeating: 0, count: 50) + [4] + Array(repeating: 0, count: 50) + [5] + Array(repeating: 0, count: 30), dir: dir,
      passes: passes, credentials: site.verifier())
    w.run(10)
    #expect(w.decisions() == ["pin-required DAVE"])
    #expect(w.pulses == 0)
    w.keys.type("2468#")  // ALICE's PIN is not DAVE's
    w.run(60)
    #expect(w.decisions() == ["pin-required DAVE", "denied-pin DAVE", "pin-required DAVE"])
    w.keys.type("9753#")
    w.run(60)
    #expect(w.decisions() == ["pin-required DAVE", "denied-pin DAVE", "pin-required DAVE", "granted DAVE", "granted ERIN"])
    // One strike pulse, from the right PIN (ERIN's grant comes while it still holds the strike).
    #expect(w.pulses == 1)
  }

  @Test("a signed pass's wrong PINs count per holder: three lock DAVE out, and his other pass is denied-pin-locked too")
  func signedPassLockout() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let (site, passes) = try Self.signedPasses()
    let shown = [4] + Array(repeating: 0, count: 30)
    let w = try World(
      script: shown + shown + shown + [6] + Array(repeating: 0, count: 100), dir: dir, passes: passes, credentials: site.verifier())
    for _ in 0..<3 {
      w.run(10)
      w.keys.type("0000#")
      w.run(21)
    }
    w.run(40)
    #expect(
      w.decisions() == [
        "pin-required DAVE", "denied-pin DAVE", "pin-required DAVE", "denied-pin DAVE", "pin-required DAVE", "denied-pin-locked DAVE",
        "denied-pin-locked DAVE",
      ])
    #expect(w.pulses == 0)
  }

  @Test("a PIN claim that does not open (no site key on the reader) refuses the pass: denied-pin, never a grant without the PIN")
  func signedPassPinWithoutSiteKey() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let (site, passes) = try Self.signedPasses()
    let w = try World(script: [4] + Array(repeating: 0, count: 30), dir: dir, passes: passes, credentials: site.verifier(siteKey: false))
    w.run(30)
    #expect(w.decisions() == ["denied-pin DAVE"])
    #expect(w.pulses == 0)
  }

  /// The panel's side of panel mode: keys as they arrive; refuses after `capacity`.
  final class PanelKeys: KeypadSink {
    var keys: [KeypadKey] = []
    var capacity = 100
    func forward(_ key: KeypadKey) -> Bool {
      guard keys.count < capacity else { return false }
      keys.append(key)
      return true
    }
  }

  @Test("panel mode: every key typed goes to the panel in order (nothing checked here); a full queue is counted; unplugged is MISSING")
  func forwardedToPanel() {
    let clock = ManualClock()
    let keys = PipeKeys()
    let panel = PanelKeys()
    panel.capacity = 5
    let forwarder = KeypadForwarder(source: keys, sourceName: "/dev/input/test-keypad", sink: panel)
    func turn() {
      let poll = PollSet(capacity: 2)
      _ = forwarder.prepare(poll, now: clock.now())
      _ = poll.wait(milliseconds: 100)
      forwarder.service(poll, now: clock.now(), requests: LoopRequests())
    }
    keys.type("2468#9")
    turn()
    #expect(panel.keys == [.digit(2), .digit(4), .digit(6), .digit(8), .enter])
    var status = ReaderStatus()
    forwarder.contribute(to: &status, now: clock.now(), unixSeconds: clock.unixSeconds())
    #expect(status.section("keypad") == "/dev/input/test-keypad ok, keys to the panel (osdp_KEYPAD): 5 forwarded, 1 dropped")
    keys.gone = true
    keys.type("1")
    turn()
    status = ReaderStatus()
    forwarder.contribute(to: &status, now: clock.now(), unixSeconds: clock.unixSeconds())
    #expect((status.section("keypad") ?? "").hasPrefix("/dev/input/test-keypad MISSING (no keys reach the panel)"), "\(status.section("keypad"))")
  }

  @Test("the verifier is HMAC-SHA-256 under the PIN key over the label, the payload's SHA-256 and the PIN (Python's hmac)")
  func verifier() throws {
    let key = Self.key
    let digest = Array("ALICE".utf8).withUnsafeBytes { SodiumDigester().sha256($0) }
    let ours = key.withUnsafeBytes { k in Array("2468".utf8).withUnsafeBytes { PinMAC.verifier(key: k, digest: digest, pin: $0) } }
    let hex = Hex.string((0..<32).map { ours.byte($0) })
    #expect(hex == Self.pinHash("ALICE", "2468"))
    #expect(hex != Self.pinHash("ALICE", "2469") && hex != Self.pinHash("ALICF", "2468"))
  }
}
