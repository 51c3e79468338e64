import ScanCore
import ScanPlatform
import Synchronization

/// What the link publishes on the state topic: the last decision it published, the frame rate
/// the loop measured, the door and the emergencies as they are now (their gauges, so a reader
/// that starts shows them at once), a turnstile's occupancy and the diagnostics.
public final class FleetTelemetry: @unchecked Sendable {
  /// The loop's frame rate ×100 (the loop stores it once a second).
  public let framesPerSecond = SharedGauge()
  /// Decoder restarts since the start (the loop stores them once a second).
  public let decoderRestarts = SharedGauge()
  /// The door's and the emergencies' `StateFlags`, stored by their controllers (set before the
  /// link starts; nil: not on this reader, or their records are followed instead).
  public var doorState: SharedGauge? = nil
  public var emergencyState: SharedGauge? = nil
  private let changed = Atomic<Bool>(false)
  private var lastVerdict = ""
  private var lastLabel = ""
  private var lastTime: Int64 = 0
  /// The gauges' values last published, and when the diagnostics were last looked at (the
  /// link's thread only).
  private var publishedDoor: Int64 = -1
  private var publishedEmergency: Int64 = -1
  private var publishedDiagnostics: FleetDiagnostics? = nil
  private var diagnosticsLookedAt = Instant(nanoseconds: 0)
  static let diagnosticsIntervalMilliseconds = 30_000

  public init() {}

  public func noteDecision(_ record: AuditRecord) {
    lastVerdict = record.verdict?.name ?? ""
    lastLabel = record.label
    lastTime = record.wallNanoseconds
    changed.store(true, ordering: .relaxed)
  }

  /// The door as its records say (nil until the first one): contact, tamper, strike; used when
  /// no gauge is set.
  private var doorOpen: Bool? = nil
  private var tamperActive: Bool? = nil
  private var unlocked = false
  /// Fire and lockdown as their records say (nil until the first one; "OFF" is published from
  /// the start when `emergency` is set), and the turnstile's occupancy (nil: no turnstile).
  private var fire: Bool? = nil
  private var lockdown: Bool? = nil
  public var emergency = false
  public var occupancy: SharedGauge? = nil

  public func noteDoor(_ record: AuditRecord) {
    switch record.kind {
    case .doorOpened, .doorForced, .doorHeldOpen: doorOpen = true
    case .doorClosed: doorOpen = false
    case .tamper: tamperActive = record.code == 1
    case .doorUnlocked: unlocked = true
    case .doorLocked: unlocked = false
    case .fireAlarm: fire = record.code == 1
    case .lockdown: lockdown = record.code & 0xFF == 1
    case .passage, .occupancyReset: break  // the count is read from the gauge
    default: return
    }
    changed.store(true, ordering: .relaxed)
  }

  /// Whether the state topic should be published again: a decision or door record went out, a
  /// gauge moved, or (every 30 s) a diagnostic changed.
  func takeChanged(now: Instant, diagnostics: () -> FleetDiagnostics) -> Bool {
    var due = changed.exchange(false, ordering: .relaxed)
    if let doorState, doorState.load() != publishedDoor { due = true }
    if let emergencyState, emergencyState.load() != publishedEmergency { due = true }
    if now.milliseconds(since: diagnosticsLookedAt) >= Self.diagnosticsIntervalMilliseconds || diagnosticsLookedAt.nanoseconds == 0 {
      diagnosticsLookedAt = now
      if diagnostics().judged != publishedDiagnostics { due = true }
    }
    return due
  }

  public func stateJSON(link: FleetLink, diagnostics: FleetDiagnostics = FleetDiagnostics()) -> [UInt8] {
    var o = JSONObject()
    o.add("reader", link.settings.readerID)
    o.add("last_decision", lastVerdict.isEmpty ? "none" : lastVerdict)
    if !lastLabel.isEmpty { o.add("last_label", lastLabel) }
    if lastTime > 0 { o.add("last_decision_time", RFC3339.format(lastTime / 1_000_000_000)) }
    let f = Int(framesPerSecond.load())
    o.add("fps", raw: "\(f / 100).\(f % 100 < 10 ? "0" : "")\(f % 100)")
    o.add("acked_seq", link.acknowledgedThrough)
    o.add("offline_policy_active", link.isOffline)
    addDoor(to: &o)
    addEmergency(to: &o)
    if let occupancy { o.add("occupancy", raw: String(occupancy.load())) }
    diagnostics.add(to: &o)
    publishedDiagnostics = diagnostics.judged
    return o.bytes
  }

  /// `door_contact`, `tamper`, `lock` (locked only as far as the reader can tell: the strike
  /// engaged and the contact saying closed; absent without a contact) and `strike`.
  private func addDoor(to o: inout JSONObject) {
    var open = doorOpen, tamper = tamperActive, released: Bool? = doorOpen == nil ? nil : unlocked
    if let doorState {
      let raw = doorState.load()
      publishedDoor = raw
      let flags = StateFlags(raw: raw)
      (open, tamper, released) = (flags.value(StateFlags.doorOpen), flags.value(StateFlags.tamper), flags.value(StateFlags.strikeReleased))
    }
    if let open, let released { o.add("lock", released || open ? "UNLOCKED" : "LOCKED") }
    if let released { o.add("strike", released ? "UNLOCKED" : "LOCKED") }
    if let open { o.add("door_contact", open ? "ON" : "OFF") }
    if let tamper { o.add("tamper", tamper ? "ON" : "OFF") }
  }

  private func addEmergency(to o: inout JSONObject) {
    guard emergency else { return }
    var fireOn = fire == true, lockdownOn = lockdown == true
    if let emergencyState {
      let raw = emergencyState.load()
      publishedEmergency = raw
      let flags = StateFlags(raw: raw)
      fireOn = flags.value(StateFlags.fire) ?? fireOn
      lockdownOn = flags.value(StateFlags.lockdown) ?? lockdownOn
    }
    o.add("fire", fireOn ? "ON" : "OFF")
    o.add("lockdown", lockdownOn ? "ON" : "OFF")
  }
}

/// Home Assistant's diagnostic sensors, looked at by the link's thread: decoder restarts, the
/// audit log's fault, records not yet acknowledged by the broker, and the space left where the
/// log is (nil: not known here).
public struct FleetDiagnostics: Equatable, Sendable {
  public var decoderRestarts: Int64? = nil
  public var logFault: String? = nil
  public var backlog: Int64? = nil
  public var logDiskFreeMiB: Int64? = nil
  public init() {}

  /// What a change is judged by: the disk's space in steps of 16 MiB, so the state is not
  /// published again for every page the log writes.
  var judged: FleetDiagnostics {
    var copy = self
    copy.logDiskFreeMiB = logDiskFreeMiB.map { $0 / 16 }
    return copy
  }

  func add(to o: inout JSONObject) {
    if let decoderRestarts { o.add("decoder_restarts", decoderRestarts) }
    if let logFault { o.add("log_fault", logFault) }
    if let backlog { o.add("fleet_backlog", backlog) }
    if let logDiskFreeMiB { o.add("log_disk_free_mib", logDiskFreeMiB) }
  }
}
