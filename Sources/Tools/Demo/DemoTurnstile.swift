import ScanCore
import ScanLinux
import ScanService

/// `scangate demo --turnstile`: the demo's reader as a turnstile. Simulated passage sensors, a
/// direction input and the fire panel's contact are scripted against the decisions, so a run
/// shows an entry, the same pass refused a second entry (hard anti-passback), a grant nobody
/// used (granted-not-passed at the timeout), an exit, and the fire release freeing both
/// directions, each as events on the console and in the audit log; after each passage, how many
/// people the turnstile counts in its area.
enum DemoTurnstile {
  static let scenes: [DemoCommand.Scene] = [
    DemoCommand.Scene(payload: Array("ALICE-0001".utf8), variant: .upright, note: "on the list: entry, she walks through"),
    DemoCommand.Scene(payload: Array("ALICE-0001".utf8), variant: .upright, note: "the same pass again: anti-passback"),
    DemoCommand.Scene(payload: Array("ERIN-0005".utf8), variant: .mirrored, note: "on the list: granted, nobody walks through"),
    DemoCommand.Scene(payload: Array("ALICE-0001".utf8), variant: .upright, note: "alice leaves: an exit"),
  ]

  static let notes = [
    "turnstile: entry and exit on one camera, the direction chosen by an input; hard anti-passback; 2 s passage timeout",
    "turnstile: after alice's exit the fire panel's contact opens for 2 s: every line is released, then locked again",
  ]

  /// The turnstile the demo runs: held wiring, the direction from an input, hard anti-passback.
  static func configure(_ config: inout ScanConfig) {
    config.turnstile.machine.enabled = true
    config.turnstile.machine.wiring = .held
    config.turnstile.machine.passageTimeoutMilliseconds = 2_000
    config.turnstile.machine.forcedAlarmMilliseconds = 2_000
    config.turnstile.direction = .input
    config.turnstile.area = "demo"
    config.turnstile.passback.mode = .hard
  }

  /// The demo's people at the turnstile: watches the decisions in the ring and scripts the
  /// sensors from each one's time, so the story holds at any frame rate.
  final class Driver: DemoDecisionScript {
    let lines: TurnstileSetup.SimulatedLines
    let fire: SimulatedInputLine
    /// The turnstile's own count (its controller stores it), shown after each passage through
    /// the journal's notes (printed right after the event, in order).
    let occupancy: SharedGauge
    let notes: JournalNotes?

    init(_ context: TurnstileSetup.DriverContext, fire: SimulatedInputLine) {
      lines = context.lines
      self.fire = fire
      occupancy = context.occupancy
      notes = context.notes
      super.init(ring: context.ring)
    }

    override func noticed(_ e: ScanEvent) {
      guard e.kind == .passage || e.kind == .occupancyReset else { return }
      let after = e.kind == .passage ? PassageCode.direction(e.code).name : "reset"
      notes?.post("  occupancy \(occupancy.load()) in area demo (after the \(after))", after: e.sequence)
    }

    override func act(scene: Int, at t: Instant) {
      func at(_ ms: Int) -> Instant { t.adding(milliseconds: ms) }
      switch scene {
      case 0:  // alice in: the entry arm turns 0.8 s after the grant.
        lines.entryPassage.schedule(.active, at: at(800))
        lines.entryPassage.schedule(.inactive, at: at(950))
      case 2:  // erin's grant goes unused; before the next scene, the direction input says "exit".
        lines.direction.schedule(.active, at: at(1_000))
      case 3:  // alice out, then the fire panel's contact opens for 2 s.
        lines.exitPassage.schedule(.active, at: at(700))
        lines.exitPassage.schedule(.inactive, at: at(850))
        fire.schedule(.active, at: at(1_500))
        fire.schedule(.inactive, at: at(3_500))
      default: break
      }
    }
  }
}
