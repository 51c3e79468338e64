import CGPIOD
import CLinux
import ScanCore
import ScanPlatform

/// Wiegand out (docs/panels.md): in panel mode a validated pass is sent to the panel's reader
/// input as its card number, on two output lines (D0 for a 0 bit, D1 for a 1 bit), in the card's
/// own format (26-bit H10301, 34-bit, 37-bit H10304 or raw N bits, parity included).
///
/// The bits are clocked out by the shim's Wiegand thread (C, no Swift runtime, no lock): the loop
/// only queues a frame (`forward`), which allocates nothing and never waits for the line. The
/// lines belong to that thread once it runs; this object keeps them open and releases them (idle,
/// inactive) after the thread has stopped. The crash guard covers them like every output line.
public final class WiegandLink: PanelForwarder {
  /// The lines, kept open for the thread (nil with the simulated backend).
  private var d0: GPIODOutputLine?
  private var d1: GPIODOutputLine?
  private var handle: OpaquePointer?
  private let simulated: Unmanaged<SimulatedDrive>?
  private let ring: EventRing?
  private let clock: any MonotonicClock
  private let wall: any WallClock
  public let pulseMicroseconds: Int
  public let intervalMicroseconds: Int
  public let description: String
  public private(set) var lastCard: (card: CardNumber, at: Instant)? = nil
  /// Cards the queue could not take (8 frames waiting: the panel would be flooded anyway).
  public private(set) var refused: UInt64 = 0
  /// The panel's beeper and LED wires, shown on the status line.
  public var feedback: WiegandFeedback? = nil

  /// What the thread calls for a simulated line (tests): `drive(line, active)`, on its thread.
  public final class SimulatedDrive {
    let drive: (Int, Bool) -> Void
    public init(_ drive: @escaping (Int, Bool) -> Void) { self.drive = drive }
  }

  /// Wiegand on `chip`'s lines `settings.wiegandD0Line` and `wiegandD1Line`, requested as
  /// outputs (inactive: idle) and handed to a new thread.
  public convenience init(
    settings: PanelSettings, chip: String, ring: EventRing?, clock: any MonotonicClock, wall: any WallClock
  ) throws(GPIOError) {
    let zero = try GPIODOutputLine(
      chip: chip, offset: UInt32(settings.wiegandD0Line), activeLow: settings.wiegandActiveLow, consumer: "scangate-wiegand-d0")
    let one = try GPIODOutputLine(
      chip: chip, offset: UInt32(settings.wiegandD1Line), activeLow: settings.wiegandActiveLow, consumer: "scangate-wiegand-d1")
    let handle = sg_wiegand_start(
      zero.shimLine, one.shimLine, nil, nil, UInt32(settings.wiegandPulseMicroseconds), UInt32(settings.wiegandIntervalMicroseconds),
      UInt32(settings.wiegandFrameGapMilliseconds * 1_000))
    try self.init(
      handle: handle, d0: consume zero, d1: consume one, simulated: nil, settings: settings, ring: ring, clock: clock, wall: wall,
      description: "\(chip) D0 line \(settings.wiegandD0Line), D1 line \(settings.wiegandD1Line)")
  }

  /// Wiegand on simulated lines: the thread calls `drive` for each edge.
  public convenience init(
    settings: PanelSettings, simulated drive: SimulatedDrive, ring: EventRing?, clock: any MonotonicClock, wall: any WallClock
  ) throws(GPIOError) {
    let retained = Unmanaged.passRetained(drive)
    let handle = sg_wiegand_start(
      nil, nil,
      { context, line, active in
        Unmanaged<SimulatedDrive>.fromOpaque(context!).takeUnretainedValue().drive(Int(line), active != 0)
      }, retained.toOpaque(), UInt32(settings.wiegandPulseMicroseconds), UInt32(settings.wiegandIntervalMicroseconds),
      UInt32(settings.wiegandFrameGapMilliseconds * 1_000))
    if handle == nil { retained.release() }
    try self.init(
      handle: handle, d0: nil, d1: nil, simulated: retained, settings: settings, ring: ring, clock: clock, wall: wall,
      description: "simulated lines")
  }

  private init(
    handle: OpaquePointer?, d0: consuming GPIODOutputLine?, d1: consuming GPIODOutputLine?, simulated: Unmanaged<SimulatedDrive>?,
    settings: PanelSettings, ring: EventRing?, clock: any MonotonicClock, wall: any WallClock, description: String
  ) throws(GPIOError) {
    guard let handle else { throw GPIOError(errno: .current, operation: "start the Wiegand thread") }
    self.handle = handle
    self.simulated = simulated
    self.d0 = consume d0
    self.d1 = consume d1
    self.ring = ring
    self.clock = clock
    self.wall = wall
    pulseMicroseconds = settings.wiegandPulseMicroseconds
    intervalMicroseconds = settings.wiegandIntervalMicroseconds
    self.description = description
  }

  deinit { stop() }

  /// Stops the thread (after the frame it is sending), then releases the lines idle.
  public func stop() {
    guard let handle else { return }
    sg_wiegand_stop(handle)
    self.handle = nil
    simulated?.release()
    d0 = nil
    d1 = nil
  }

  /// Frames queued and not yet sent.
  public var pending: Int { handle.map { Int(sg_wiegand_pending($0)) } ?? 0 }

  public var counters: sg_wiegand_stats {
    var stats = sg_wiegand_stats()
    if let handle { sg_wiegand_counters(handle, &stats) }
    return stats
  }

  // MARK: PanelForwarder

  public func forward(_ decision: AccessDecision) -> Bool {
    guard let card = decision.card, let handle else { return false }
    guard sg_wiegand_send(handle, card.bits, UInt32(card.bitCount)) == 0 else {
      refused &+= 1
      return false
    }
    let now = clock.now()
    lastCard = (card, now)
    guard let ring else { return true }
    var e = ScanEvent(.panelCard, code: UInt16(card.bitCount), at: now, wall: wall.unixNanoseconds())
    let name = card.format.staticName
    e.setPayload(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    _ = ring.append(e)
    return true
  }

  /// `panel mode=panel wiegand <lines> pulse=50us interval=2000us cards=3 last_card=26-bit 12s ago ...`.
  public func statusLine(now: Instant) -> String {
    let c = counters
    var s = "panel mode=panel wiegand \(description) pulse=\(pulseMicroseconds)us interval=\(intervalMicroseconds)us"
    s += " cards=\(c.sent)"
    if let last = lastCard {
      s += " last_card=\(last.card.format.name)-bit \(now.microseconds(since: last.at) / 1_000_000)s ago"
    } else {
      s += " last_card=none"
    }
    s += " pending=\(pending) refused=\(refused) write_errors=\(c.errors) late_bits=\(c.late_bits)"
    s += " resent=\(c.resent) broken=\(c.broken)"
    s += " pulse_max=\(c.pulse_max_ns / 1_000)us realtime=\(c.realtime != 0 ? "yes" : "no")"
    if let feedback { s += feedback.statusText }
    return s
  }
}
