import ScanAudit
import ScanBase
import ScanFleet
import ScanSim
import Testing

/// The fleet link's rules (docs/fleet.md, "The link's rules"), on a manual clock: every expectation
/// below is what the rule says should happen, written out, never a value read back from the session.
@Suite struct FleetSessionTests {
  /// A link connected to a broker that answers, with records 1...`newest` published (a batch at most).
  func connectedLink(newest: Int64, settings: FleetSettings = FakeFleetLink.settings()) -> FakeFleetLink {
    let link = FakeFleetLink(settings: settings, newest: newest)
    link.run(until: { !link.statesAt.isEmpty })  // the first turn with the connection up
    return link
  }

  // MARK: Acknowledgements

  @Test("acknowledged in order, the acknowledged sequence follows each PUBACK and is saved before anything else")
  func acksInOrder() {
    let link = connectedLink(newest: 5)
    #expect(link.published == [1, 2, 3, 4, 5])
    // The log's id is written to the state file at once, before anything is acknowledged.
    #expect(link.saves == [FleetAckMark(logID: logA, acked: 0)])
    for s: Int64 in 1...3 {
      link.ack(s)
      let before = link.actions.count
      link.turn()
      #expect(link.session.acknowledgedThrough == s)
      #expect(link.saves.last == FleetAckMark(logID: logA, acked: s))
      // The save is the first thing done after the PUBACK.
      #expect(link.actions.count > before && link.actions[before].action == .acknowledged(FleetAckMark(logID: logA, acked: s), save: true))
    }
  }

  @Test("a later PUBACK before an earlier one never skips the unacknowledged record")
  func acksOutOfOrder() {
    let link = connectedLink(newest: 5)
    link.ack(3, 5)
    link.turn()
    #expect(link.session.acknowledgedThrough == 0)
    #expect(link.saves.map(\.acked) == [0])
    link.ack(1)
    link.turn()
    #expect(link.session.acknowledgedThrough == 1)
    link.ack(2)  // 1, 2, 3 acknowledged now: through 3; 4 still waits, so 5 does not count yet
    link.turn()
    #expect(link.session.acknowledgedThrough == 3)
    link.ack(4)
    link.turn()
    #expect(link.session.acknowledgedThrough == 5)
    #expect(link.saves.map(\.acked) == [0, 1, 3, 5])
  }

  @Test("a refused publish is not acknowledged and the connection is given up")
  func refusedPublish() {
    let link = connectedLink(newest: 2)
    link.ack(1, accepted: false)
    link.turn()
    #expect(link.drops.map(\.reason) == [.refused(sequence: 1)])
    #expect(link.session.acknowledgedThrough == 0)
  }

  // MARK: Resume

  @Test("after a reconnect, publishing resumes after the last acknowledged record")
  func resumeAfterReconnect() {
    let link = connectedLink(newest: 5)
    link.ack(1, 2, 4)
    link.turn()
    link.broker = .refusing  // the connection is lost
    link.turn()
    link.broker = .up
    link.run(until: { link.connections.count == 2 && !link.connections[1].isEmpty })
    // 1 and 2 were acknowledged in order; 3 never was, so 3 and everything after it go again.
    #expect(link.connections[1] == [3, 4, 5])
  }

  @Test("at a restart, the state file's log is resumed after its acknowledged sequence, without rewriting the file")
  func restartSameLog() {
    let link = FakeFleetLink(saved: FleetAckMark(logID: logA, acked: 7), logID: logA, newest: 10)
    link.run(until: { !link.published.isEmpty })
    #expect(link.published == [8, 9, 10])
    #expect(link.saves.isEmpty)
    #expect(link.notes.isEmpty)
  }

  @Test("a log with another id is a new log: published from its first record, its id saved at once")
  func restartOtherLog() {
    let link = FakeFleetLink(saved: FleetAckMark(logID: logB, acked: 7), logID: logA, newest: 3)
    link.run(until: { !link.published.isEmpty })
    #expect(link.published == [1, 2, 3])
    #expect(link.saves == [FleetAckMark(logID: logA, acked: 0)])
    #expect(link.notes.count == 1 && link.notes[0].contains("publishing it from its first record"))
  }

  @Test("a state file from before log ids counts only for a log whose id was adopted at or after that sequence")
  func restartLegacyStateFile() {
    let adopted = FakeFleetLink(saved: FleetAckMark(logID: nil, acked: 7), logID: logA, newest: 9)
    adopted.adoptedThrough = 8
    adopted.run(until: { !adopted.published.isEmpty })
    #expect(adopted.published == [8, 9])
    let newer = FakeFleetLink(saved: FleetAckMark(logID: nil, acked: 7), logID: logA, newest: 9)
    newer.run(until: { !newer.published.isEmpty })
    #expect(newer.published == Array(1...9))
  }

  @Test("the writer moving to a new log while running: the old one is closed, the new one published from its start")
  func newLogWhileRunning() {
    let link = FakeFleetLink(newest: 5)
    link.writer = .open(logA)
    link.run(until: { !link.published.isEmpty })
    link.ack(1, 2, 3)
    link.turn()
    #expect(link.session.acknowledgedThrough == 3)
    link.writer = .open(logB)
    link.logID = logB
    link.newest = 2
    link.turn()
    #expect(link.actions.contains { $0.action == .closeLog(unacknowledged: FleetAckMark(logID: logA, acked: 3)) })
    link.run(until: { link.published.count > 5 })
    // Same connection: log B's records 1 and 2 follow log A's 1...5.
    #expect(link.connections.count == 1)
    #expect(link.published == [1, 2, 3, 4, 5, 1, 2])
    #expect(link.saves.last == FleetAckMark(logID: logB, acked: 0))
    link.ack(4, 5)  // log A's late PUBACKs count for nothing in log B
    link.turn()
    #expect(link.session.acknowledgedThrough == 0)
  }

  // MARK: Duplicates

  @Test("across a reconnect only records not yet in the acknowledged prefix are sent twice, and none twice on one connection")
  func noDuplicatesBeyondAtLeastOnce() {
    let link = connectedLink(newest: 30, settings: FakeFleetLink.settings(batch: 10))
    #expect(link.published == Array(1...10))
    link.ack(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    link.run(until: { link.published.count == 20 })
    link.ack(11, 12, 13, 14, 16)  // 15 is never acknowledged on this connection
    link.broker = .refusing  // the connection is lost at the end of this turn
    link.turn()
    #expect(link.session.acknowledgedThrough == 14)
    link.broker = .up
    link.autoAck = true
    link.run(until: { link.session.acknowledgedThrough == 30 })
    #expect(link.session.acknowledgedThrough == 30)
    #expect(link.connections.count == 2)
    for c in link.connections { #expect(Set(c).count == c.count) }
    var counts: [Int64: Int] = [:]
    for s in link.published { counts[s, default: 0] += 1 }
    #expect(Set(counts.keys) == Set(1...30))
    // Sent twice: exactly what the first connection published above its acknowledged prefix
    // (1...14): 15...20 and whatever it sent after them before it was lost (16 included: at least
    // once counts the prefix only).
    let resent = Set(link.connections[0].filter { $0 > 14 })
    #expect(resent.isSuperset(of: 15...20))
    #expect(Set(counts.filter { $0.value > 1 }.keys) == resent)
    #expect(counts.values.allSatisfy { $0 <= 2 })
  }

  // MARK: Backoff and timeouts

  @Test("reconnect backoff: 1 s doubling to 15 s, brokers in turn, back to 1 s after a good connection")
  func backoff() {
    let link = FakeFleetLink(settings: FakeFleetLink.settings(brokers: ["mqtt://a", "mqtt://b"]), newest: 0)
    link.broker = .refusing
    link.run(until: { link.attempts.count == 7 })
    let at = link.attempts.map(\.at)
    #expect(zip(at.dropFirst(), at).map { link.ms($0, since: $1) } == [1_000, 2_000, 4_000, 8_000, 15_000, 15_000])
    #expect(link.attempts.map(\.broker) == ["mqtt://a", "mqtt://b", "mqtt://a", "mqtt://b", "mqtt://a", "mqtt://b", "mqtt://a"])
    link.broker = .up
    link.run(until: { link.session.isConnected })
    link.run(milliseconds: 100)
    link.broker = .refusing  // lost at the end of the next turn; then the next attempts fail too
    let lost = link.now
    link.run(until: { link.attempts.count == 10 })
    #expect(link.attempts.suffix(3).map(\.broker) == ["mqtt://b", "mqtt://a", "mqtt://b"])
    let again = link.attempts.suffix(2).map(\.at)
    #expect(link.ms(again[0], since: lost) == 1_000)
    #expect(link.ms(again[1], since: again[0]) == 2_000)
  }

  @Test("a connection with no CONNACK within max(keepalive, 10 s) is given up")
  func connectTimeout() {
    let link = FakeFleetLink(settings: FakeFleetLink.settings(keepalive: 5), newest: 0)
    link.broker = .silent
    link.run(until: { !link.drops.isEmpty })
    #expect(link.drops.map(\.reason) == [.connectTimedOut])
    let waited = link.ms(link.drops[0].at, since: link.attempts[0].at)
    #expect(waited > 10_000 && waited <= 10_020)
  }

  @Test("a publish unacknowledged for max(keepalive, 5 s) drops the connection; the next one sends it again")
  func ackTimeout() {
    let link = connectedLink(newest: 1, settings: FakeFleetLink.settings(keepalive: 5))
    let sent = link.publishedAt[0]
    link.run(until: { !link.drops.isEmpty })
    #expect(link.drops.map(\.reason) == [.unacknowledged(sequence: 1)])
    let waited = link.ms(link.drops[0].at, since: sent)
    #expect(waited > 5_000 && waited <= 5_040)
    link.run(until: { link.connections.count == 2 && !link.connections[1].isEmpty })
    #expect(link.connections[1] == [1])
  }

  // MARK: Offline

  @Test("offline is reported once past max_offline_s without the broker, and lifted by a connection")
  func offline() {
    let link = FakeFleetLink(settings: FakeFleetLink.settings(maxOffline: 2), newest: 0)
    let start = link.now
    link.broker = .refusing
    link.run(milliseconds: 5_000)
    #expect(link.offlineAt.count == 1)
    let after = link.ms(link.offlineAt[0], since: start)
    #expect(after > 2_000 && after <= 2_020)
    link.broker = .up
    link.run(until: { link.session.isConnected })
    #expect(!link.session.isOffline)
    link.run(milliseconds: 3_000)  // connected: never offline
    #expect(link.offlineAt.count == 1)
    link.broker = .refusing
    let lastContact = Instant(nanoseconds: link.now.nanoseconds - 20_000_000)  // the last turn that saw it connected
    link.run(milliseconds: 3_000)
    #expect(link.offlineAt.count == 2)
    #expect(link.ms(link.offlineAt[1], since: lastContact) > 2_000)
  }

  @Test("the last contact survives a restart: an hour ago with max_offline_s 30 is offline at once; 10 s ago, 20 s later")
  func offlineAcrossRestart() {
    let old = FakeFleetLink(settings: FakeFleetLink.settings(maxOffline: 30), newest: 0, contactAgeSeconds: 3_600)
    old.broker = .refusing
    old.turn()
    #expect(old.offlineAt.count == 1)
    let recent = FakeFleetLink(settings: FakeFleetLink.settings(maxOffline: 30), newest: 0, contactAgeSeconds: 10)
    let start = recent.now
    recent.broker = .refusing
    recent.run(milliseconds: 25_000)
    #expect(recent.offlineAt.count == 1)
    let after = recent.ms(recent.offlineAt[0], since: start)
    #expect(after > 20_000 && after <= 20_020)
  }

  @Test("a last contact later than the clock (it came up behind after a power cut) is offline at once, not a fresh grace")
  func contactInTheFuture() {
    let link = FakeFleetLink(settings: FakeFleetLink.settings(maxOffline: 30), newest: 0, contactAgeSeconds: -600)
    link.broker = .refusing
    link.turn()
    #expect(link.offlineAt.count == 1)
  }

  // MARK: State topic and stop

  @Test("the state topic: on connecting, then every 5 s, or 1 s after the last when something changed")
  func stateCadence() {
    let link = connectedLink(newest: 0)
    #expect(link.statesAt.count == 1)
    let first = link.statesAt[0]
    link.run(milliseconds: 5_100)
    #expect(link.statesAt.count == 2)
    let gap = link.ms(link.statesAt[1], since: first)
    #expect(gap > 5_000 && gap <= 5_020)
    link.session.stateDidChange()
    link.run(milliseconds: 1_100)
    #expect(link.statesAt.count == 3)
    #expect(link.ms(link.statesAt[2], since: link.statesAt[1]) > 1_000)
  }

  @Test("a stop publishes what the log holds, saves the last acknowledgement, then says offline")
  func stopDrains() {
    let link = connectedLink(newest: 3)
    link.session.stop(now: link.now)
    link.run(milliseconds: 200)
    #expect(link.finished == nil)  // 1...3 unacknowledged
    link.ack(1, 2, 3)
    link.run(milliseconds: 100)
    #expect(link.finished == true)
    #expect(link.saves.last == FleetAckMark(logID: logA, acked: 3))
  }

  @Test("a stop without acknowledgements ends 2 s later; without a connection at once")
  func stopDeadline() {
    let link = connectedLink(newest: 3)
    let stop = link.now
    link.session.stop(now: stop)
    link.run(milliseconds: 3_000)
    #expect(link.finished == true)
    let took = link.ms(link.actions.last?.at ?? stop, since: stop)
    #expect(took >= 2_000 && took <= 2_020)
    let idle = FakeFleetLink(newest: 3)
    idle.broker = .refusing
    idle.turn()
    idle.session.stop(now: idle.now)
    idle.turn()
    #expect(idle.finished == false)
  }
}
