import ScanBase
import ScanReader
import Testing

/// Two cameras on one decoder, on hand-written instants: the turn-taking the loop follows, without
/// a thread or a timing (what wave 3's "two cameras" test measured under load).
@Suite struct CameraTurnsTests {
  static func at(_ ms: Int) -> Instant { Instant(nanoseconds: 1_000_000_000).adding(milliseconds: ms) }

  /// Frames from both cameras in phase every 100 ms, each decode taking 250 ms: which camera's
  /// frames go to the decoder (a frame finding it busy is skipped, as the workers do).
  static func decoded(frames: Int, decodeMilliseconds: Int, paired: Bool = true) -> [Int] {
    var turns = CameraTurns()
    var busyUntil = -1
    var out: [Int] = []
    for f in 0..<frames {
      for camera in 0..<(paired ? 2 : 1) {
        let now = at(f * 100)
        if turns.takesTurn(camera, now: now, paired: paired) && f * 100 >= busyUntil {
          turns.submitted(camera)
          busyUntil = f * 100 + decodeMilliseconds
          out.append(camera)
        }
        turns.delivered(camera, at: now)
      }
    }
    return out
  }

  @Test("two cameras in phase, each decode longer than a frame: the decoder alternates, neither starves")
  func alternate() {
    let served = Self.decoded(frames: 40, decodeMilliseconds: 250)
    #expect(served.filter { $0 == 0 }.count >= 5 && served.filter { $0 == 1 }.count >= 5, "\(served)")
    #expect(zip(served, served.dropFirst()).allSatisfy { $0 != $1 }, "each camera waits while the other delivers: \(served)")
  }

  @Test("one camera always takes its turn; a silent second camera stops counting after 500 ms")
  func oneCamera() {
    #expect(Self.decoded(frames: 10, decodeMilliseconds: 50, paired: false) == Array(repeating: 0, count: 10))
    var turns = CameraTurns()
    turns.submitted(0)
    #expect(turns.takesTurn(0, now: Self.at(0), paired: true), "the other camera never delivered")
    turns.delivered(1, at: Self.at(0))
    #expect(!turns.takesTurn(0, now: Self.at(400), paired: true), "the other delivered 400 ms ago: its turn")
    #expect(turns.takesTurn(0, now: Self.at(501), paired: true), "the other has been silent past 500 ms")
    #expect(turns.takesTurn(1, now: Self.at(400), paired: true) && turns.inFlight == 0 && turns.lastDecoded == 0)
  }
}
