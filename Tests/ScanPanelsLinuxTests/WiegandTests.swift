import CGPIOD
import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import Synchronization
import ScanTestSupport
import Testing

/// Wiegand out through the shim's thread on simulated lines: the edges it drives are recorded
/// with CLOCK_MONOTONIC times and decoded here, independently of `CardNumber.bits`: the bits are
/// built from the formats' published layouts (facility and card fields, even parity over the
/// first half, odd over the second).
@Suite(.serialized) struct WiegandTests {
  struct Edge {
    var line: Int
    var active: Bool
    var at: UInt64
  }

  final class Recorder: Sendable {
    let edges = Mutex<[Edge]>([])
    /// Edges (by index) after which the thread is held 300 ms, as a stopped core would hold it.
    let stalls: Set<Int>
    init(stalls: Set<Int> = []) { self.stalls = stalls }
    func record(_ line: Int, _ active: Bool) {
      let at = sg_monotonic_ns()
      let index = edges.withLock {
        $0.append(Edge(line: line, active: active, at: at))
        return $0.count - 1
      }
      if stalls.contains(index) { usleep(300_000) }
    }
    var count: Int { edges.withLock { $0.count } }
    var all: [Edge] { edges.withLock { $0 } }
  }

  func link(_ recorder: Recorder, pulse: Int = 50, interval: Int = 2_000, frameGap: Int = 25) throws -> WiegandLink {
    var settings = PanelSettings()
    settings.wiegandFrameGapMilliseconds = frameGap
    settings.mode = .panel
    settings.link = .wiegand
    settings.wiegandPulseMicroseconds = pulse
    settings.wiegandIntervalMicroseconds = interval
    return try WiegandLink(
      settings: settings, simulated: WiegandLink.SimulatedDrive { recorder.record($0, $1) }, ring: nil,
      clock: SystemMonotonicClock(), wall: SystemWallClock())
  }

  /// `value` as `width` binary digits, most significant first.
  static func binary(_ value: UInt64, _ width: Int) -> [Int] { (0..<width).map { Int((value >> UInt64(width - 1 - $0)) & 1) } }

  /// A card's frame from the format's layout: even parity over the first half of the data bits,
  /// the data (facility, then card), odd parity over the second half.
  static func frame(facilityBits: Int, facility: UInt64, cardBits: Int, card: UInt64, evenOver: Int) -> [Int] {
    let data = binary(facility, facilityBits) + binary(card, cardBits)
    let even = data[0..<evenOver].reduce(0, +) % 2
    let odd = 1 - data[(data.count - evenOver)...].reduce(0, +) % 2
    return [even] + data + [odd]
  }

  /// Waits until `edges` edges were recorded: generous (it returns once they are there), since a
  /// loaded machine may starve the sender's thread for seconds; what the frame holds is checked after.
  func waitFor(_ recorder: Recorder, edges: Int, seconds: Int = 20) {
    for _ in 0..<(seconds * 200) where recorder.count < edges { usleep(5_000) }
  }

  @Test("26, 34 and 37-bit and raw cards go out as their bits, in order, with the configured pulse and interval")
  func formats() throws {
    let cases: [(text: String, bits: [Int])] = [
      ("26:212:7041", Self.frame(facilityBits: 8, facility: 212, cardBits: 16, card: 7041, evenOver: 12)),
      ("34:4660:65535", Self.frame(facilityBits: 16, facility: 4660, cardBits: 16, card: 65535, evenOver: 16)),
      // H10304: 16-bit facility, 19-bit card; even parity over the first 18 data bits, odd over the last 18.
      ("37:1000:524287", Self.frame(facilityBits: 16, facility: 1000, cardBits: 19, card: 524_287, evenOver: 18)),
      ("raw:12:abc", Self.binary(0xabc, 12)),
    ]
    for c in cases {
      let recorder = Recorder()
      // A 200 ms frame gap: a stall is judged at 101 ms, past what a busy test machine holds a thread.
      let wiegand = try link(recorder, frameGap: 200)
      let card = try CardNumber(parsing: c.text)
      #expect(wiegand.forward(AccessDecision(verdict: .granted, source: .allowList, card: card)))
      waitFor(recorder, edges: 2 * c.bits.count)
      let edges = recorder.all
      #expect(edges.count == 2 * c.bits.count, "\(c.text): \(edges.count) edges")
      // Every bit: one line active, then the same line inactive; D0 for 0, D1 for 1.
      var bits: [Int] = []
      var widths: [UInt64] = [], starts: [UInt64] = []
      for i in stride(from: 0, to: edges.count - 1, by: 2) {
        let on = edges[i], off = edges[i + 1]
        #expect(on.active && !off.active && on.line == off.line)
        bits.append(on.line)
        widths.append(off.at - on.at)
        starts.append(on.at)
      }
      #expect(bits == c.bits, "\(c.text)")
      // Timing loosely (a shared test machine): at least the pulse, starts at least the interval apart.
      #expect(widths.allSatisfy { $0 >= 50_000 && $0 < 5_000_000 }, "\(c.text): widths \(widths.map { $0 / 1_000 }) µs")
      let gaps = zip(starts.dropFirst(), starts).map { $0 - $1 }
      #expect(gaps.allSatisfy { $0 >= 2_000_000 && $0 < 20_000_000 }, "\(c.text): gaps \(gaps.map { $0 / 1_000 }) µs")
      #expect(wiegand.counters.sent == 1 && wiegand.counters.errors == 0)
      wiegand.stop()
    }
  }

  @Test("two cards queued at once go out as two frames with the configured silence between them")
  func frameGap() throws {
    let recorder = Recorder()
    let wiegand = try link(recorder, frameGap: 200)  // as in formats()
    let first = try CardNumber(parsing: "26:1:2"), second = try CardNumber(parsing: "26:3:4")
    #expect(wiegand.forward(AccessDecision(verdict: .granted, source: .allowList, card: first)))
    #expect(wiegand.forward(AccessDecision(verdict: .granted, source: .allowList, card: second)))
    waitFor(recorder, edges: 4 * 26)
    let edges = recorder.all
    #expect(edges.count == 4 * 26)
    guard edges.count == 4 * 26 else { return }
    // The last edge of the first frame (bit 26 released) to the first of the second.
    let silence = edges[52].at - edges[51].at
    #expect(silence >= 200_000_000, "\(silence / 1_000) µs between the frames")
    let firstBits = stride(from: 0, to: 52, by: 2).map { edges[$0].line }
    let secondBits = stride(from: 52, to: 104, by: 2).map { edges[$0].line }
    #expect(firstBits == Self.frame(facilityBits: 8, facility: 1, cardBits: 16, card: 2, evenOver: 12))
    #expect(secondBits == Self.frame(facilityBits: 8, facility: 3, cardBits: 16, card: 4, evenOver: 12))
    wiegand.stop()
  }

  @Test(
    "a stall between two bits (after a bit, or inside its active write) breaks the frame: the bits so far stay a short read, the frame goes again whole after the frame gap; three broken attempts give up",
    arguments: [([21], 22, 1, 0), ([10], 12, 1, 0), ([21, 43, 65], 22, 2, 1)])
  func stallResends(stalls: [Int], fragmentEdges: Int, resent: UInt64, broken: UInt64) throws {
    let recorder = Recorder(stalls: Set(stalls))
    // A 400 ms frame gap: a stall is judged at 201 ms, so only the 300 ms holds here break a frame,
    // never a busy test machine's own pauses.
    let wiegand = try link(recorder, frameGap: 400)
    let card = try CardNumber(parsing: "26:1:2")
    let bits = Self.frame(facilityBits: 8, facility: 1, cardBits: 16, card: 2, evenOver: 12)
    #expect(wiegand.forward(AccessDecision(verdict: .granted, source: .allowList, card: card)))
    let total = broken == 0 ? Int(resent) * fragmentEdges + 52 : 3 * fragmentEdges
    waitFor(recorder, edges: total, seconds: 30)
    usleep(100_000)  // nothing more comes
    let edges = recorder.all
    #expect(edges.count == total)
    guard edges.count == total else { return }
    // Each attempt: the first bits of the card; a broken one is cut off and followed by the frame gap.
    var at = 0
    for attempt in 0..<(Int(resent) + Int(broken)) {
      let got = stride(from: at, to: at + fragmentEdges, by: 2).map { edges[$0].line }
      #expect(got == Array(bits.prefix(fragmentEdges / 2)), "attempt \(attempt)")
      at += fragmentEdges
      if at < total {
        let silence = edges[at].at - edges[at - 1].at
        #expect(silence >= 400_000_000, "\(silence / 1_000) µs after attempt \(attempt)")
      }
    }
    if broken == 0 {
      #expect(stride(from: at, to: total, by: 2).map { edges[$0].line } == bits)
    }
    // The last attempt is judged once its hold ends: wait for the thread to have counted it.
    for _ in 0..<4_000 where wiegand.counters.sent + wiegand.counters.broken == 0 { usleep(5_000) }
    let c = wiegand.counters
    #expect(c.resent == resent && c.broken == broken && c.sent == 1 - broken)
    #expect(wiegand.statusLine(now: SystemMonotonicClock().now()).contains("resent=\(resent) broken=\(broken)"))
    wiegand.stop()
  }

  @Test("no card number, no frame: the pass is not forwarded; a full queue refuses")
  func refusals() throws {
    let recorder = Recorder()
    let wiegand = try link(recorder, pulse: 100, interval: 20_000, frameGap: 200)  // 26 bits take half a second
    #expect(!wiegand.forward(AccessDecision(verdict: .granted, source: .allowList)))
    let card = try CardNumber(parsing: "26:1:1")
    var accepted = 0
    for _ in 0..<9 where wiegand.forward(AccessDecision(verdict: .granted, source: .allowList, card: card)) { accepted += 1 }
    #expect(accepted == 8 && wiegand.refused == 1)
    #expect(wiegand.statusLine(now: SystemMonotonicClock().now()).contains("refused=1"))
    wiegand.stop()  // after the frame in progress; the rest are dropped
    let edges = recorder.count
    usleep(50_000)
    #expect(recorder.count == edges && edges <= 2 * 26)
  }

  @Test(
    "[panel] link = wiegand: both lines required, distinct, not the relay's (17 by default); interval at least twice the pulse, the frame gap twice the interval"
  )
  func configErrors() {
    func errors(_ extra: [(String, ConfigValue)]) -> [String] {
      var entries: [(String, ConfigValue)] = [("panel.mode", .string("panel")), ("panel.link", .string("wiegand"))]
      entries += extra
      let built = ConfigSchema.build(entries.enumerated().map { ConfigEntry(key: $1.0, value: $1.1, line: $0 + 1) })
      guard case .failure(let e) = built else { return [] }
      return e.errors.map(\.key)
    }
    #expect(errors([]).contains("panel.link"))
    #expect(errors([("panel.wiegand_d0_line", .integer(5)), ("panel.wiegand_d1_line", .integer(5))]).contains("panel.wiegand_d1_line"))
    #expect(errors([("panel.wiegand_d0_line", .integer(5)), ("panel.wiegand_d1_line", .integer(17))]).contains("panel.wiegand_d1_line"))
    #expect(
      errors([
        ("panel.wiegand_d0_line", .integer(5)), ("panel.wiegand_d1_line", .integer(6)), ("panel.wiegand_pulse_us", .integer(100)),
        ("panel.wiegand_interval_us", .integer(150)),
      ]) == ["panel.wiegand_interval_us"])
    #expect(
      errors([
        ("panel.wiegand_d0_line", .integer(5)), ("panel.wiegand_d1_line", .integer(6)), ("panel.wiegand_interval_us", .integer(15_000)),
      ]) == ["panel.wiegand_frame_gap_ms"])
    #expect(errors([("panel.wiegand_d0_line", .integer(5)), ("panel.wiegand_d1_line", .integer(6))]) == [])
  }
}
