import Glibc
import ScanAuditLinux
import ScanCore
import ScanPlatform
import Synchronization

extension FleetLink {
  /// The link's thread.
  func body() {
    var run = FleetLinkRun(link: self)
    run.run()
  }
}

/// One run of the link's thread. It only moves bytes: it asks the session (`FleetSession`, which
/// holds every rule: resume point, acknowledgements, backoff, timeouts, offline, cadences) what to
/// do, does it with the MQTT client and the audit log's file, and reports what happened.
struct FleetLinkRun {
  private let link: FleetLink
  private let topics: FleetTopics
  private let contactPath: String
  private let clock = SystemMonotonicClock()
  private let wall = SystemWallClock()
  private var session: FleetSession
  /// The log's file, read-only (the log's writer owns the writes).
  private var store: AuditStore? = nil
  /// This connection attempt's client (a new clean-session client per attempt) and its broker.
  private var client: MQTTClient? = nil
  private var broker = ""
  /// The acknowledged point not yet written (docs/audit-log.md, "What the log writes"): kept in
  /// memory and written every `ackSaveIntervalMilliseconds` or `ackSaveRecords` records,
  /// whichever comes first, at once when the log changes, and at the stop. After a crash a stale point only means records published again
  /// (consumers de-duplicate by log id and sequence); the log prunes only below what is written.
  private var unsavedAck: FleetAckMark? = nil
  private var savedAck: FleetAckMark? = nil
  private var lastAckSave = Instant(nanoseconds: 0)
  static let ackSaveIntervalMilliseconds = 10_000
  /// …or every this many records, whichever comes first: what a kill -9 can make the link
  /// publish again is bounded in records as well as in time.
  static let ackSaveRecords: Int64 = 256

  init(link: FleetLink) {
    self.link = link
    topics = link.topics
    contactPath = link.statePath + ".contact"
    var saved = FleetState.Entry(logID: nil, acked: 0)
    do { saved = try FleetState.loadEntry(link.statePath) } catch {
      link.setProblem("\(error); starting from the first record (consumers de-duplicate)")
    }
    // Nothing is published, and the log prunes nothing, until the link knows which log is at
    // `logPath` and whether the state file is about it.
    link.ackedSequence.store(0, ordering: .releasing)
    link.auditLog?.retainFrom = 1
    // The last contact survives a restart (a power blip must not lift the offline policy): its
    // wall time is kept beside the state file.
    let age = FleetState.loadContact(contactPath).map { SystemWallClock().unixSeconds() - $0 }
    session = FleetSession(settings: link.settings, now: SystemMonotonicClock().now(), saved: saved, lastContactAgeSeconds: age)
  }

  mutating func run() {
    while true {
      let now = clock.now()
      if link.worker.stopRequested { session.stop(now: now) }
      if unsavedAck != nil && now.milliseconds(since: lastAckSave) >= Self.ackSaveIntervalMilliseconds { saveAck(now: now) }
      if link.telemetry.takeChanged(now: now, diagnostics: { diagnostics() }) { session.stateDidChange() }
      let writer = link.auditLog?.writerLog ?? .notHere
      let written = link.auditLog?.writtenRecords
      while true {
        let action = session.next(now: now, writer: writer, written: written)
        if case .finish(let sayOffline) = action {
          saveAck(now: now)
          finish(sayOffline: sayOffline)
          return
        }
        if case .wait(let until) = action {
          // Site passages and uses go out within 100 ms of the loop queuing them.
          var wait = until.milliseconds(since: now)
          if unsavedAck != nil { wait = min(wait, Self.ackSaveIntervalMilliseconds) }  // the batched point is written in time
          pump(for: link.sitePassages == nil && link.siteUses == nil ? wait : min(wait, 100))
          break
        }
        perform(action, now: now, writer: writer)
      }
    }
  }

  private mutating func perform(_ action: FleetAction, now: Instant, writer: WriterLog) {
    switch action {
    case .openLog:
      store = try? AuditStore(path: link.logPath, readOnly: true)
      if store != nil { session.logOpened() }
    case .checkLog(let identify):
      checkLog(identify: identify, now: now, writer: writer)
    case .closeLog(let unacknowledged):
      if let mark = unacknowledged, let newest = try? store?.newestSequence(), newest > mark.acked {
        link.setLogNote(FleetSession.replacedNote(mark, newest: newest))
      }
      store = nil
    case .connect(let url):
      connect(url, now: now)
    case .disconnect(let reason):
      drop(reason.text(broker: broker, settings: link.settings), now: nil)
    case .acknowledged(let mark, let save):
      acknowledged(mark, save: save, now: now)
    case .publish(let from, let limit):
      publish(from: from, limit: limit, now: now)
    case .publishState:
      _ = try? client?.publish(topic: topics.state, link.telemetry.stateJSON(link: link, diagnostics: diagnostics()), qos: 1, retain: true)
    case .saveContact:
      try? FleetState.storeContact(contactPath, unixSeconds: wall.unixSeconds())
    case .offline:
      link.offlineFlag.store(true, ordering: .releasing)
      link.setProblem("no broker for over \(link.settings.maxOfflineSeconds) s: offline policy \(link.settings.offlinePolicy.rawValue) in force")
    case .checkDrained:
      session.logHolds(through: (try? store?.newestSequence()) ?? 0, now: now)
    case .finish, .wait:
      break
    }
  }

  /// Runs the network for `milliseconds` (or sleeps without a client), then reports what arrived:
  /// acknowledgements first (they count even on a connection that was lost since), then the
  /// connection's state, then the messages for the inbox.
  private mutating func pump(for milliseconds: Int) {
    guard let c = client else {
      _ = try? syscall("poll (the fleet link's pause)") { poll(nil, 0, Int32(clamping: milliseconds)) }
      return
    }
    c.loop(timeoutMilliseconds: milliseconds)
    let now = clock.now()
    while let ack = c.takeAck() {
      if session.puback(mid: ack.mid, accepted: ack.accepted) { link.acknowledgedCount.wrappingAdd(1, ordering: .relaxed) }
    }
    switch c.state {
    case .connected:
      if session.connected(now: now) { connectionUp(c) }
    case .connecting:
      break
    case .refused:
      drop("\(broker): refused: \(c.refusalText)", now: now)
    case .lost:
      var reason = session.isConnected ? "\(broker): connection lost" : "\(broker): cannot connect"
      if c.oversizeDrops > 0 {
        reason = "\(broker): dropped the connection: a packet over \(c.packetBytesMax) bytes was arriving (fleet.message_bytes_max)"
      }
      drop(reason, now: now)
    }
    guard session.receivesMessages, let c = client else { return }
    while let message = c.takeMessage() {
      if link.sitePassages?.received(message) == true { continue }
      if link.siteUses?.received(message) == true { continue }
      if link.homeAssistant?.received(message, link: link) == true { continue }
      link.inbox?.received(message, link: link, client: c)
    }
    link.sitePassages?.publishPending(c)
    link.siteUses?.publishPending(c)
  }

  /// Home Assistant's diagnostics as this thread can see them: the log's fault, the records not
  /// acknowledged yet, the space left in the log's folder, the loop's decoder restarts.
  private func diagnostics() -> FleetDiagnostics {
    var d = FleetDiagnostics()
    d.decoderRestarts = link.telemetry.decoderRestarts.load()
    d.logFault = link.auditLog?.faultName
    if let newest = try? store?.newestSequence() { d.backlog = max(0, newest - link.acknowledgedThrough) }
    let folder = link.logPath.contains("/") ? String(link.logPath[..<link.logPath.lastIndex(of: "/")!]) : "."
    var st = statvfs()
    if (try? syscall("statvfs (the log's folder)") { statvfs(folder.isEmpty ? "/" : folder, &st) }) != nil {
      d.logDiskFreeMiB = Int64(st.f_bavail) * Int64(st.f_frsize) / (1 << 20)
    }
    return d
  }

  private func connectionUp(_ c: MQTTClient) {
    link.connectionCount.wrappingAdd(1, ordering: .relaxed)
    link.connectedFlag.store(true, ordering: .releasing)
    link.offlineFlag.store(false, ordering: .releasing)
    link.setProblem("")
    link.announce(c, broker: broker)
  }

  /// Destroys the client (its socket closes, the broker sends the will); `now`: the link saw the
  /// connection go (the session is told), nil: the session gave it up.
  private mutating func drop(_ reason: String, now: Instant?) {
    link.setProblem(reason)
    client = nil
    // A connection's buffers (libmosquitto's packets, TLS state) were freed into this thread's
    // malloc arena: hand them back, so a broker restarted every hour is not a step in RSS each
    // time (bench/soak-service.py). This thread only; the loop never calls it.
    releaseFreedMemory()
    link.connectedFlag.store(false, ordering: .releasing)
    if let now { session.disconnected(now: now) }
  }

  private mutating func connect(_ url: String, now: Instant) {
    do throws(FleetLink.FleetConnectError) {
      client = try link.makeClient(url)
      broker = url
      link.brokerText.withLock { $0 = url }
    } catch {
      link.setProblem(error.text)
      session.connectFailed(now: now)
    }
  }

  private mutating func checkLog(identify: Bool, now: Instant, writer: WriterLog) {
    guard let s = store else { return }
    if s.fileCheck() != .same {
      session.logChanged()
      return
    }
    guard identify else { return }
    let identity = try? s.identity()
    let newest = (try? s.newestSequence()) ?? 0
    if let note = session.logIdentified(id: identity?.id, adoptedThrough: identity?.adoptedThrough, newest: newest, writer: writer, now: now) {
      link.setLogNote(note)
    }
  }

  /// The acknowledged point moved (or the log changed): shown at once; written durably when the
  /// log changed, else batched (`unsavedAck`); released to the log's pruning only once written.
  private mutating func acknowledged(_ mark: FleetAckMark, save: Bool, now: Instant) {
    link.logText.withLock { $0 = mark.logID ?? "" }
    link.ackedSequence.store(mark.acked, ordering: .releasing)
    guard save else {
      // A mark read back from the state file is written; one still batched is not: the log
      // prunes only below what is written.
      if unsavedAck == nil { link.auditLog?.retainFrom = mark.acked.saturatingAdd(1) }
      return
    }
    unsavedAck = mark
    if savedAck?.logID != mark.logID || now.milliseconds(since: lastAckSave) >= Self.ackSaveIntervalMilliseconds
      || mark.acked - (savedAck?.acked ?? 0) >= Self.ackSaveRecords
    {
      saveAck(now: now)
    }
  }

  /// Writes the batched acknowledged point (one durable write), then lets the log prune below it.
  private mutating func saveAck(now: Instant) {
    guard let mark = unsavedAck else { return }
    lastAckSave = now
    do { try FleetState.store(link.statePath, acked: mark.acked, logID: mark.logID) } catch {
      link.setProblem("cannot keep the acknowledged sequence: \(error)")
      return
    }
    unsavedAck = nil
    savedAck = mark
    link.auditLog?.retainFrom = mark.acked.saturatingAdd(1)
  }

  private mutating func publish(from first: Int64, limit: Int, now: Instant) {
    guard let s = store, let c = client else { return }
    let records: [AuditRecord]
    do { records = try s.records(from: first, limit: limit) } catch {
      link.setProblem("reading the audit log: \(error)")
      store = nil
      session.logReadFailed(now: now)
      return
    }
    session.recordsRead(records.count, now: now)
    for record in records {
      do throws(MQTTError) {
        let payload = record.fleetJSON(readerID: link.settings.readerID, log: session.logID ?? "")
        let mid = try c.publish(topic: topics.events, payload, qos: 1, retain: false)
        session.published(sequence: record.sequence, mid: mid, now: now)
      } catch {
        drop("\(broker): \(error)", now: now)
        return
      }
      link.publishedCount.wrappingAdd(1, ordering: .relaxed)
      if record.kind == .decision {
        link.telemetry.noteDecision(record)
        publishDecisionEvent(record, client: c)
      } else {
        link.telemetry.noteDoor(record)
      }
    }
  }

  /// Home Assistant's decision event, right behind the record's event message: one per decision
  /// record published (so one per decision, repeats included, paced and batched with the records;
  /// a record published again after a lost connection is announced again). Not retained (Home
  /// Assistant ignores a retained event); QoS 1, its PUBACK is not the record's.
  private func publishDecisionEvent(_ record: AuditRecord, client c: MQTTClient) {
    guard !link.settings.homeAssistantPrefix.isEmpty,
      let payload = record.homeAssistantEventJSON(readerID: link.settings.readerID)
    else { return }
    _ = try? c.publish(topic: topics.decision, payload, qos: 1, retain: false)
  }

  private func finish(sayOffline: Bool) {
    if sayOffline, let c = client {
      _ = try? c.publish(topic: topics.status, Array("offline".utf8), qos: 1, retain: true)
      c.loop(timeoutMilliseconds: 50)
      c.disconnect()
      c.loop(timeoutMilliseconds: 50)
    }
    link.connectedFlag.store(false, ordering: .releasing)
  }
}
