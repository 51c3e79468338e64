import CAllocCounter
import ScanCore
import ScanLinux
import ScanService
import Testing

/// A clock that moves 0.5 ms on every reading: the budget is spent the same way on every run,
/// however fast the machine.
final class SteppingClock: MonotonicClock {
  private var nanoseconds: UInt64 = 0
  func now() -> Instant {
    nanoseconds &+= 500_000
    return Instant(nanoseconds: nanoseconds)
  }
}

/// The decode strategy on the frame path: scaled, inverted and mirrored views written into the
/// plane allocated at startup, the tracked region, the budget measured on the real clock, and the
/// merge of several attempts' symbols make no heap allocation per frame.
@Suite(.serialized) struct StrategyAllocationTests {
  @Test("the reader's strategy within its budget: 0 allocations over 1,000 frames after warm-up")
  func strategyDoesNotAllocate() throws {
    try measure(DecodeAttempt.readerDefault, frames: HotPathAllocationTests.frames(), scale: 1)
  }

  @Test("the large-frame order at 1280×720 (downscaled view, full-resolution tiles, tracked region): 0 allocations")
  func largeStrategyDoesNotAllocate() throws {
    // The same scenes at twice the size (each pixel doubled).
    let small = HotPathAllocationTests.frames()
    let w = HotPathAllocationTests.width, h = HotPathAllocationTests.height
    let frames = small.map { f in
      var out = [UInt8](repeating: 0, count: w * h * 4)
      for y in 0..<(h * 2) { for x in 0..<(w * 2) { out[y * w * 2 + x] = f[(y / 2) * w + x / 2] } }
      return out
    }
    try measure(DecodeAttempt.readerLarge(width: w * 2), frames: frames, scale: 2)
  }

  func measure(_ attempts: [DecodeAttempt], frames: [[UInt8]], scale: Int) throws {
    var settings = DecodeSettings()
    settings.attempts = attempts
    settings.variantMode = .alternate
    settings.budgetMicroseconds = 4_000
    // Quiet frames after 20 ms of the stepping clock without a change or a code (the script's
    // codes keep it busy: the tracked region outlives the empty scenes between them; the still
    // stretch below goes quiet).
    settings.quietAfterMicroseconds = 20_000
    let width = HotPathAllocationTests.width * scale, height = HotPathAllocationTests.height * scale
    var pipeline = DecodePipeline(
      decoder: try ZXingDecoder(arenaBytes: 32 << 20, capacity: 8), settings: settings, maxWidth: width, maxHeight: height)
    var results = DecodeResults(capacity: 8, payloadBytesMax: 1024)
    let clock = SteppingClock()
    // Scenes of 10 frames each: empty, a code, empty, a code, empty, an inverted code.
    let script = [0, 1, 0, 2, 0, 3].flatMap { Array(repeating: $0, count: 10) }
    var sequence: UInt64 = 0
    var found = 0
    func run(_ count: Int, mode: VariantMode? = nil) {
      for k in 0..<count {
        frames[script[k % script.count]].withUnsafeBytes { raw in
          sequence += 1
          let frame = LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: sequence)
          pipeline.decode(frame, into: &results, clock: clock, mode: mode)
          found += results.count
        }
      }
    }
    // Warm-up: every attempt on every scene (each scene's first frame of the script), then the
    // reader's rotation, tracked region included.
    for first in stride(from: 0, to: script.count, by: 10) {
      frames[script[first]].withUnsafeBytes { raw in
        sequence += 1
        let frame = LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: sequence)
        pipeline.decode(frame, into: &results, clock: clock, mode: .retry)
      }
    }
    run(120)
    found = 0
    let runsBefore = pipeline.decodeCalls
    alloc_counter_reset()
    run(1_000)
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations (\(alloc_counter_bytes()) bytes) in 1,000 frames")
    #expect(found >= 300, "the strategy read \(found) codes in 1,000 frames")
    #expect(pipeline.decodeCalls - runsBefore > 1_000, "more than one attempt per frame on average")
    #expect(pipeline.attemptRuns[1] > 0, "the tracked region was tried")
    // A still, empty picture: the change test and the quiet turn allocate nothing either.
    // (The last code's tracked region keeps the reader busy for its second of the stepping
    // clock, or `TrackedRegion.framesKept` frames, before the picture goes quiet.)
    var quiet = 0
    alloc_counter_reset()
    for _ in 0..<450 {
      frames[0].withUnsafeBytes { raw in
        sequence += 1
        let frame = LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: sequence)
        pipeline.decode(frame, into: &results, clock: clock)
        if pipeline.lastFrame.quiet { quiet += 1 }
      }
    }
    let quietAllocations = alloc_counter_mallocs()
    #expect(quietAllocations == 0, "\(quietAllocations) allocations in 450 frames of a still picture")
    #expect(quiet >= 250, "\(quiet) of 450 frames of a still picture were quiet")
    #expect(pipeline.decoder.stats.arenaOverflows == 0)
  }
}
