import ScanBase

/// The door as STATUS and DOOR show it (filled by the door's owner on demand).
public struct DoorStatus: Equatable, Sendable {
  public var state = DoorState.closed
  public var strikeActive = false
  /// A schedule's unlock window holds the strike.
  public var unlockWindow = false
  public var contact = LineLevel.inactive
  public var exitButton = LineLevel.inactive
  public var tamper = LineLevel.inactive
  public var alarm = LineLevel.inactive
  /// How the door's lines are read ("gpiod v1", "sim", ...).
  public var backend = ""
  public var forcedCount: UInt64 = 0
  public var heldOpenCount: UInt64 = 0
  public var exitRequests: UInt64 = 0
  public var rawEdges: UInt64 = 0
  public var inputErrors: UInt64 = 0
  /// Lost edges made up for by reading a line's level (see `DoorController`).
  public var resyncs: UInt64 = 0
  public init() {}

  /// The status of `machine` with the alarm line at `alarm`.
  public init(_ machine: DoorMachine, alarm: LineLevel, backend: String) {
    state = machine.state
    strikeActive = machine.strikeActive
    unlockWindow = machine.unlockWindow
    contact = machine.level(.contact)
    exitButton = machine.level(.exitButton)
    tamper = machine.level(.tamper)
    self.alarm = alarm
    self.backend = backend
    forcedCount = machine.forcedCount
    heldOpenCount = machine.heldOpenCount
    exitRequests = machine.exitRequests
    rawEdges = machine.rawEdges
  }

  /// `door closed, strike locked; contact closed, exit released, tamper ok, alarm off; forced 0, held open 0, exit 0, edges 0 (sim)`.
  public func write(into w: inout ByteWriter) {
    w.write("door ")
    w.write(state.name)
    w.write(", strike ")
    w.write(strikeActive ? "released" : "locked")
    if unlockWindow { w.write(" (unlock window)") }
    w.write("; contact ")
    w.write(contact == .active ? "open" : "closed")
    w.write(", exit ")
    w.write(exitButton == .active ? "pressed" : "released")
    w.write(", tamper ")
    w.write(tamper == .active ? "active" : "ok")
    w.write(", alarm ")
    w.write(alarm == .active ? "on" : "off")
    w.write("; forced ")
    w.write(forcedCount)
    w.write(", held open ")
    w.write(heldOpenCount)
    w.write(", exit requests ")
    w.write(exitRequests)
    w.write(", edges ")
    w.write(rawEdges)
    if inputErrors > 0 {
      w.write(", input errors ")
      w.write(inputErrors)
    }
    if resyncs > 0 {
      w.write(", lost edges made up ")
      w.write(resyncs)
    }
    w.write(" (")
    w.write(backend)
    w.write(")")
  }
}
