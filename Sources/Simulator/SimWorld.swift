import ScanAccessLinux
import ScanCore
import ScanSim

/// One reader in a simulated world, driven by one seed (docs/testing.md, "The simulator"): the
/// real engine (decoding, presence, policy, actuator) on a manual clock, a camera that shows the
/// people the seed picks, an allow-list file and a lockdown latch on a simulated disk, revocations,
/// manual opens, wall-clock jumps and restarts, and the fleet link publishing the audit log to a
/// broker that goes down, refuses, loses and lies (`SimFleet`). Nothing here makes a system call or reads a real
/// clock: the same seed gives the same trace, byte for byte. Invariants are checked after every
/// tick.
public final class SimWorld {
  public typealias Engine = ScanEngine<FixtureDecoder, SimLine, SimLine, ManualClock, ManualClock, FixtureDigester>

  public struct Violation: Error, Sendable {
    public var invariant: String
    public var step: Int
    public var detail: String
  }

  public struct Counts: Sendable {
    public var grants = 0, denials = 0, restarts = 0, clockJumps = 0, revocations = 0, lockdowns = 0, manualOpens = 0
  }

  public static let tickMilliseconds = 5
  static let frameEveryTicks = 7
  static let relayPulseMilliseconds = 500
  static let relayPulseMillisecondsMax = 2_000

  let mutation: SimMutation?
  /// Where the actions come from: drawn from the seed as the run goes (and recorded), or a list
  /// replayed (a shrunk one).
  var source: Source
  struct Source {
    /// Draws the actions; nil when a list is replayed.
    var scheduler: SimScheduler?
    /// The actions drawn so far, or the list replayed.
    var script: [SimStep] = []
    /// The next action of the list to apply.
    var next = 0
  }
  /// The run's actions, each with its tick: drawn so far, or the list replayed.
  public var script: [SimStep] { source.script }
  let clock = ManualClock()
  public let trace: SimTrace
  let ring = EventRing(capacity: 4_096)
  let relay: SimLine
  let buzzer: SimLine
  var engine: Engine
  let frames: [[UInt8]]
  /// What each person shows the camera (index rawValue - 1): allow-listed texts and signed passes.
  let payloads: [[UInt8]]
  /// The site's trust store (the issuer key the seed made) and the reader's use store (its disk).
  let trust: TrustStore
  let uses = SimUseStore()
  /// The fleet link, the audit log it publishes and the broker (`SimFleet.swift`).
  let fleet: SimFleet
  public var fleetSummary: String { fleet.summary }
  public internal(set) var counts = Counts()
  public internal(set) var step = 0

  // The world's model: what the camera shows, and what the disk holds.
  var shown: SimPerson? = nil
  var showUntil = 0
  var carolListed = true
  var emergency = Emergency()
  var lockdown: Bool { emergency.latchedBy != nil }
  /// The lockdown: who latched the one that stands (nil: none), as the rule says (only its
  /// authority lifts it); the reader's own `EmergencyState`, which decides and must agree; and
  /// its latch as written to the disk (durably, before it acts).
  struct Emergency {
    var latchedBy: EmergencyAuthority? = nil
    var state = EmergencyState(settings: EmergencySettings(), now: Instant(nanoseconds: 0))
    var onDisk = LockdownLatch()
  }
  /// What the invariants keep between ticks.
  var watch = Watch()
  struct Watch {
    /// The ring sequence the invariants have read up to.
    var checked: UInt64 = 0
    /// Grants each counted guest has had in the whole run (the world's own count).
    var guestGrants: [SimPerson: Int] = [:]
    /// An authorizing event (a grant, a manual open) seen since the relay last went inactive.
    var authorizedSinceRelease = false
    /// The relay went active during this tick.
    var relayRose = false
    /// The feedback lamps, fed the ring's events as the reader's participant is, and when the
    /// last grant was recorded (their green must follow a grant or an open strike).
    var lamps = FeedbackLamps(settings: SimWorld.lampSettings)
    var lastGrantAt: Instant? = nil
    /// The first event the lamps of this start read: the real reader's ring is new at each start.
    var lampsFrom: UInt64 = 1
  }
  static let lampSettings: FeedbackSettings = {
    var s = FeedbackSettings()
    s.greenLine = 1
    s.redLine = 2
    s.amberLine = 3
    return s
  }()

  /// A world from `seed`; its actions drawn from the seed, or `script` replayed instead (the
  /// seed still makes the issuer's key and the guests' passes).
  public init(seed: UInt64, mutation: SimMutation? = nil, script: [SimStep]? = nil) {
    self.mutation = mutation
    source = script.map { Source(scheduler: nil, script: $0) } ?? Source(scheduler: SimScheduler(seed: seed, mutation: mutation))
    trace = SimTrace(clock: clock)
    fleet = SimFleet(seed: seed, now: clock.now(), mutation: mutation, trace: trace)
    relay = SimLine(name: "relay", clock: clock, trace: trace)
    buzzer = SimLine(name: "buzzer", clock: clock, trace: trace)
    relay.stuck = mutation == .relayStuck
    uses.fsyncLies = mutation == .fsyncLies
    uses.forgets = mutation == .useStoreForgets
    uses.ignoresFull = mutation == .diskFullIgnored
    frames = (0...SimPerson.allCases.count).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
    // The issuer's key from the seed, and two guest passes valid a week either side of the start
    // (clock jumps stay within a day): the same seed issues the same passes.
    var keyRandom = SplitMix(seed: seed ^ 0x5EED_0F_155E)
    let issuerSeed = (0..<32).map { _ in UInt8(truncatingIfNeeded: keyRandom.next()) }
    let kid = Array("sim".utf8)
    trust = TrustStore(keys: [IssuerKey(kid: kid, publicKey: CredentialIssuer.issuerPublicKey(issuerSeed)!, notBefore: nil, notAfter: nil)!])
    let now = clock.unixSeconds()
    func pass(_ person: SimPerson, uses: Int) -> [UInt8] {
      var c = PassClaims(subject: person.label, expires: now + 7 * 86_400, id: [UInt8(person.rawValue), 7, 7])
      c.notBefore = now - 7 * 86_400
      c.label = person.label
      c.uses = uses
      return Array((try! CredentialIssuer.issue(c, kid: kid, issuerSeed: issuerSeed)).staticText.utf8)
    }
    var table = ["ALICE-0001", "BOB-0002", "CAROL-0003", "MALLORY-0004"].map { Array($0.utf8) }
    table += [pass(.guestOnce, uses: 1), pass(.guestTwice, uses: 2)]
    if mutation == .decoderConfusion { table[SimPerson.mallory.rawValue - 1] = table[SimPerson.alice.rawValue - 1] }
    payloads = table
    engine = Self.makeEngine(clock: clock, ring: ring, relay: relay, buzzer: buzzer, payloads: table)
    attachCredentials()
    loadAllowList(carolListed: true)
    relay.onRise = { [unowned self] in watch.relayRose = true }
    trace.add("start seed \(seed)\(mutation.map { " mutation \($0.rawValue)" } ?? "")\(script.map { " replaying \($0.count) actions" } ?? "")")
  }

  static func makeEngine(clock: ManualClock, ring: EventRing, relay: SimLine, buzzer: SimLine, payloads: [[UInt8]]) -> Engine {
    var settings = EngineSettings()
    settings.actuation.relayPulseMilliseconds = relayPulseMilliseconds
    settings.actuation.relayPulseMillisecondsMax = relayPulseMillisecondsMax
    settings.payloadBytesMax = 1_024
    return Engine(
      settings: settings, decoder: FixtureDecoder(payloads: payloads), relay: relay, buzzer: buzzer, clock: clock, wall: clock,
      digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
  }

  /// Signed passes, as the service wires them: a verifier over the site's trust store, its uses
  /// counted in the use store (read back from the disk at each start).
  func attachCredentials() {
    var settings = CredentialSettings()
    settings.trustFile = "(memory)"
    let verifier = CredentialVerifier(
      settings: settings, sign1: Sign1Verifier(trust: trust, codec: LibCBOR(), crypto: SodiumCredentialCrypto(siteSecretKey: nil)))
    verifier.useStore = uses
    engine.policy.credentials = verifier
  }

  /// The allow-list file's text with or without carol.
  static func allowListText(carolListed: Bool) -> String {
    "text:ALICE-0001 label=alice\ntext:BOB-0002 label=bob lockdown=yes\n" + (carolListed ? "text:CAROL-0003 label=carol\n" : "")
  }

  func loadAllowList(carolListed listed: Bool) {
    let problem = engine.allowList.load(
      Array(Self.allowListText(carolListed: listed).utf8), digester: FixtureDigester(), nowUnixSeconds: clock.unixSeconds())
    precondition(problem == nil, "the simulator's allow-list did not load: \(String(describing: problem))")
  }

  /// Runs `steps` ticks; the first invariant that fails, or nil.
  public func run(steps: Int) -> Violation? {
    while step < steps {
      step += 1
      act()
      clock.advance(milliseconds: Self.tickMilliseconds)
      engine.tick()
      if step % Self.frameEveryTicks == 0 { showFrame() }
      if let violation = checkInvariants() { return violation }
    }
    return nil
  }

  func showFrame() {
    let index = shown?.rawValue ?? 0
    frames[index].withUnsafeBytes { raw in
      engine.process(LumaFrame(bytes: raw, geometry: .gray(width: 64, height: 48), captured: clock.now(), sequence: UInt64(step)))
    }
  }
}
