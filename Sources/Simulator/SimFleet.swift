import ScanCore
import ScanSim

/// The fleet link in the simulated world: the reader's own `FleetSession` (every rule of the
/// link: where to resume, which acknowledgements advance, backoff, timeouts) driven as the link's
/// thread drives it (`FleetLinkRun`: ask, do, report), the audit log and the link's state file on
/// the simulated disk, and a broker between the reader and one consumer.
///
/// The broker keeps what it accepted for the consumer (a persistent session: a broker restart
/// loses no accepted message) and lies the ways brokers and networks do: packets take 5 to 40 ms
/// each way, so acknowledgements arrive out of order; some acknowledgements come twice and some
/// name a message never sent; it goes down and comes back (the seed's actions), refuses publishes
/// for a while (an ACL changed), and the connection is cut (a switch, a Wi-Fi roam), losing what
/// was in flight both ways. A kill -9 loses what the reader had not yet been told, not what its
/// kernel had already sent. Each acknowledged point is written when the session says so (the
/// real link batches them, 10 s or 256 records: after a kill it publishes more again, which the
/// consumer de-duplicates); a full disk keeps the older one.
final class SimFleet {
  static let logID = "sim-log"
  static let settings: FleetSettings = {
    var s = FleetSettings()
    s.brokers = ["mqtt://broker.sim"]
    s.readerID = "sim"
    return s
  }()

  /// A publish or its acknowledgement on the wire.
  struct Packet {
    var arrives: Instant
    var mid: Int32
    var sequence: Int64
    var text: String
  }

  /// This connection attempt's client and what is on its wire.
  struct Connection {
    var ready = false
    /// Gone without the link noticing (the `fleet-misses-lost-connection` mutation): nothing
    /// crosses it, and only the session's own timeouts give it up.
    var dead = false
    /// When the broker answers the CONNECT (CONNACK, or the refusal of a broker that is down).
    var answers: Instant
    var nextMid: Int32 = 1
    var toBroker: [Packet] = []
    var toReader: [Packet] = []
    /// Mids published on this connection and not yet acknowledged, oldest first (what the
    /// `fleet-trusts-any-puback` mutation acknowledges instead of the mid the broker named).
    var unacked: [Int32] = []
  }

  let mutation: SimMutation?
  let trace: SimTrace
  /// The network's delays and lies (its own stream: the seed's actions do not depend on them).
  var random: SplitMix

  // The disk: the audit log (sequence = index + 1, with when it was logged) and the link's state file.
  private(set) var log: [(text: String, at: Instant)] = []
  private(set) var savedMark = FleetAckMark(logID: SimFleet.logID, acked: 0)
  var diskFull = false

  // The reader's link.
  private(set) var session: FleetSession
  var connection: Connection? = nil
  /// Packets the reader's kernel had sent when it was killed: they still reach the broker.
  var orphans: [Packet] = []
  /// The link's thread waits until then, or until the network has something for it.
  var waitUntil = Instant(nanoseconds: 0)
  var woken = false
  /// The highest sequence published (what the `fleet-saves-sent-mark` mutation writes).
  var highestPublished: Int64 = 0

  // The broker and its consumer.
  var brokerUp = true
  var refusing = false
  /// What the broker accepted, by sequence (the consumer's view, de-duplicated by log id and sequence).
  private(set) var accepted: [Int64: String] = [:]
  /// From then on the world counts as steady (while the broker is up and accepting): each fault
  /// pushes it out by as long as the link may take to recover from it (`fault`).
  var steadyFrom: Instant
  /// The invariants' progress: every sequence through this was checked accepted.
  var verifiedThrough: Int64 = 0
  /// Records logged 20 s ago or earlier: `log[..<due]` (the log's times only go forward).
  var due = 0
  var counts = (connections: 0, drops: 0, duplicates: 0, steadyTicks: 0)

  init(seed: UInt64, now: Instant, mutation: SimMutation?, trace: SimTrace) {
    self.mutation = mutation
    self.trace = trace
    random = SplitMix(seed: seed ^ 0xF1EE_7B20_CE2)
    session = FleetSession(settings: Self.settings, now: now, saved: savedMark)
    steadyFrom = now
    log.reserveCapacity(4_096)
  }

  /// What the run's fleet did, for its summary line.
  var summary: String {
    "fleet: \(log.count) records logged, acknowledged through \(session.acknowledgedThrough), \(counts.connections) connections, "
      + "\(counts.drops) dropped, \(counts.duplicates) records again, \(counts.steadyTicks * SimWorld.tickMilliseconds / 1_000) s checked steady"
  }

  /// A record the audit log wrote (durably: the fleet reads only what the log committed).
  func logged(_ text: String, at now: Instant) {
    log.append((text, now))
  }

  /// The reader torn down (kill -9) and started again: the session from the state file, no client.
  func restart(now: Instant) {
    orphans += connection?.toBroker ?? []
    connection = nil
    session = FleetSession(settings: Self.settings, now: now, saved: savedMark)
    fault(now, recovery: 5)  // a new session connects at once and publishes from its state file's point
    waitUntil = now
  }

  func setBroker(up: Bool, now: Instant) {
    guard up != brokerUp else { return }
    brokerUp = up
    fault(now, recovery: 30)  // the link may be 15 s into its backoff
    trace.add(up ? "broker up" : "broker down")
  }

  func setRefusing(_ on: Bool, now: Instant) {
    guard on != refusing else { return }
    refusing = on
    fault(now, recovery: 10)
    trace.add(on ? "broker refuses publishes" : "broker accepts publishes")
  }

  /// The connection cut: what was in flight either way is lost.
  func cut(now: Instant) {
    fault(now, recovery: 10)  // a connection that was up reconnects after 1 s
    trace.add("network cut")
    guard connection != nil else { return }
    lose(now: now, why: "connection lost")
  }

  /// An established connection is gone: the link is told, unless the mutation keeps it unaware.
  private func lose(now: Instant, why: String) {
    if mutation == .fleetMissesLostConnection && connection?.ready == true {
      connection!.dead = true
      return
    }
    connection = nil
    lost(now: now, why: why)
  }

  private func fault(_ now: Instant, recovery seconds: Int) {
    steadyFrom = max(steadyFrom, now.adding(milliseconds: seconds * 1_000))
  }

  private func lost(now: Instant, why: String) {
    counts.drops += 1
    woken = true
    trace.add("fleet: \(why) (acknowledged through \(session.acknowledgedThrough))")
    session.disconnected(now: now)
  }

  private func delay(_ now: Instant) -> Instant { now.adding(milliseconds: 5 * (1 + Int(random.next() % 8))) }
  private func oneIn(_ n: UInt64) -> Bool { random.next() % n == 0 }

  /// One tick: the wire, then the link's turn. Returns a violation of the fleet's invariants.
  func tick(now: Instant) -> (String, String)? {
    if let v = deliverToBroker(now: now) { return v }
    deliverToReader(now: now)
    if woken || now >= waitUntil { turn(now: now) }
    return check(now: now)
  }

  /// Takes the packets of `queue` that have arrived by `now` (in the order they were sent).
  private static func arrived(_ queue: inout [Packet], by now: Instant) -> [Packet] {
    guard !queue.isEmpty else { return [] }
    var out: [Packet] = []
    queue.removeAll { p in
      guard p.arrives <= now else { return false }
      out.append(p)
      return true
    }
    return out
  }

  private func deliverToBroker(now: Instant) -> (String, String)? {
    // What a killed reader's kernel had sent: accepted, its PUBACK to a socket that is gone.
    for p in Self.arrived(&orphans, by: now) where brokerUp && !refusing {
      if let v = accept(p) { return v }
    }
    guard connection != nil else { return nil }
    if connection!.dead {
      connection!.toBroker.removeAll()
      return nil
    }
    if !connection!.ready && connection!.answers <= now {
      guard brokerUp else {
        connection = nil
        lost(now: now, why: "cannot connect")
        return nil
      }
      connection!.ready = true
      counts.connections += 1
    }
    for p in Self.arrived(&connection!.toBroker, by: now) where brokerUp {
      guard !refusing else {
        connection?.toReader.append(Packet(arrives: delay(now), mid: -p.mid, sequence: p.sequence, text: ""))
        continue
      }
      if let v = accept(p) { return v }
      connection?.toReader.append(Packet(arrives: delay(now), mid: p.mid, sequence: p.sequence, text: ""))
      // Brokers and networks lie: a PUBACK twice, or one for a message never sent.
      if oneIn(20) { connection?.toReader.append(Packet(arrives: delay(now), mid: p.mid, sequence: p.sequence, text: "")) }
      if oneIn(50) { connection?.toReader.append(Packet(arrives: delay(now), mid: p.mid &+ 1_000, sequence: 0, text: "")) }
    }
    if !brokerUp && connection!.ready { lose(now: now, why: "connection lost (broker down)") }
    return nil
  }

  /// The broker takes a publish for the consumer (who de-duplicates by sequence).
  private func accept(_ p: Packet) -> (String, String)? {
    let index = Int(p.sequence) - 1
    guard index >= 0 && index < log.count && log[index].text == p.text else {
      let logged = index >= 0 && index < log.count ? log[index].text : "nothing"
      return ("fleet-exactly-as-logged", "the broker got record \(p.sequence) as \"\(p.text)\", logged as \"\(logged)\"")
    }
    if accepted[p.sequence] != nil { counts.duplicates += 1 }
    accepted[p.sequence] = p.text
    return nil
  }

  private func deliverToReader(now: Instant) {
    guard connection?.ready == true && connection?.dead == false else { return }
    if !session.isConnected { woken = true }  // the CONNACK
    let acks = Self.arrived(&connection!.toReader, by: now)
    if !acks.isEmpty { woken = true }
    for ack in acks {
      var mid = abs(ack.mid)
      if mutation == .fleetTrustsAnyPuback, let oldest = connection!.unacked.first { mid = oldest }
      if let i = connection!.unacked.firstIndex(of: mid) { connection!.unacked.remove(at: i) }
      session.puback(mid: mid, accepted: ack.mid > 0)
    }
    // The client says it is connected every turn it is; the first time, the session resumes.
    if session.connected(now: now) { trace.add("fleet: connected, resuming after \(session.acknowledgedThrough)") }
  }

  /// The link's turn: ask the session, do it, report, until it says wait.
  private func turn(now: Instant) {
    let written = Int64(log.count)
    for _ in 0..<1_000 {
      let action = session.next(now: now, writer: .open(Self.logID), written: written)
      switch action {
      case .wait(let until):
        (waitUntil, woken) = (until, false)
        return
      case .finish: return
      case .openLog: session.logOpened()
      case .checkLog(let identify):
        if identify {
          _ = session.logIdentified(id: Self.logID, adoptedThrough: nil, newest: written, writer: .open(Self.logID), now: now)
        }
      case .closeLog, .publishState, .saveContact, .checkDrained: break
      case .offline: trace.add("fleet: offline policy in force")
      case .connect:
        connection = Connection(answers: delay(now))
      case .disconnect(let reason):
        connection = nil
        counts.drops += 1
        trace.add("fleet: gave up the connection: \(reason.text(broker: "broker.sim", settings: Self.settings))")
      case .acknowledged(let mark, let save):
        guard save, !diskFull else { break }  // a full disk keeps the older point: records published again, none lost
        savedMark = mutation == .fleetSavesSentMark ? FleetAckMark(logID: mark.logID, acked: max(mark.acked, highestPublished)) : mark
      case .publish(let from, let limit):
        publish(from: from, limit: limit, now: now)
      }
    }
  }

  private func publish(from: Int64, limit: Int, now: Instant) {
    let first = Int(from) - 1
    let end = min(log.count, first + limit)
    session.recordsRead(max(0, end - first), now: now)
    guard first < end, var c = connection else { return }
    for index in first..<end {
      let mid = c.nextMid
      c.nextMid = c.nextMid == Int32.max ? 1 : c.nextMid + 1
      let sequence = Int64(index + 1)
      // The `fleet-reads-next-record` mutation reads sequence N at index N (one past it).
      let read = mutation == .fleetReadsNextRecord ? index + 1 : index
      c.toBroker.append(Packet(arrives: delay(now), mid: mid, sequence: sequence, text: read < log.count ? log[read].text : ""))
      c.unacked.append(mid)
      highestPublished = max(highestPublished, sequence)
      session.published(sequence: sequence, mid: mid, now: now)
      if mutation == .fleetAcksOnPublish { session.puback(mid: mid, accepted: true) }
    }
    connection = c
  }

  /// The fleet's invariants.
  private func check(now: Instant) -> (String, String)? {
    // What the reader counts as acknowledged (in memory, and in its state file) the broker has.
    let bound = max(session.acknowledgedThrough, savedMark.acked)
    while verifiedThrough < bound {
      guard accepted[verifiedThrough + 1] != nil else {
        return (
          "fleet-acked-was-accepted",
          "record \(verifiedThrough + 1) counts as acknowledged (session \(session.acknowledgedThrough), state file \(savedMark.acked)) but the broker never accepted it"
        )
      }
      verifiedThrough += 1
    }
    // A steady world drains the log: once the link has had time to recover from the last fault
    // (30 s after the broker came back, 10 s after a cut or a refusal, 5 s after a restart), every
    // record logged 20 s ago or earlier is acknowledged.
    while due < log.count && now.milliseconds(since: log[due].at) >= 20_000 { due += 1 }
    if brokerUp && !refusing && now >= steadyFrom {
      counts.steadyTicks += 1
      if session.acknowledgedThrough < due {
        return (
          "fleet-catches-up",
          "steady, and records \(session.acknowledgedThrough + 1)...\(due) (logged 20 s ago or more) are not acknowledged"
        )
      }
    }
    return nil
  }
}
