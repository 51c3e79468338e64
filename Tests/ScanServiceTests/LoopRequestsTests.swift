import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The loop's request queue on its own: the order requests apply in, coalescing, its capacity,
/// and what happens when it is full.
@Suite struct LoopRequestQueueTests {
  final class Sink: SnapshotSink {
    func deliver(_ snapshot: SnapshotBuffer) -> Bool { true }
  }

  /// A request as text, to compare what comes out with what was posted.
  static func describe(_ request: LoopRequest) -> String {
    switch request {
    case .stop: "stop"
    case .open(let milliseconds, let by): "open \(milliseconds.map(String.init) ?? "default") by \(by.name)"
    case .reloadAllowList: "reload"
    case .releaseStrikeForExit: "release"
    case .relockStrike: "relock"
    case .holdStrike: "hold"
    case .endStrikeHold: "end-hold"
    case .fireRelease(let on): "fire \(on)"
    case .lockdown(let on): "lockdown \(on)"
    case .accessStaticOnly(let on): "static-only \(on)"
    case .secondFactor(let id, let verdict): "second-factor \(id) \(verdict.name)"
    case .play(let pattern): "play \(pattern.totalMilliseconds)"
    case .holdBuzzer(let on): "hold-buzzer \(on)"
    case .snapshot: "snapshot"
    }
  }

  static func drain(_ queue: LoopRequests) -> [String] {
    var out: [String] = []
    while let request = queue.next() { out.append(describe(request)) }
    return out
  }

  @Test("requests apply in the loop's order, whoever posted first")
  func order() {
    let queue = LoopRequests()
    #expect(queue.post(.holdBuzzer(true)))
    #expect(queue.post(.snapshot(Sink())))
    #expect(queue.post(.play(BuzzerPattern([70, 30, 70]))))
    #expect(queue.post(.endStrikeHold))
    #expect(queue.post(.relockStrike))
    #expect(queue.post(.secondFactor(id: 7, verdict: .granted)))
    #expect(queue.post(.accessStaticOnly(true)))
    #expect(queue.post(.open(milliseconds: 500)))
    #expect(queue.post(.reloadAllowList))
    #expect(queue.post(.stop))
    #expect(queue.count == 10)
    #expect(
      Self.drain(queue) == [
        "stop", "open 500 by fleet", "reload", "relock", "end-hold", "static-only true", "second-factor 7 granted", "play 170",
        "hold-buzzer true", "snapshot",
      ])
    #expect(queue.count == 0 && queue.next() == nil)
  }

  @Test("a kind asked twice before the loop drains applies once, with the later value")
  func coalescing() {
    let queue = LoopRequests()
    queue.post(.relockStrike)
    queue.post(.reloadAllowList)
    queue.post(.open(milliseconds: 800))
    queue.post(.relockStrike)
    queue.post(.holdBuzzer(true))
    queue.post(.reloadAllowList)
    queue.post(.open(milliseconds: nil))
    queue.post(.holdBuzzer(false))
    #expect(queue.count == 4 && queue.coalesced == 4 && queue.refused == 0)
    #expect(Self.drain(queue) == ["open default by fleet", "reload", "relock", "hold-buzzer false"])
    // Drained: the next iteration's requests start afresh.
    queue.post(.relockStrike)
    #expect(Self.drain(queue) == ["relock"])
    #expect(queue.coalesced == 4)
  }

  @Test("the loop's queue has a slot per kind: every kind asked twice in one iteration fits")
  func defaultCapacity() {
    let queue = LoopRequests()
    #expect(queue.capacity == LoopRequest.Kind.allCases.count)
    let all: [LoopRequest] = [
      .stop, .open(milliseconds: nil), .reloadAllowList, .releaseStrikeForExit, .relockStrike, .holdStrike,
      .endStrikeHold, .fireRelease(true), .lockdown(true), .accessStaticOnly(false), .secondFactor(id: 1, verdict: .deniedPin),
      .play(.grant), .holdBuzzer(true),
      .snapshot(Sink()),
    ]
    #expect(Set(all.map { $0.kind }).count == LoopRequest.Kind.allCases.count)
    for request in all.reversed() + all { #expect(queue.post(request)) }
    #expect(queue.count == queue.capacity && queue.refused == 0 && queue.coalesced == UInt64(all.count))
    #expect(Self.drain(queue).count == all.count)
  }

  @Test("full: a new kind is refused (post says so, refused counts it), nothing pending is lost, a pending kind still coalesces")
  func full() {
    let queue = LoopRequests(capacity: 2)
    #expect(queue.post(.play(.deny)))
    #expect(queue.post(.relockStrike))
    // A request of a kind earlier in the order does not push out a pending one either.
    #expect(!queue.post(.stop))
    #expect(!queue.post(.holdBuzzer(true)))
    #expect(queue.refused == 2 && queue.count == 2)
    #expect(queue.post(.play(.grant)))
    #expect(queue.coalesced == 1 && queue.refused == 2)
    #expect(Self.drain(queue) == ["relock", "play 120"])
    // Room again once drained.
    #expect(queue.post(.stop))
    #expect(Self.drain(queue) == ["stop"])
  }
}
