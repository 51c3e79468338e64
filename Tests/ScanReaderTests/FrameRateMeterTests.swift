import ScanBase
import ScanReader
import Testing

@Suite struct FrameRateMeterTests {
  static func at(_ milliseconds: Int) -> Instant { Instant(nanoseconds: 0).adding(milliseconds: 5_000 + milliseconds) }

  static func update(_ meter: inout FrameRateMeter, _ frames: UInt64, _ milliseconds: Int) -> Bool {
    meter.update(frames: frames, now: at(milliseconds))
  }

  @Test("the rate is measured once a window of a second or more closes, over that window only")
  func windows() {
    var meter = FrameRateMeter(start: Self.at(0))
    #expect(meter.perSecondTimes100 == 0)
    #expect(!Self.update(&meter, 29, 999))  // still open: nothing measured yet
    #expect(meter.perSecondTimes100 == 0)
    #expect(Self.update(&meter, 30, 1_000))
    #expect(meter.perSecondTimes100 == 3_000)  // 30 frames in 1.000 s
    // The next window: 25 frames more in 2.5 s (a loop that slept) is 10.00 fps, not 55 / 3.5 s.
    #expect(!Self.update(&meter, 40, 1_500))
    #expect(Self.update(&meter, 55, 3_500))
    #expect(meter.perSecondTimes100 == 1_000)
    // 2 frames in 1.2 s: 1.66 fps, truncated to hundredths.
    #expect(Self.update(&meter, 57, 4_700))
    #expect(meter.perSecondTimes100 == 166)
    // No frames at all (the camera lost): 0.
    #expect(Self.update(&meter, 57, 6_000))
    #expect(meter.perSecondTimes100 == 0)
  }
}
