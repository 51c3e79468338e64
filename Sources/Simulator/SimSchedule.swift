import ScanCore
import ScanSim

/// One thing the world does at a tick. A run's actions are drawn from its seed (`SimScheduler`);
/// a failing run's list is shrunk by replaying parts of it (`SimWorld.shrink`). Each action
/// carries the state it sets, not a toggle, so that leaving one out does not change what the
/// others mean.
public enum SimAction: Equatable, Sendable {
  /// Someone steps up to the camera for `ticks` ticks (then nobody is in view).
  case show(SimPerson, ticks: Int)
  /// Carol's entry in the allow-list file: there (restored) or gone (revoked), then the list reloaded.
  case carol(listed: Bool)
  /// A lockdown latched, or its lifting asked, by an authority (the console, the fleet, Home
  /// Assistant): only the one that latched it may lift it.
  case lockdown(on: Bool, by: EmergencyAuthority)
  /// An operator opens the door from the console.
  case manualOpen
  /// The wall clock set back or forward.
  case jumpClock(seconds: Int)
  /// The reader torn down and started again on the same disk.
  case restart
  /// The relay goes active by itself (only under the `spurious-pulse` mutation).
  case glitch
  /// The disk fills up (a use can no longer be written) or has room again.
  case diskFull(Bool)
  /// The fleet's broker goes down (restarting, its host rebooted) or is up again.
  case broker(up: Bool)
  /// The broker refuses every publish (an ACL changed) or accepts them again.
  case brokerRefuses(Bool)
  /// The reader's connection to the broker is cut (what was in flight either way is lost).
  case networkCut

  /// How the action reads in a shrunk list.
  public var text: String {
    switch self {
    case .show(let person, let ticks): "show \(person.label) for \(ticks) ticks"
    case .carol(let listed): listed ? "restore carol" : "revoke carol"
    case .lockdown(let on, let by): (on ? "lockdown on by " : "lockdown off by ") + by.name
    case .manualOpen: "manual open"
    case .jumpClock(let seconds): "wall clock \(seconds >= 0 ? "+" : "")\(seconds) s"
    case .restart: "restart"
    case .glitch: "relay glitch"
    case .diskFull(let full): full ? "disk full" : "disk has room"
    case .broker(let up): up ? "broker up" : "broker down"
    case .brokerRefuses(let on): on ? "broker refuses publishes" : "broker accepts publishes"
    case .networkCut: "network cut"
    }
  }
}

/// An action and the tick it happens at.
public struct SimStep: Equatable, Sendable {
  public var step: Int
  public var action: SimAction
}

/// Draws a run's actions from its seed, each with its chance per 5 ms tick (per million). It
/// keeps only what the drawing needs (who is in view, whether carol is listed, whether a lockdown
/// stands), not the reader's state: a seed's actions are the same whatever the reader does, so a
/// list of them can be drawn again without running the reader (`SimWorld.draw`).
struct SimScheduler {
  var random: SplitMix
  /// The broker's and the network's faults draw from their own stream (the reader's actions
  /// drawn from a seed stayed the same when they were added).
  var fleetRandom: SplitMix
  /// Who latches a lockdown and who asks to lift it: a stream of its own too.
  var authorityRandom: SplitMix
  let mutation: SimMutation?
  private var inView = false
  /// In view until this tick, or (nobody in view) nobody steps up before it.
  private var busyUntil = 0
  private var carolListed = true
  private var latchedBy: EmergencyAuthority? = nil
  private var diskFull = false
  private var brokerUp = true
  private var brokerRefuses = false

  init(seed: UInt64, mutation: SimMutation?) {
    random = SplitMix(seed: seed)
    fleetRandom = SplitMix(seed: seed ^ 0xB20_CE2)
    authorityRandom = SplitMix(seed: seed ^ 0xA07_0A1)
    self.mutation = mutation
  }

  /// Who latches by command (the lockdown input is a switch the world does not model).
  static let authorities: [EmergencyAuthority] = [.console, .fleet, .homeAssistant]

  mutating func chance(_ perMillion: UInt64) -> Bool { random.next() % 1_000_000 < perMillion }
  mutating func pick(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }

  /// The actions at `step`, in the order the world applies them.
  mutating func draw(step: Int, into out: inout [SimStep]) {
    func add(_ action: SimAction) { out.append(SimStep(step: step, action: action)) }
    // The camera: someone steps up for 0.3 to 3 s, then nobody for 0.1 to 1 s at the least.
    if inView {
      if step >= busyUntil {
        inView = false
        busyUntil = step + pick(20...200)
      }
    } else if step >= busyUntil && chance(20_000) {
      let person = SimPerson(rawValue: pick(1...SimPerson.allCases.count))!
      let ticks = pick(60...600)
      inView = true
      busyUntil = step + ticks
      add(.show(person, ticks: ticks))
    }
    if chance(600) {
      carolListed.toggle()
      add(.carol(listed: carolListed))
    }
    if chance(600) {
      // Latched by the console, the fleet or Home Assistant; lifted by its authority three times
      // in four, else another asks (and must be refused: the lockdown stands).
      let drawn = Self.authorities[Int(authorityRandom.next() % UInt64(Self.authorities.count))]
      if let held = latchedBy {
        let by = authorityRandom.next() % 4 == 0 && drawn != held ? drawn : held
        if by == held { latchedBy = nil }
        add(.lockdown(on: false, by: by))
      } else {
        latchedBy = drawn
        add(.lockdown(on: true, by: drawn))
      }
    }
    if chance(400) { add(.manualOpen) }
    if chance(300) { add(.jumpClock(seconds: pick(-86_400...86_400))) }
    if chance(200) { add(.restart) }
    if mutation == .spuriousPulse && chance(2_000) { add(.glitch) }
    if chance(400) {
      diskFull.toggle()
      add(.diskFull(diskFull))
    }
    // The broker: down for about 30 s at a time, refusing for about 10 s, a cut now and then.
    func fleetChance(_ perMillion: UInt64) -> Bool { fleetRandom.next() % 1_000_000 < perMillion }
    if fleetChance(brokerUp ? 100 : 170) {
      brokerUp.toggle()
      add(.broker(up: brokerUp))
    }
    if fleetChance(brokerRefuses ? 500 : 50) {
      brokerRefuses.toggle()
      add(.brokerRefuses(brokerRefuses))
    }
    if fleetChance(150) { add(.networkCut) }
  }
}

extension SimWorld {
  /// The actions a seed draws in its first `steps` ticks (without running the reader).
  public static func draw(seed: UInt64, mutation: SimMutation?, steps: Int) -> [SimStep] {
    var scheduler = SimScheduler(seed: seed, mutation: mutation)
    var out: [SimStep] = []
    for step in 1...max(steps, 1) { scheduler.draw(step: step, into: &out) }
    return out
  }

  /// The smallest part of `script` (as indices into it) found that still breaks `invariant`
  /// within `steps` ticks, and that run's violation: chunks of the list are left out, halving the
  /// chunk down to one action, then single actions again until none can go (a delta debugging
  /// in the manner of Zeller's ddmin). Every candidate is a replay on a new world from the same
  /// seed, so what is kept replays exactly with `--keep`.
  public static func shrink(
    seed: UInt64, mutation: SimMutation?, steps: Int, script: [SimStep], invariant: String
  ) -> (kept: [Int], violation: Violation)? {
    func fails(_ indices: [Int]) -> Violation? {
      let world = SimWorld(seed: seed, mutation: mutation, script: indices.map { script[$0] })
      guard let v = world.run(steps: steps), v.invariant == invariant else { return nil }
      return v
    }
    var kept = Array(script.indices)
    guard var best = fails(kept) else { return nil }
    var chunk = max(1, kept.count / 2)
    while !kept.isEmpty {
      var removed = false
      var at = 0
      while at < kept.count {
        let candidate = Array(kept[..<at] + kept[min(at + chunk, kept.count)...])
        if let v = fails(candidate) {
          kept = candidate
          best = v
          removed = true
        } else {
          at += chunk
        }
      }
      if chunk == 1 && !removed { break }
      chunk = max(1, chunk / 2)
    }
    return (kept, best)
  }
}
