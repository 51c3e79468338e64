import CAllocCounter
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Testing

/// The keyed tag (HMAC-SHA-256 under the tag key) is computed on the loop's thread for every
/// decision and every "left" event: with a tag key, the engine still allocates nothing.
@Suite(.serialized) struct TagAllocationTests {
  @Test("engine with a tag key and the real decoder: 0 allocations over 1,200 frames after warm-up")
  func taggedEngineDoesNotAllocate() throws {
    let width = HotPathAllocationTests.width, height = HotPathAllocationTests.height
    let clock = ManualClock()
    let relay = RecordingOutputLine(name: "relay", clock: clock, capacity: 100_000)
    let buzzer = RecordingOutputLine(name: "buzzer", clock: clock, capacity: 100_000)
    let ring = EventRing(capacity: 1024)
    let decoder = try ZXingDecoder(arenaBytes: 16 << 20, capacity: 8)
    var engine = ScanEngine(
      settings: HotPathAllocationTests.settings(), decoder: decoder, relay: relay, buzzer: buzzer, clock: clock, wall: clock,
      digester: SodiumDigester(), events: ring, maxWidth: width, maxHeight: height)
    _ = engine.allowList.load(Array("text:ALICE-0001\ntext:DAVE-0004\n".utf8), digester: SodiumDigester(), nowUnixSeconds: clock.unixSeconds())
    engine.tagger = TagKey.ephemeral()
    var source = ScriptedFrameSource(
      width: width, height: height, frames: HotPathAllocationTests.frames(), script: HotPathAllocationTests.script, loops: true,
      clock: clock)
    func run(_ frames: Int) throws {
      for _ in 0..<frames {
        _ = try source.withNextFrame(timeoutMilliseconds: 0) { engine.process($0) }
        for _ in 0..<33 {
          clock.advance(milliseconds: 1)
          engine.tick()
        }
      }
    }
    try run(240)
    let decisionsBefore = engine.stats.grants + engine.stats.denies
    alloc_counter_reset()
    try run(1_200)
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations (\(alloc_counter_bytes()) bytes) in 1,200 frames")
    #expect(engine.stats.grants + engine.stats.denies - decisionsBefore >= 60)
    #expect(engine.lastDecision.map { $0.tag != .zero } == true, "the decisions carried a tag")
  }
}
