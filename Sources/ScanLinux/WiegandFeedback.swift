import CLinux
import ScanCore

/// The panel's side of a Wiegand cable (docs/panels.md): the beeper and LED wires an
/// access-control panel drives, the way it drives a card reader's (open collector, pulled low
/// for on). Wiegand carries nothing back to the reader, so these wires are how a panel-mode
/// reader's buzzer follows the panel's decision: the buzzer sounds while the beeper wire is
/// active (renewed every minute for a panel that holds it on); the LED wire turning active (the
/// panel's green) plays the grant sound when no beeper wire is fitted. Every change is a
/// `panel-command` event (code 0x6A beeper, 0x69 LED, as OSDP's BUZ and LED; detail
/// `wiegand-beeper-on`, `wiegand-led-off`, ...).
///
/// A poll participant on the loop's thread; the lines are read with `readEdgesAndLevel`, so a
/// lost edge still ends at the wire's level. Nothing allocates after `init`.
public final class WiegandFeedback: PollParticipant {
  public enum Wire: Int, CaseIterable, Sendable {
    case beeper = 0, led = 1
    var code: UInt16 { self == .beeper ? 0x6A : 0x69 }
  }
  private var lines: InlineArray<2, (any DoorInputLine)?>
  private var tokens = InlineArray<2, PollSet.Token>(repeating: .none)
  /// Each wire's level as last read, and as last acted on.
  private var read = InlineArray<2, LineLevel>(repeating: .inactive)
  public private(set) var levels = InlineArray<2, LineLevel>(repeating: .inactive)
  private var moreEdges = InlineArray<2, Bool>(repeating: false)
  private var started = false
  private var beepRenewAt: Instant? = nil
  private let ring: EventRing?
  private let wall: any WallClock
  /// Times each wire turned active.
  public private(set) var activations = InlineArray<2, UInt64>(repeating: 0)
  public private(set) var inputErrors: UInt64 = 0
  public private(set) var madeUp: UInt64 = 0
  /// The longest a buzzer pattern step lasts; a beeper wire held longer is renewed.
  static let beepStepMilliseconds = 60_000
  /// The beeper wire's sound (made once: a pattern from an array literal allocates).
  static let beep = BuzzerPattern([beepStepMilliseconds])

  /// The wires on `beeper` and `led` (nil: not fitted), read once now; acted on from the first
  /// service (a wire already active at start sounds then).
  public init(beeper: (any DoorInputLine)?, led: (any DoorInputLine)?, ring: EventRing?, wall: any WallClock) {
    lines = [beeper, led]
    self.ring = ring
    self.wall = wall
    for i in 0..<2 {
      guard let line = lines[i] else { continue }
      do throws(GPIOError) { read[i] = try line.currentLevel() } catch { inputErrors &+= 1 }
    }
  }

  public var pollCapacity: Int { 2 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    var next: Instant? = started ? beepRenewAt : now
    for i in 0..<2 {
      tokens[i] = .none
      guard let line = lines[i] else { continue }
      if line.pollDescriptor >= 0 { tokens[i] = poll.add(line.pollDescriptor, events: Int16(POLLIN)) }
      if moreEdges[i] { next = now }
      if let at = line.nextEdgeAt { next = next.map { min($0, at) } ?? at }
    }
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    for i in 0..<2 {
      guard let line = lines[i] else { continue }
      let ready = poll.revents(tokens[i]) != 0 || (line.nextEdgeAt.map { $0 <= now } ?? false) || moreEdges[i]
      guard ready else { continue }
      do throws(GPIOError) {
        // Only the level after the read matters: a panel's wire is driven, not bounced.
        moreEdges[i] = try line.readEdgesAndLevel(now: now, last: &read[i], madeUp: &madeUp) { _, _ in }
      } catch { inputErrors &+= 1 }
    }
    for i in 0..<2 where lines[i] != nil {  // by index: `allCases` would build an array
      guard let wire = Wire(rawValue: i), read[i] != levels[i] else { continue }  // levels start inactive
      levels[i] = read[i]
      let on = levels[i] == .active
      if on { activations[i] &+= 1 }
      record(wire, on: on, now: now)
      switch wire {
      case .beeper:
        requests.play = on ? Self.beep : .silence
        beepRenewAt = on ? now.adding(milliseconds: Self.beepStepMilliseconds) : nil
      case .led:
        if on && lines[Wire.beeper.rawValue] == nil { requests.play = .grant }
      }
    }
    started = true
    if let renew = beepRenewAt, now >= renew {
      requests.play = Self.beep
      beepRenewAt = now.adding(milliseconds: Self.beepStepMilliseconds)
    }
  }

  private func record(_ wire: Wire, on: Bool, now: Instant) {
    guard let ring else { return }
    var e = ScanEvent()
    e.kind = .panelCommand
    e.code = wire.code
    let detail: StaticString =
      wire == .beeper ? (on ? "wiegand-beeper-on" : "wiegand-beeper-off") : (on ? "wiegand-led-on" : "wiegand-led-off")
    e.setPayload(UnsafeRawBufferPointer(start: detail.utf8Start, count: detail.utf8CodeUnitCount))
    e.monotonic = now
    e.wallNanoseconds = wall.unixNanoseconds()
    _ = ring.append(e)
  }

  /// ` beeper=off led=on(3)` for the panel's STATUS line (wires not fitted are left out).
  public var statusText: String {
    var s = ""
    for wire in Wire.allCases where lines[wire.rawValue] != nil {
      let i = wire.rawValue
      s += " \(wire == .beeper ? "beeper" : "led")=\(levels[i] == .active ? "on" : "off")(\(activations[i]))"
    }
    if inputErrors > 0 { s += " feedback_errors=\(inputErrors)" }
    return s
  }
}
