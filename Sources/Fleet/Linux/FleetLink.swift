import Glibc
import ScanAuditLinux
import ScanConsole
import ScanCore
import ScanPlatform
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
///
/// The rules above (resume point, acknowledgements, backoff, timeouts, offline, cadences) are
/// `FleetSession`'s, a pure state machine on the monotonic clock; the thread
/// (FleetLink+Thread.swift) only moves bytes between it, the MQTT client and the log's file.
public final class FleetLink: FleetLinkView, @unchecked Sendable {
  public let settings: FleetSettings
  public let logPath: String
  /// The allow-list, revocation list, trust and schedule files a bundle may replace, and the
  /// handler for commands (set before `start`).
  public var inbox: (any FleetInbox)? = nil
  /// Site-wide anti-passback's exchange (set before `start`; nil: passages are not shared).
  public var sitePassages: SitePassages? = nil
  /// Counted uses shared across the site (set before `start`; nil: counted on this reader).
  public var siteUses: SiteUses? = nil
  /// The web admin page's address, for Home Assistant's device link (set before `start`; nil: no page).
  public var adminURL: String? = nil
  /// Home Assistant's command entities (set before `start`; nil: none listed).
  public var homeAssistant: HomeAssistantControl? = nil
  weak var auditLog: (any AuditLogProgress)?
  let worker = WorkerThread()
  let ackedSequence = Atomic<Int64>(0)
  let publishedCount = Atomic<Int64>(0)
  let acknowledgedCount = Atomic<Int64>(0)
  let connectionCount = Atomic<Int64>(0)
  let connectedFlag = Atomic<Bool>(false)
  let offlineFlag = Atomic<Bool>(false)
  private let problemText = Mutex<String>("")
  /// The log published now (its id; empty until known, or for a log made before log ids) and
  /// the last change of log the link made, for STATUS.
  let logText = Mutex<String>("")
  let logNoteText = Mutex<String>("")
  let brokerText = Mutex<String>("")
  /// Frames per second ×100 and the last decision, as the loop reports them (for the state
  /// topic and Home Assistant's sensors).
  public let telemetry = FleetTelemetry()
  /// The door inputs this reader has (set before `start`): each becomes a Home Assistant
  /// binary sensor reading the state topic, which follows the door records of the log (with a
  /// contact, so does the lock's).
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
  func setProblem(_ text: String) {
    let changed = problemText.withLock { p in
      defer { p = text }
      return p != text
    }
    if changed && !text.isEmpty {
      writeStandardError("scangate: fleet: \(text)\n")
    }
  }

  // MARK: - The link's thread (FleetLink+Thread.swift moves the bytes; FleetSession decides)

  /// Says a change of log (journal once, STATUS until the next).
  func setLogNote(_ text: String) {
    logNoteText.withLock { $0 = text }
    writeStandardError("scangate: fleet: \(text)\n")
  }

  /// Where to start publishing log `id` (`identity` as its file says) given what the state file
  /// holds, and what to say about it (nil when the state file is this log's): `FleetSession`'s rule.
  public static func startingPoint(
    _ saved: FleetState.Entry, log id: String?, identity: AuditStore.Identity?
  ) -> (
    acked: Int64, note: String?
  ) {
    FleetSession.startingPoint(saved, log: id, adoptedThrough: identity?.adoptedThrough)
  }

  struct FleetConnectError: Error { var text: String }

  func makeClient(_ url: String) throws(FleetConnectError) -> MQTTClient {
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
  func announce(_ client: MQTTClient, broker: String) {
    _ = try? client.publish(topic: topics.status, Array("online".utf8), qos: 1, retain: true)
    inbox?.connected(client, link: self)
    sitePassages?.subscribe(client)
    siteUses?.subscribe(client)
    homeAssistant?.connected(client, link: self, broker: BrokerAddress(broker))
    if !settings.homeAssistantPrefix.isEmpty {
      var discovery = HomeAssistantDiscovery(settings: settings, version: ScanGateVersion.string)
      discovery.configurationURL = adminURL
      if doorSensors.contact { discovery.binarySensors.append(("door_contact", "Door contact", "door", "door_contact")) }
      if doorSensors.tamper { discovery.binarySensors.append(("tamper", "Tamper", "tamper", "tamper")) }
      if telemetry.emergency {
        discovery.binarySensors.append(("fire", "Fire release", "safety", "fire"))
        discovery.binarySensors.append(("lockdown", "Lockdown", "", "lockdown"))
      }
      discovery.occupancy = telemetry.occupancy != nil
      discovery.lock = doorSensors.contact
      discovery.commands = homeAssistant?.commands ?? []
      discovery.codeRequired = homeAssistant?.code != nil
      for topic in discovery.retiredTopics {
        _ = try? client.publish(topic: topic, [], qos: 1, retain: true)
      }
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
    if let siteUses {
      w.write("; ")
      w.write(siteUses.statusText)
    }
    homeAssistant?.writeStatus(into: &w)
  }
}

/// What the link needs of the log's writer in this process: how many records it has written
/// (the link reads the file for new ones when this moves) and where pruning must stop.
public protocol AuditLogProgress: AnyObject {
  var writtenRecords: Int64 { get }
  var retainFrom: Int64 { get set }
  /// The log the writer has open (its id), so the link follows it to a new log.
  var writerLog: WriterLog { get }
  /// "ok" or the writer's fault (nil: not known here).
  var faultName: String? { get }
}

extension AuditLogProgress {
  public var writerLog: WriterLog { .notHere }
  public var faultName: String? { nil }
}

extension AuditLog: AuditLogProgress {
  /// "ok", or the log's fault (Home Assistant's diagnostic sensor).
  public var faultName: String? { fault.name }
}

/// What arrives on the link's subscriptions (bundles, commands): the handler subscribes when
/// a connection is up and is handed every message on the link's thread.
public protocol FleetInbox: AnyObject {
  func connected(_ client: MQTTClient, link: FleetLink)
  func received(_ message: MQTTMessage, link: FleetLink, client: MQTTClient)
}
