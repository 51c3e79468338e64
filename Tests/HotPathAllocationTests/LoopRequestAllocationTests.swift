import CAllocCounter
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Testing

/// Requests on the loop's queue: several a turn, posted out of the loop's order and asked twice
/// (so each post shifts or replaces pending ones and each take shifts the rest), allocate nothing.
@Suite(.serialized) struct LoopRequestAllocationTests {
  /// Asks for the buzzer's hold and a pattern, twice each, and the strike's relock and hold's end
  /// (no-ops with the strike locked) every turn, the later kinds first.
  final class Asker: PollParticipant {
    var turns = 0
    let short = BuzzerPattern([20])
    var pollCapacity: Int { 0 }
    func prepare(_ poll: PollSet, now: Instant) -> Instant? { nil }
    func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
      turns &+= 1
      let on = turns % 4 < 2
      requests.post(.holdBuzzer(!on))
      requests.post(.play(short))
      requests.post(.accessStaticOnly(false))
      requests.post(.endStrikeHold)
      requests.post(.relockStrike)
      requests.post(.holdBuzzer(on))
      requests.post(.play(.grant))
    }
  }

  @Test("several requests a turn, out of order and coalesced, allocate nothing on the loop")
  func requestsDoNotAllocate() throws {
    let clock = SystemMonotonicClock()
    var loop = try HotPathAllocationTests.emptyFrameLoop(
      clock: clock, ring: EventRing(capacity: 1024), relay: RecordingOutputLine(name: "relay", clock: clock, capacity: 1_000))
    let asker = Asker()
    loop.register(asker)
    for _ in 0..<200 { loop.runOnce(maximumWaitMilliseconds: 1) }
    let before = asker.turns
    let (allocations, iterations) = HotPathAllocationTests.measure(
      &loop, iterations: 1_200, until: clock.now().adding(milliseconds: 100), clock: clock)
    #expect(allocations == 0, "\(allocations) allocations in \(iterations) loop iterations posting 7 requests each")
    #expect(asker.turns - before >= 1_200)
  }

  @Test("posting to and draining a queue directly allocates nothing")
  func queueDoesNotAllocate() {
    let queue = LoopRequests()
    let pattern = BuzzerPattern([30, 30])
    func turn(_ k: Int) {
      queue.post(.holdBuzzer(k % 2 == 0))
      queue.post(.play(pattern))
      queue.post(.relockStrike)
      queue.post(.open(milliseconds: k % 3 == 0 ? nil : 500))
      queue.post(.stop)
      queue.post(.relockStrike)
      while queue.next() != nil {}
    }
    for k in 0..<100 { turn(k) }
    alloc_counter_reset()
    for k in 0..<10_000 { turn(k) }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 10,000 turns of 6 posts and a drain")
    #expect(queue.coalesced == 10_100 && queue.refused == 0)
  }
}
