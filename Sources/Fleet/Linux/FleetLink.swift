import Glibc
import ScanConsole
import ScanCore
import Synchronization

/// The fleet link: one MQTT connection from this reader to the site's broker, on its own
/// thread, off the frame path — a broker that is slow or gone never slows a decision, and
/// every decision is still made and logged locally.
///
/// Events out, at least once: the link reads the audit log's records from the SQLite file
/// (never from memory, so nothing is lost across a crash or `kill -9`), in sequence order, in
/// batches of at most `batchRecords` unacknowledged publishes, at most `eventsPerSecondMax`
/// per second, each QoS 1 with the reader id and its audit sequence. The highest sequence
/// acknowledged without a hole below it is written to the state file (whole, then renamed)
/// after every advance, and the log never prunes a record above it. After a broker outage, a
/// network cut or a power loss the link resumes after that sequence: a record is published
/// again only when its acknowledgement was not recorded. Consumers de-duplicate by
/// (reader, log, seq); a gap in seq is a lost record, and there should be none.
///
/// Which log: every event carries the log id (`AuditLogID`), and the state file holds the log
/// id with the acknowledged sequence. A sequence acknowledged for another log is never used:
/// when the log at `logPath` is not the one the state file names (a log moved aside, deleted, or
/// replaced, at start or while running) the link publishes the new log from its first record,
/// says so (journal, STATUS) and writes the new log's id to the state file at once. A state
/// file written before log ids (no id) is taken as this log's only when this log was made
/// before log ids too (its id was adopted, `meta.log_id_adopted`) and the sequence is within
/// what the log held then; otherwise the link starts from the first record (duplicates,
/// never a gap).
///
/// Each connection attempt is a new clean-session client (so nothing libmosquitto queued for a
/// dead connection is mixed with the resumed stream); brokers are tried in turn with a
/// backoff of 1 s doubling to 15 s. A connection whose oldest publish goes unacknowledged for
/// the keepalive is dropped and retried.
///
/// Nothing from the broker is buffered much beyond `messageBytesMax` (libmosquitto reads a
/// whole packet before anything can check its size): under MQTT 5 the CONNECT carries Maximum
/// Packet Size and the broker drops larger messages for this reader; under 3.1.1, or from a
/// broker that ignores it, the connection is dropped once more than a packet's worth arrived
/// without a whole packet, and retried (`MQTTClient.oversizeDrops`).
public final class FleetLink: @unchecked Sendable {
  public let settings: FleetSettings
  public let logPath: String
  /// The allow-list, revocation list, trust and schedule files a bundle may replace, and the
  /// handler for commands (set before `start`).
  public var inbox: (any FleetInbox)? = nil
  private weak var auditLog: (any AuditLogProgress)?
  private let worker = WorkerThread()
  private let ackedSequence = Atomic<Int64>(0)
  private let publishedCount = Atomic<Int64>(0)
  private let acknowledgedCount = Atomic<Int64>(0)
  private let connectionCount = Atomic<Int64>(0)
  private let connectedFlag = Atomic<Bool>(false)
  private let offlineFlag = Atomic<Bool>(false)
  private let problemText = Mutex<String>("")
  /// The log published now (its id; empty until known, or for a log made before log ids) and
  /// the last change of log the link made, for STATUS.
  private let logText = Mutex<String>("")
  private let logNoteText = Mutex<String>("")
  private let brokerText = Mutex<String>("")
  /// Frames per second ×100 and the last decision, as the loop reports them (for the state
  /// topic and Home Assistant's sensors).
  public let telemetry = FleetTelemetry()
  /// The door inputs this reader has (set before `start`): each becomes a Home Assistant
  /// binary sensor reading the state topic, which follows the door records of the log.
  public var doorSensors: (contact: Bool, tamper: Bool) = (false, false)

  public init(settings: FleetSettings, logPath: String, auditLog: (any AuditLogProgress)?) {
    self.settings = settings
    self.logPath = logPath
    self.auditLog = auditLog
  }

  /// The state file: `fleet.state_file`, or `<log.path>.fleet`.
  public var statePath: String { settings.stateFile.isEmpty ? logPath + ".fleet" : settings.stateFile }
  public var topics: FleetTopics { FleetTopics(prefix: settings.topicPrefix, readerID: settings.readerID) }
  /// The highest audit sequence the broker acknowledged (everything at or below it is out).
  public var acknowledgedThrough: Int64 { ackedSequence.load(ordering: .acquiring) }
  public var isConnected: Bool { connectedFlag.load(ordering: .acquiring) }
  /// Past `max_offline_s` without the broker.
  public var isOffline: Bool { offlineFlag.load(ordering: .acquiring) }
  public var problem: String? { problemText.withLock { $0.isEmpty ? nil : $0 } }

  public func start() {
    worker.start { [self] in body() }
  }

  /// Publishes what the log holds for at most `drainMilliseconds`, says "offline", then
  /// disconnects and stops the thread.
  public func stop() { worker.stop() }

  /// Set by the link's thread; shown on STATUS and printed once per change.
  private func setProblem(_ text: String) {
    let changed = problemText.withLock { p in
      defer { p = text }
      return p != text
    }
    if changed && !text.isEmpty {
      var line = "scangate: fleet: \(text)\n"
      line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
  }

  // MARK: - The link's thread

  /// One publish waiting for its PUBACK.
  private struct InFlight {
    var mid: Int32
    var sequence: Int64
    var acked = false
    var sentAt: Int64
  }

  private struct Connection {
    var client: MQTTClient
    var startedAt: Int64
    var ready = false
    var broker: String
  }

  /// Says a change of log (journal once, STATUS until the next).
  private func setLogNote(_ text: String) {
    logNoteText.withLock { $0 = text }
    var line = "scangate: fleet: \(text)\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
  }

  /// Where to start publishing log `id` (`identity` as its file says) given what the state file
  /// holds, and what to say about it (nil when the state file is this log's).
  public static func startingPoint(
    _ saved: FleetState.Entry, log id: String?, identity: AuditStore.Identity?
  ) -> (
    acked: Int64, note: String?
  ) {
    let shown = id ?? "(made before log ids)"
    if let savedID = saved.logID {
      if savedID == id { return (saved.acked, nil) }
      return (0, "the state file acknowledged log \(savedID) through \(saved.acked); this is log \(shown): publishing it from its first record")
    }
    if saved.acked == 0 || id == nil { return (saved.acked, nil) }
    if let adopted = identity?.adoptedThrough, saved.acked <= adopted { return (saved.acked, nil) }
    return (
      0,
      "the state file (written before log ids) acknowledged \(saved.acked), but log \(shown) was made after it: publishing it from its first record"
    )
  }

  private func body() {
    let clock = SystemMonotonicClock()
    var saved = FleetState.Entry(logID: nil, acked: 0)
    do { saved = try FleetState.loadEntry(statePath) } catch {
      setProblem("\(error); starting from the first record (consumers de-duplicate)")
    }
    var acked: Int64 = 0
    // Nothing is published, and the log prunes nothing, until the link knows which log is at
    // `logPath` and whether the state file is about it.
    var logResolved = false
    var logID: String? = nil
    var nextLogCheck: Int64 = 0
    ackedSequence.store(0, ordering: .releasing)
    auditLog?.retainFrom = 1
    var store: AuditStore? = nil
    var nextStoreAttempt: Int64 = 0
    var connection: Connection? = nil
    var nextAttempt: Int64 = 0
    var backoffMilliseconds: Int64 = 1_000
    var brokerIndex = 0
    var inFlight: [InFlight] = []
    inFlight.reserveCapacity(settings.batchRecords)
    var nextToSend = acked + 1
    var tokens = Double(settings.batchRecords)
    var lastRefill = clock.now().nanoseconds
    // The last contact survives a restart (a power blip must not lift the offline policy): the
    // wall time of the last contact, kept beside the state file, minus how long ago that was.
    let contactPath = statePath + ".contact"
    var lastContact = Int64(clock.now().nanoseconds)
    let wallNow = Int64(time(nil))
    if let kept = FleetState.loadContact(contactPath), kept <= wallNow {
      // Before this boot, too: then it lies before the monotonic clock's zero (negative).
      lastContact -= min(wallNow - kept, 1 << 32) * 1_000_000_000
    }
    var lastContactWrite: Int64 = 0
    var stopDeadline: Int64? = nil
    var lastStatePublish: Int64 = 0
    // The log is asked for new records when the writer has written some since the last look,
    // when the last look filled a batch (catching up), or every second (every 50 ms without a
    // writer in this process): an idle reader does not query SQLite on every turn.
    var nextQuery: Int64 = 0
    var writtenSeen: Int64 = -1
    let keepaliveNanoseconds = Int64(settings.keepaliveSeconds) * 1_000_000_000

    while true {
      let now = Int64(clock.now().nanoseconds)
      if worker.stopRequested && stopDeadline == nil { stopDeadline = now + 2_000_000_000 }

      // The log's file, read-only (the log's writer owns the writes).
      if store == nil && now >= nextStoreAttempt {
        store = try? AuditStore(path: logPath, readOnly: true)
        if store == nil { nextStoreAttempt = now + 1_000_000_000 }
      }

      // Which log: a change of the writer's log, or of the file at the path, drops this
      // connection; a new one is resolved against the state file before anything is sent.
      if let s = store {
        let writer = auditLog?.writerLog ?? .notHere
        var stale = logResolved && writer != .notHere && writer != .open(logID ?? "")
        if now >= nextLogCheck {
          nextLogCheck = now + (logResolved ? 1_000_000_000 : 200_000_000)
          stale = stale || s.fileCheck() != .same
          if !logResolved && !stale {
            let identity = try? s.identity()
            let found = identity?.id
            switch writer {
            case .opening: break
            case .open(let id) where id != found: stale = true  // this connection is on another file
            default:
              let start = Self.startingPoint(saved, log: found, identity: identity)
              if let note = start.note {
                let newest = (try? s.newestSequence()) ?? 0
                setLogNote(note + (newest > 0 ? " (it holds records through \(newest) so far)" : ""))
              }
              logID = found
              acked = start.acked
              logText.withLock { $0 = found ?? "" }
              ackedSequence.store(acked, ordering: .releasing)
              auditLog?.retainFrom = acked.saturatingAdd(1)
              inFlight.removeAll(keepingCapacity: true)
              nextToSend = acked + 1
              nextQuery = 0
              if saved != FleetState.Entry(logID: found, acked: acked) {
                saved = FleetState.Entry(logID: found, acked: acked)
                do { try FleetState.store(statePath, acked: acked, logID: found) } catch {
                  setProblem("cannot keep the acknowledged sequence: \(error)")
                }
              }
              logResolved = true
            }
          }
        }
        if stale {
          if logResolved, let newest = try? s.newestSequence(), newest > acked {
            setLogNote("log \(logID ?? "(made before log ids)") was replaced: its records \(acked + 1)...\(newest) were not acknowledged")
          }
          store = nil
          logResolved = false
          nextStoreAttempt = now + 100_000_000
          nextLogCheck = 0
        }
      }

      // Connect (a new client per attempt).
      if connection == nil && now >= nextAttempt && stopDeadline == nil {
        let url = settings.brokers[brokerIndex % settings.brokers.count]
        brokerIndex += 1
        do throws(FleetConnectError) {
          connection = Connection(client: try makeClient(url), startedAt: now, broker: url)
          brokerText.withLock { $0 = url }
        } catch {
          setProblem(error.text)
          nextAttempt = now + backoffMilliseconds * 1_000_000
          backoffMilliseconds = min(backoffMilliseconds * 2, 15_000)
        }
      }

      if let c = connection {
        c.client.loop(timeoutMilliseconds: 20)
        var drop: String? = nil
        switch c.client.state {
        case .connected:
          lastContact = now
          if now - lastContactWrite >= 60_000_000_000 || lastContactWrite == 0 {
            lastContactWrite = now
            try? FleetState.storeContact(contactPath, unixSeconds: Int64(time(nil)))
          }
          if !c.ready {
            connection!.ready = true
            connectionCount.wrappingAdd(1, ordering: .relaxed)
            connectedFlag.store(true, ordering: .releasing)
            offlineFlag.store(false, ordering: .releasing)
            backoffMilliseconds = 1_000
            setProblem("")
            announce(c.client)
            inFlight.removeAll(keepingCapacity: true)
            nextToSend = acked + 1
            nextQuery = 0
          }
        case .connecting:
          if now - c.startedAt > max(keepaliveNanoseconds, 10_000_000_000) { drop = "\(c.broker): connection timed out" }
        case .refused:
          drop = "\(c.broker): refused: \(c.client.refusalText)"
        case .lost:
          drop = c.ready ? "\(c.broker): connection lost" : "\(c.broker): cannot connect"
          if c.client.oversizeDrops > 0 {
            drop = "\(c.broker): dropped the connection: a packet over \(c.client.packetBytesMax) bytes was arriving (fleet.message_bytes_max)"
          }
        }
        // Acknowledgements: advance through the acknowledged prefix, persist, release the log.
        while let ack = c.client.takeAck() {
          guard let i = inFlight.firstIndex(where: { $0.mid == ack.mid }) else { continue }
          if ack.accepted {
            inFlight[i].acked = true
            acknowledgedCount.wrappingAdd(1, ordering: .relaxed)
          } else {
            drop = "\(c.broker): the broker refused record \(inFlight[i].sequence) (not authorised for \(topics.events)?)"
          }
        }
        var advanced = false
        while let first = inFlight.first, first.acked {
          acked = first.sequence
          inFlight.removeFirst()
          advanced = true
        }
        if advanced {
          ackedSequence.store(acked, ordering: .releasing)
          auditLog?.retainFrom = acked.saturatingAdd(1)
          saved = FleetState.Entry(logID: logID, acked: acked)
          do { try FleetState.store(statePath, acked: acked, logID: logID) } catch {
            setProblem("cannot keep the acknowledged sequence: \(error)")
          }
        }
        if let oldest = inFlight.first, now - oldest.sentAt > max(keepaliveNanoseconds, 5_000_000_000) {
          drop = "\(c.broker): record \(oldest.sequence) unacknowledged for \(settings.keepaliveSeconds) s"
        }
        if c.ready && drop == nil {
          while let message = c.client.takeMessage() { inbox?.received(message, link: self, client: c.client) }
          // Publish the next records, paced.
          let elapsed = Double(now - Int64(lastRefill)) / 1e9
          lastRefill = UInt64(now)
          tokens = min(Double(settings.batchRecords), tokens + elapsed * Double(settings.eventsPerSecondMax))
          let room = min(settings.batchRecords - inFlight.count, Int(tokens))
          let written = auditLog?.writtenRecords
          if room > 0, logResolved, let s = store, now >= nextQuery || (written != nil && written != writtenSeen) {
            do {
              writtenSeen = written ?? -1
              let records = try s.records(from: nextToSend, limit: room)
              nextQuery = records.count == room ? now : now + (auditLog == nil ? 50_000_000 : 1_000_000_000)
              for record in records {
                let mid = try c.client.publish(topic: topics.events, record.fleetJSON(readerID: settings.readerID, log: logID ?? ""), qos: 1, retain: false)
                inFlight.append(InFlight(mid: mid, sequence: record.sequence, sentAt: now))
                nextToSend = record.sequence.saturatingAdd(1)
                tokens -= 1
                publishedCount.wrappingAdd(1, ordering: .relaxed)
                if record.kind == .decision { telemetry.noteDecision(record) } else { telemetry.noteDoor(record) }
              }
            } catch let error as SQLiteError {
              setProblem("reading the audit log: \(error)")
              store = nil
              nextStoreAttempt = now + 1_000_000_000
            } catch {
              drop = "\(c.broker): \(error)"
            }
          }
          // The state topic: on a new decision at most once a second, else every 5 s.
          if now - lastStatePublish > 5_000_000_000 || (now - lastStatePublish > 1_000_000_000 && telemetry.takeChanged()) {
            lastStatePublish = now
            _ = try? c.client.publish(topic: topics.state, telemetry.stateJSON(link: self), qos: 1, retain: true)
          }
        }
        if let reason = drop {
          setProblem(reason)
          connection = nil  // the client is destroyed: its socket closes, the broker sends the will
          connectedFlag.store(false, ordering: .releasing)
          inFlight.removeAll(keepingCapacity: true)
          nextAttempt = now + backoffMilliseconds * 1_000_000
          backoffMilliseconds = min(backoffMilliseconds * 2, 15_000)
        }
      } else {
        usleep(20_000)
      }

      if settings.maxOfflineSeconds > 0 && !isConnected
        && now - lastContact > Int64(settings.maxOfflineSeconds) * 1_000_000_000 && !isOffline
      {
        offlineFlag.store(true, ordering: .releasing)
        setProblem("no broker for over \(settings.maxOfflineSeconds) s: offline policy \(settings.offlinePolicy.rawValue) in force")
      }

      if let deadline = stopDeadline {
        let drained = inFlight.isEmpty && (store.map { (try? $0.newestSequence()) ?? 0 } ?? 0) < nextToSend
        if connection == nil || now >= deadline || (drained && connection?.ready == true) {
          if let c = connection, c.ready {
            _ = try? c.client.publish(topic: topics.status, Array("offline".utf8), qos: 1, retain: true)
            c.client.loop(timeoutMilliseconds: 50)
            c.client.disconnect()
            c.client.loop(timeoutMilliseconds: 50)
          }
          connectedFlag.store(false, ordering: .releasing)
          return
        }
      }
    }
  }

  struct FleetConnectError: Error { var text: String }

  private func makeClient(_ url: String) throws(FleetConnectError) -> MQTTClient {
    guard let address = BrokerAddress(url) else { throw FleetConnectError(text: "\(url): not a broker URL") }
    if address.tls && !settings.tlsKeyFile.isEmpty {
      // The key is a secret file: refused unless owned by root or the service user, mode 0600.
      do { _ = try SecretFile.read(settings.tlsKeyFile, maxBytes: 64 * 1024) } catch {
        throw FleetConnectError(text: "TLS key \(error)")
      }
    }
    var password = ""
    if !settings.username.isEmpty && !settings.passwordFile.isEmpty {
      do { password = String(decoding: try SecretFile.read(settings.passwordFile), as: UTF8.self) } catch {
        throw FleetConnectError(text: "MQTT password \(error)")
      }
    }
    do throws(MQTTError) {
      let client = try MQTTClient(
        clientID: settings.readerID, protocolVersion: settings.protocolVersion, messageBytesMax: settings.messageBytesMax)
      if address.tls {
        try client.useTLS(caFile: settings.tlsCAFile, certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile)
      }
      if !settings.username.isEmpty { try client.setCredentials(username: settings.username, password: password) }
      try client.setWill(topic: topics.status, payload: Array("offline".utf8), retain: true)
      try client.connect(host: address.host, port: address.port, keepaliveSeconds: settings.keepaliveSeconds)
      return client
    } catch {
      throw FleetConnectError(text: "\(url): \(error)")
    }
  }

  /// On every new connection: availability, subscriptions, Home Assistant discovery.
  private func announce(_ client: MQTTClient) {
    _ = try? client.publish(topic: topics.status, Array("online".utf8), qos: 1, retain: true)
    inbox?.connected(client, link: self)
    if !settings.homeAssistantPrefix.isEmpty {
      var discovery = HomeAssistantDiscovery(settings: settings, version: ScanGateVersion.string)
      if doorSensors.contact { discovery.binarySensors.append(("door_contact", "Door contact", "door", "door_contact")) }
      if doorSensors.tamper { discovery.binarySensors.append(("tamper", "Tamper", "tamper", "tamper")) }
      for (topic, payload) in discovery.messages {
        _ = try? client.publish(topic: topic, payload, qos: 1, retain: true)
      }
    }
  }

  // MARK: - STATUS

  public func writeStatus(into w: inout ByteWriter) {
    w.write(isConnected ? "connected to " : "not connected")
    if isConnected { w.write(brokerText.withLock { $0 }) }
    w.write("; acknowledged through #")
    w.write(acknowledgedThrough)
    let log = logText.withLock { $0 }
    if !log.isEmpty {
      w.write(" of log ")
      w.write(log)
    }
    w.write(", ")
    w.write(publishedCount.load(ordering: .relaxed))
    w.write(" published, ")
    w.write(acknowledgedCount.load(ordering: .relaxed))
    w.write(" acknowledged, ")
    w.write(connectionCount.load(ordering: .relaxed))
    w.write(" connections")
    if isOffline {
      w.write("; OFFLINE past ")
      w.write(settings.maxOfflineSeconds)
      w.write(" s: policy ")
      w.write(settings.offlinePolicy.rawValue)
    }
    if let problem {
      w.write("; ")
      w.write(problem)
    }
    let note = logNoteText.withLock { $0 }
    if !note.isEmpty {
      w.write("; ")
      w.write(note)
    }
  }
}

/// Which log the writer in this process has open (the fleet link publishes that one).
public enum WriterLog: Equatable, Sendable {
  /// No writer in this process: the link takes the log id the file holds.
  case notHere
  /// The writer has not opened a log yet (or is opening a new one).
  case opening
  case open(String)
}

/// What the link needs of the log's writer in this process: how many records it has written
/// (the link reads the file for new ones when this moves) and where pruning must stop.
public protocol AuditLogProgress: AnyObject {
  var writtenRecords: Int64 { get }
  var retainFrom: Int64 { get set }
  /// The log the writer has open (its id), so the link follows it to a new log.
  var writerLog: WriterLog { get }
}

extension AuditLogProgress {
  public var writerLog: WriterLog { .notHere }
}

extension AuditLog: AuditLogProgress {}

/// What arrives on the link's subscriptions (bundles, commands): the handler subscribes when
/// a connection is up and is handed every message on the link's thread.
public protocol FleetInbox: AnyObject {
  func connected(_ client: MQTTClient, link: FleetLink)
  func received(_ message: MQTTMessage, link: FleetLink, client: MQTTClient)
}

/// What the link publishes on the state topic: the last decision it published and the frame
/// rate the loop measured.
public final class FleetTelemetry: @unchecked Sendable {
  private let fps = Atomic<Int>(0)
  private let changed = Atomic<Bool>(false)
  private var lastVerdict = ""
  private var lastLabel = ""
  private var lastTime: Int64 = 0

  public init() {}

  /// The loop's frame rate ×100 (written by whoever measures it).
  public func setFramesPerSecondTimes100(_ value: Int) { fps.store(value, ordering: .relaxed) }

  public func noteDecision(_ record: AuditRecord) {
    lastVerdict = record.verdict?.name ?? ""
    lastLabel = record.label
    lastTime = record.wallNanoseconds
    changed.store(true, ordering: .relaxed)
  }

  /// The door as its records say (nil until the first one): contact, tamper, strike.
  private var doorOpen: Bool? = nil
  private var tamperActive: Bool? = nil
  private var unlocked = false

  public func noteDoor(_ record: AuditRecord) {
    switch record.kind {
    case .doorOpened, .doorForced, .doorHeldOpen: doorOpen = true
    case .doorClosed: doorOpen = false
    case .tamper: tamperActive = record.code == 1
    case .doorUnlocked: unlocked = true
    case .doorLocked: unlocked = false
    default: return
    }
    changed.store(true, ordering: .relaxed)
  }

  func takeChanged() -> Bool { changed.exchange(false, ordering: .relaxed) }

  public func stateJSON(link: FleetLink) -> [UInt8] {
    var o = JSONObject()
    o.add("reader", link.settings.readerID)
    o.add("last_decision", lastVerdict.isEmpty ? "none" : lastVerdict)
    if !lastLabel.isEmpty { o.add("last_label", lastLabel) }
    if lastTime > 0 { o.add("last_decision_time", RFC3339.format(lastTime / 1_000_000_000)) }
    let f = fps.load(ordering: .relaxed)
    o.add("fps", raw: "\(f / 100).\(f % 100 < 10 ? "0" : "")\(f % 100)")
    o.add("acked_seq", link.acknowledgedThrough)
    o.add("offline_policy_active", link.isOffline)
    o.add("lock", unlocked ? "UNLOCKED" : "LOCKED")
    if let doorOpen { o.add("door_contact", doorOpen ? "ON" : "OFF") }
    if let tamperActive { o.add("tamper", tamperActive ? "ON" : "OFF") }
    return o.bytes
  }
}
