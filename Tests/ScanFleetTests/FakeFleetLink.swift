import ScanAudit
import ScanBase
import ScanFleet
import ScanSim

let logA = String(repeating: "a", count: 32)
let logB = String(repeating: "b", count: 32)

/// A fake fleet link around a `FleetSession`, driven on a manual clock: an audit log holding
/// records 1...`newest`, a broker that answers, refuses or stays silent, and a record of what the
/// session had done (connections and what each published, state-file saves, drops). Acknowledgements
/// are given by the test (`ack`), in the order it chooses, unless `autoAck`.
final class FakeFleetLink {
  enum Broker { case up, refusing, silent }

  let clock = ManualClock()
  var session: FleetSession
  /// The log at the log's path.
  var logID: String?
  var adoptedThrough: Int64? = nil
  var newest: Int64
  var writer = WriterLog.notHere
  var written: Int64? = nil
  var broker = Broker.up
  /// Acknowledge every publish in order at the end of each turn.
  var autoAck = false

  private var hasClient = false
  private var nextMid: Int32 = 1
  private var midOf: [Int64: Int32] = [:]
  /// Each connection attempt: when, to which broker, and the sequences published on it, in order.
  private(set) var attempts: [(at: Instant, broker: String)] = []
  private(set) var connections: [[Int64]] = []
  private(set) var saves: [FleetAckMark] = []
  private(set) var drops: [(at: Instant, reason: FleetDrop)] = []
  private(set) var notes: [String] = []
  private(set) var offlineAt: [Instant] = []
  private(set) var statesAt: [Instant] = []
  /// When each record was published (every connection).
  private(set) var publishedAt: [Instant] = []
  private(set) var finished: Bool? = nil
  /// Every action, in order, with the time it was asked for.
  private(set) var actions: [(at: Instant, action: FleetAction)] = []

  init(
    settings: FleetSettings = FakeFleetLink.settings(), saved: FleetAckMark = FleetAckMark(logID: nil, acked: 0),
    logID: String? = logA, newest: Int64, contactAgeSeconds: Int64? = nil
  ) {
    self.logID = logID
    self.newest = newest
    session = FleetSession(settings: settings, now: clock.now(), saved: saved, lastContactAgeSeconds: contactAgeSeconds)
  }

  static func settings(
    batch: Int = 100, perSecond: Int = 100_000, keepalive: Int = 5, maxOffline: Int = 0, brokers: [String] = ["mqtt://a"]
  ) -> FleetSettings {
    var s = FleetSettings()
    s.brokers = brokers
    s.readerID = "door-1"
    s.batchRecords = batch
    s.eventsPerSecondMax = perSecond
    s.keepaliveSeconds = keepalive
    s.maxOfflineSeconds = maxOffline
    return s
  }

  var now: Instant { clock.now() }
  /// Milliseconds since `start`.
  func ms(_ instant: Instant, since start: Instant) -> Int { instant.milliseconds(since: start) }
  /// Every sequence published, over every connection.
  var published: [Int64] { connections.flatMap { $0 } }

  /// One turn: what the session asks for now, then the network for as long as it says.
  func turn() {
    let now = clock.now()
    while true {
      let action = session.next(now: now, writer: writer, written: written)
      if case .wait(let until) = action {
        pump(now)
        clock.advance(milliseconds: until.milliseconds(since: now))
        return
      }
      actions.append((now, action))
      perform(action, now)
      if finished != nil { return }
    }
  }

  func run(milliseconds: Int) {
    let end = clock.now().adding(milliseconds: milliseconds)
    while clock.now() < end && finished == nil { turn() }
  }

  /// Turns until `condition` holds (at most a simulated minute).
  func run(until condition: () -> Bool) {
    let end = clock.now().adding(milliseconds: 60_000)
    while !condition() && clock.now() < end && finished == nil { turn() }
  }

  /// PUBACKs for these records on the current connection, in this order.
  func ack(_ sequences: Int64..., accepted: Bool = true) {
    for s in sequences {
      guard let mid = midOf[s] else { continue }
      session.puback(mid: mid, accepted: accepted)
    }
  }

  private func perform(_ action: FleetAction, _ now: Instant) {
    switch action {
    case .openLog: session.logOpened()
    case .checkLog(let identify):
      if identify,
        let note = session.logIdentified(id: logID, adoptedThrough: adoptedThrough, newest: newest, writer: writer, now: now)
      {
        notes.append(note)
      }
    case .closeLog: break
    case .connect(let url):
      hasClient = true
      nextMid = 1  // a new client numbers its messages from 1 again
      midOf = [:]
      attempts.append((now, url))
      connections.append([])
    case .disconnect(let reason):
      hasClient = false
      drops.append((now, reason))
    case .acknowledged(let mark, let save): if save { saves.append(mark) }
    case .publish(let from, let limit):
      let last = min(newest, from + Int64(limit) - 1)
      session.recordsRead(Int(max(0, last - from + 1)), now: now)
      guard from <= last else { return }
      for sequence in from...last {
        midOf[sequence] = nextMid
        connections[connections.count - 1].append(sequence)
        publishedAt.append(now)
        session.published(sequence: sequence, mid: nextMid, now: now)
        nextMid += 1
      }
    case .publishState: statesAt.append(now)
    case .saveContact: break
    case .offline: offlineAt.append(now)
    case .checkDrained: session.logHolds(through: newest, now: now)
    case .finish(let sayOffline): finished = sayOffline
    case .wait: break
    }
  }

  private func pump(_ now: Instant) {
    guard hasClient else { return }
    switch broker {
    case .up:
      session.connected(now: now)
      if autoAck, let current = connections.last {
        for s in current { ack(s) }
      }
    case .refusing:
      hasClient = false
      session.disconnected(now: now)
    case .silent: break
    }
  }
}
