import CLinux
import ScanCore
import ScanLoop
import ScanPlatform

/// The panel's side of a Wiegand cable (docs/panels.md): the beeper and LED wires an
/// access-control panel drives, the way it drives a card reader's (open collector, pulled low
/// for on). Wiegand carries nothing back to the reader, so these wires are how a panel-mode
/// reader's buzzer follows the panel's decision: the buzzer is held sounding while the beeper
/// wire is active (the reader's own patterns still play over it; a beep shorter than a loop
/// iteration, on and off within one read, is played for its length); the LED wire turning
/// active (the panel's green) plays the grant pattern when no beeper wire is fitted. Every change is a
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
  private var lines: InlineArray<2, (any InputLine)?>
  private var tokens = InlineArray<2, PollSet.Token>(repeating: .none)
  /// Each wire's level as last read, and as last acted on (both inactive until the first service).
  private var read = InlineArray<2, LineLevel>(repeating: .inactive)
  public private(set) var levels = InlineArray<2, LineLevel>(repeating: .inactive)
  private var moreEdges = InlineArray<2, Bool>(repeating: false)
  private var started = false
  private let ring: EventRing?
  private let wall: any WallClock
  /// What the LED wire plays when no beeper wire is fitted (`gpio.grant_pattern`).
  public var grantPattern = BuzzerPattern.grant
  /// Times each wire turned active.
  public private(set) var activations = InlineArray<2, UInt64>(repeating: 0)
  public private(set) var inputErrors: UInt64 = 0
  public private(set) var madeUp: UInt64 = 0

  /// The wires on `beeper` and `led` (nil: not fitted), read once now; acted on from the first
  /// service (a wire already active at start sounds then).
  public init(beeper: (any InputLine)?, led: (any InputLine)?, ring: EventRing?, wall: any WallClock) {
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
    var next: Instant? = started ? nil : now
    for i in 0..<2 { tokens[i] = lines[i]?.add(to: poll, more: moreEdges[i], now: now, next: &next) ?? .none }
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    for i in 0..<2 {
      guard let line = lines[i], let wire = Wire(rawValue: i) else { continue }
      guard !started || line.isDue(poll, tokens[i], more: moreEdges[i], now: now) else { continue }
      // A whole pulse inside one read (a loop iteration longer than the panel's beep): its
      // length, from its own edges' timestamps.
      var risen: Instant? = nil
      var pulse: UInt64? = nil
      do throws(GPIOError) {
        moreEdges[i] = try line.readEdgesAndLevel(now: now, last: &read[i], madeUp: &madeUp) { level, at in
          if level == .active {
            risen = at
          } else if let on = risen {
            pulse = at.nanoseconds > on.nanoseconds ? (at.nanoseconds - on.nanoseconds) / 1_000_000 : 0
            risen = nil
          }
        }
      } catch { inputErrors &+= 1 }
      if read[i] != levels[i] {
        levels[i] = read[i]
        turned(wire, on: levels[i] == .active, now: now, requests: requests)
      } else if levels[i] == .inactive, let length = pulse {
        turned(wire, on: true, now: now, requests: requests, pulseMilliseconds: Int(min(length, 60_000)))
        turned(wire, on: false, now: now, requests: requests)
      }
    }
    started = true
  }

  /// A wire turned on or off; `pulseMilliseconds`: on and off again within one read.
  private func turned(_ wire: Wire, on: Bool, now: Instant, requests: LoopRequests, pulseMilliseconds: Int? = nil) {
    if on { activations[wire.rawValue] &+= 1 }
    record(wire, on: on, now: now)
    switch wire {
    case .beeper:
      if let length = pulseMilliseconds {
        var beep = BuzzerPattern.grant
        beep.steps[0] = UInt16(max(length, 20))
        beep.count = 1
        requests.post(.play(beep))
      } else {
        requests.post(.holdBuzzer(on))
      }
    case .led:
      if on && lines[Wire.beeper.rawValue] == nil { requests.post(.play(grantPattern)) }
    }
  }

  private func record(_ wire: Wire, on: Bool, now: Instant) {
    guard let ring else { return }
    var e = ScanEvent(.panelCommand, code: wire.code, at: now, wall: wall.unixNanoseconds())
    let detail: StaticString =
      wire == .beeper ? (on ? "wiegand-beeper-on" : "wiegand-beeper-off") : (on ? "wiegand-led-on" : "wiegand-led-off")
    e.setPayload(UnsafeRawBufferPointer(start: detail.utf8Start, count: detail.utf8CodeUnitCount))
    _ = ring.append(e)
  }

  /// ` beeper=off(2) led=on(3)` for the panel's STATUS line: each fitted wire's level and how
  /// many times it came on.
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
