import ScanCore
import ScanSim

/// One reader in a simulated world, driven by one seed (docs/testing.md, "The simulator"): the
/// real engine (decoding, presence, policy, actuator) on a manual clock, a camera that shows the
/// people the seed picks, an allow-list file and a lockdown latch on a simulated disk, revocations,
/// manual opens, wall-clock jumps and restarts. Nothing here makes a system call or reads a real
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
  var random: SplitMix
  let clock = ManualClock()
  public let trace: SimTrace
  let ring = EventRing(capacity: 4_096)
  let relay: SimLine
  let buzzer: SimLine
  var engine: Engine
  let frames: [[UInt8]]
  public internal(set) var counts = Counts()
  public internal(set) var step = 0

  // The world's model: what the camera shows, and what the disk holds.
  var shown: SimPerson? = nil
  var showUntil = 0
  var carolListed = true
  var lockdown = false
  /// The ring sequence the invariants have read up to.
  var checked: UInt64 = 0
  /// An authorizing event (a grant, a manual open) seen since the relay last went inactive.
  var authorizedSinceRelease = false
  /// The relay went active during this tick.
  var relayRose = false

  public init(seed: UInt64, mutation: SimMutation? = nil) {
    self.mutation = mutation
    random = SplitMix(seed: seed)
    trace = SimTrace(clock: clock)
    relay = SimLine(name: "relay", clock: clock, trace: trace)
    buzzer = SimLine(name: "buzzer", clock: clock, trace: trace)
    relay.stuck = mutation == .relayStuck
    frames = (0...SimPerson.allCases.count).map { FixtureDecoder.frame(width: 64, height: 48, naming: $0) }
    engine = Self.makeEngine(clock: clock, ring: ring, relay: relay, buzzer: buzzer, mutation: mutation)
    loadAllowList(carolListed: true)
    relay.onRise = { [unowned self] in relayRose = true }
    trace.add("start seed \(seed)\(mutation.map { " mutation \($0.rawValue)" } ?? "")")
  }

  static func makeEngine(clock: ManualClock, ring: EventRing, relay: SimLine, buzzer: SimLine, mutation: SimMutation?) -> Engine {
    var settings = EngineSettings()
    settings.actuation.relayPulseMilliseconds = relayPulseMilliseconds
    settings.actuation.relayPulseMillisecondsMax = relayPulseMillisecondsMax
    var payloads = SimPerson.allCases.map { Array($0.payload.utf8) }
    if mutation == .decoderConfusion { payloads[SimPerson.mallory.rawValue - 1] = Array(SimPerson.alice.payload.utf8) }
    return Engine(
      settings: settings, decoder: FixtureDecoder(payloads: payloads), relay: relay, buzzer: buzzer, clock: clock, wall: clock,
      digester: FixtureDigester(), events: ring, maxWidth: 64, maxHeight: 48)
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

  func chance(_ perMillion: UInt64) -> Bool { random.next() % 1_000_000 < perMillion }
  func pick(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }

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
