import ScanCore
import ScanLinux
import ScanLoop

/// The turnstile's lines as configured: libgpiod inputs and outputs on `gpio.chip`, or simulated
/// lines (`gpio.backend = "sim"`, scripted by the demo and tests), its state files in the state
/// directory, and the controller the loop polls and the engine asks as its gate.
public enum TurnstileSetup {
  /// What a simulated turnstile's scripted hand is given: its lines, the event ring, the
  /// turnstile's occupancy as its controller counts it, and the journal's notes.
  public struct DriverContext {
    public let lines: SimulatedLines
    public let ring: EventRing
    public let occupancy: SharedGauge
    public let notes: JournalNotes?
  }

  /// The simulated lines, handed to a script (the demo) before the loop runs.
  public struct SimulatedLines {
    public let entryPassage = SimulatedInputLine()
    public let exitPassage = SimulatedInputLine()
    public let alarmInput = SimulatedInputLine()
    public let direction = SimulatedInputLine()
    public let entryUnlock = SimulatedOutputLine()
    public let exitUnlock = SimulatedOutputLine()
    public let alarm = SimulatedOutputLine()
    public init() {}
  }

  /// The controller, or nil when no turnstile is configured. Throws when a line cannot be requested.
  public static func make(
    _ config: ScanConfig, ring: EventRing, time: TrustedTime, now: Instant, simulated: SimulatedLines?
  ) throws(GPIOError) -> TurnstileController? {
    let t = config.turnstile
    guard t.machine.enabled else { return nil }
    var inputs: [(any InputLine)?] = [nil, nil, nil]
    var outputs: [(any OutputLine)?] = [nil, nil, nil]
    var direction: (any InputLine)? = nil
    var machine = t
    switch config.gpio.backend {
    case .sim:
      let lines = simulated ?? SimulatedLines()
      inputs = [lines.entryPassage, lines.exitPassage, lines.alarmInput]
      outputs = [lines.entryUnlock, lines.exitUnlock, lines.alarm]
      direction = t.direction == .input ? lines.direction : nil
    case .gpiod:
      func input(_ c: TurnstileLineConfig, _ name: String) throws(GPIOError) -> GPIODInputLine? {
        guard c.line >= 0 else { return nil }
        return try GPIODInputLine(
          chip: config.gpio.chip, offset: UInt32(c.line), activeLow: c.activeLow, bias: .pullUp,
          debounceMilliseconds: Int(t.machine.debounceMilliseconds), consumer: "scangate-" + name)
      }
      func output(_ c: TurnstileLineConfig, _ name: String) throws(GPIOError) -> GPIODOutputBox? {
        guard c.line >= 0 else { return nil }
        return GPIODOutputBox(try GPIODOutputLine(chip: config.gpio.chip, offset: UInt32(c.line), activeLow: c.activeLow, consumer: "scangate-" + name))
      }
      let entry = try input(t.entryPassage, "entry-passage")
      let exit = try input(t.exitPassage, "exit-passage")
      let alarm = try input(t.alarmInput, "turnstile-alarm")
      // The kernel debounces these lines: the machine takes their edges as they come.
      if entry?.kernelDebounce ?? false { machine.machine.debounceMilliseconds = 0 }
      inputs = [entry, exit, alarm]
      direction = t.direction == .input ? try input(t.directionInput, "direction") : nil
      outputs = [try output(t.entryUnlock, "entry-unlock"), try output(t.exitUnlock, "exit-unlock"), try output(t.alarm, "turnstile-alarm")]
    }
    return TurnstileController(
      config: machine, ring: ring, wall: SystemWallClock(), time: time, now: now, entryPassage: inputs[0],
      exitPassage: inputs[1], alarmInput: inputs[2], direction: direction, entryUnlock: outputs[0], exitUnlock: outputs[1],
      alarm: outputs[2], passbackPath: config.statePath("passback"), occupancyPath: config.statePath("occupancy"))
  }
}

/// `scangate run --sim-passages` with `gpio.backend = "sim"`: someone always walks through. Each
/// grant's unlock is followed 300 ms later by its direction's passage sensor (150 ms active),
/// so a real service process completes passages without hardware (deploy/fleet-passback.sh).
public final class SimulatedPassages: PollParticipant {
  private let lines: TurnstileSetup.SimulatedLines
  private let ring: EventRing
  private var cursor: EventCursor

  public init(lines: TurnstileSetup.SimulatedLines, ring: EventRing) {
    self.lines = lines
    self.ring = ring
    cursor = EventCursor(next: ring.nextSequence)
  }

  public var pollCapacity: Int { 0 }
  public func prepare(_ poll: PollSet, now: Instant) -> Instant? { nil }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    cursor.read(ring) { item in
      guard case .event(let e) = item, e.kind == .turnstileUnlocked, PassageCode.reason(e.code) == .grant else { return }
      let sensor = PassageCode.direction(e.code) == .entry ? lines.entryPassage : lines.exitPassage
      let at = max(now, e.monotonic)
      sensor.schedule(.active, at: at.adding(milliseconds: 300))
      sensor.schedule(.inactive, at: at.adding(milliseconds: 450))
    }
  }
}
