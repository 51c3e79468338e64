import ScanCore
import ScanLinux
import ScanService

/// The demo's door: simulated contact, exit-button and tamper lines scripted against the demo's
/// scenes, so a run shows a grant with the door opening and closing (the strike locking as it
/// closes), a door held open with its beep, a forced door with its alarm, and an exit-button
/// release, each as events on the console and in the audit log.
enum DemoDoor {
  /// The door settings the demo runs with (short timers, so it all fits the replay).
  static func configure(_ config: inout ScanConfig) {
    guard !config.door.machine.enabled else { return }
    config.door.machine.enabled = true
    config.door.machine.heldOpenMilliseconds = 2_000
    config.door.machine.forcedAlarmMilliseconds = 3_000
    config.door.machine.heldOpenBeepOnMilliseconds = 200
    config.door.machine.heldOpenBeepOffMilliseconds = 300
    config.door.machine.debounceMilliseconds = [25, 25, 25]
  }

  /// What the door does, by scene.
  static let notes = [
    "door: after alice's grant the door opens (its contact bouncing) and closes again; the strike locks as it closes",
    "door: after dave's grant the door stays open past held_open_ms (2 s): held-open, the alarm line beeps until it closes",
    "door: during carol's scene the door is pushed open without an unlock: forced, the alarm line sounds for 3 s",
    "door: during the last scene someone inside presses the exit button: the strike releases, the door opens and closes",
  ]

  /// The demo's hand on the door: watches the decisions in the ring and scripts the simulated
  /// lines from each one's time, so the story holds at any frame rate.
  final class Driver: DemoDecisionScript {
    let lines: DoorSetup.SimulatedLines

    init(lines: DoorSetup.SimulatedLines, ring: EventRing) {
      self.lines = lines
      super.init(ring: ring)
    }

    /// Scripts the door for the scene whose decision came at `t`.
    override func act(scene: Int, at t: Instant) {
      func at(_ ms: Int) -> Instant { t.adding(milliseconds: ms) }
      switch scene {
      case 0:  // alice, granted: the door opens with 10 bounce edges in 5 ms, then closes.
        var level = LineLevel.active
        for k in 0...10 {
          lines.contact.schedule(level, at: at(700).adding(milliseconds: k / 2))
          level = level == .active ? .inactive : .active
        }
        lines.contact.schedule(.inactive, at: at(1_700))
      case 2:  // dave, granted: held open for 3 s.
        lines.contact.schedule(.active, at: at(600))
        lines.contact.schedule(.inactive, at: at(3_400))
      case 5:  // carol, denied: the door is pushed open anyway.
        lines.contact.schedule(.active, at: at(300))
        lines.contact.schedule(.inactive, at: at(1_000))
      case 6:  // the last scene: someone inside presses the exit button and leaves.
        lines.exitButton.schedule(.active, at: at(100))
        lines.exitButton.schedule(.inactive, at: at(250))
        lines.contact.schedule(.active, at: at(450))
        lines.contact.schedule(.inactive, at: at(1_050))
      default: break
      }
    }
  }
}
