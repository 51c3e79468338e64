import ScanCore
import ScanLinux

extension Service {
  /// The OSDP link to a panel, when `[panel]` names a port (nil otherwise).
  public static func makePanelLink(_ config: ScanConfig, ring: EventRing, clock: SystemMonotonicClock) throws(FileError) -> OSDPPanelLink? {
    guard !config.panel.osdpPort.isEmpty else { return nil }
    var identity = OSDPPeripheralSettings()
    identity.vendorCode = 0x5347_00  // "SG" and a model byte: no IEEE OUI is registered for it
    identity.model = 1
    identity.version = 1
    let parts = ScanGateVersion.string.split(separator: ".").compactMap { UInt8($0.prefix { $0.isNumber }) }
    identity.firmware = (parts.count > 0 ? parts[0] : 0, parts.count > 1 ? parts[1] : 0, parts.count > 2 ? parts[2] : 0)
    let link = try OSDPPanelLink(settings: config.panel, ring: ring, clock: clock, wall: SystemWallClock(), identity: identity)
    link.grantPattern = config.engine.actuation.grantPattern
    link.denyPattern = config.engine.actuation.denyPattern
    return link
  }

  /// Wiegand out to a panel, when `[panel]` asks for it (nil otherwise). With the simulated GPIO
  /// backend the thread clocks the bits out to nothing (the timing and the queue still run).
  public static func makeWiegand(_ config: ScanConfig, ring: EventRing, clock: SystemMonotonicClock) throws(GPIOError) -> WiegandLink? {
    guard config.panel.mode == .panel && config.panel.link == .wiegand else { return nil }
    if config.gpio.backend == .sim {
      return try WiegandLink(
        settings: config.panel, simulated: WiegandLink.SimulatedDrive { _, _ in }, ring: ring, clock: clock, wall: SystemWallClock())
    }
    return try WiegandLink(settings: config.panel, chip: config.gpio.chip, ring: ring, clock: clock, wall: SystemWallClock())
  }

  /// The panel's beeper and LED wires into a Wiegand reader, when `[panel]` names either (nil
  /// otherwise). With the simulated GPIO backend the wires never change.
  public static func makeWiegandFeedback(_ config: ScanConfig, ring: EventRing) throws(GPIOError) -> WiegandFeedback? {
    let p = config.panel
    guard p.mode == .panel && p.link == .wiegand, p.wiegandBeeperLine >= 0 || p.wiegandLEDLine >= 0 else { return nil }
    func wire(_ offset: Int, _ name: String) throws(GPIOError) -> (any InputLine)? {
      guard offset >= 0 else { return nil }
      if config.gpio.backend == .sim { return SimulatedInputLine() }
      return try GPIODInputLine(
        chip: config.gpio.chip, offset: UInt32(offset), activeLow: p.wiegandFeedbackActiveLow, bias: p.wiegandFeedbackBias,
        debounceMilliseconds: 0, consumer: "scangate-wiegand-" + name)
    }
    let feedback = WiegandFeedback(
      beeper: try wire(p.wiegandBeeperLine, "beeper"), led: try wire(p.wiegandLEDLine, "led"), ring: ring, wall: SystemWallClock())
    feedback.grantPattern = config.engine.actuation.grantPattern
    return feedback
  }

  /// The access panel's links: OSDP (in panel mode it decides, no local relay), Wiegand out and
  /// the panel's beeper/LED wires. Returns the Wiegand link (stopped after the loop) and, in
  /// panel mode over OSDP, the link the keypad's keys go to.
  static func attachPanels<
    S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable
  >(
    _ config: ScanConfig, clock: SystemMonotonicClock, ring: EventRing,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) -> (WiegandLink?, OSDPPanelLink?) {
    let panel: OSDPPanelLink?
    do { panel = try makePanelLink(config, ring: ring, clock: clock) } catch {
      writeStandardError("scangate: panel: \(error)\n")
      throw SetupRefused()
    }
    if let panel {
      loop.register(panel)
      if config.panel.mode == .panel && config.panel.link == .osdp { loop.engine.outcome = .panel(panel) }  // the panel decides; no local relay
    }
    let wiegand: WiegandLink?
    do throws(GPIOError) { wiegand = try makeWiegand(config, ring: ring, clock: clock) } catch {
      writeStandardError("scangate: cannot start Wiegand out: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
    if let wiegand { loop.engine.outcome = .panel(wiegand) }
    do throws(GPIOError) {
      if let feedback = try makeWiegandFeedback(config, ring: ring) {
        loop.register(feedback)
        wiegand?.feedback = feedback
      }
    } catch {
      writeStandardError("scangate: cannot request the panel's beeper/LED wires: \(error.operation): \(error.errno)\n")
      throw SetupRefused()
    }
    return (wiegand, config.panel.mode == .panel && config.panel.link == .osdp ? panel : nil)
  }
}
