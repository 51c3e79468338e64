import ScanCore

/// What a console command may ask of the reader: a read-only status value, the recent
/// decisions and log records, and a few actions. The run loop implements it; tests use a fake,
/// so every command is tested without sockets or real time.
public protocol ConsoleHost: ~Copyable {
  /// The reader's state now, for STATUS, STATS and VERSION.
  func consoleStatus() -> ReaderStatus
  /// Writes the last `count` decisions as `| ` lines, oldest first; returns how many.
  func writeLastDecisions(_ count: Int, payloads: PayloadVisibility, into w: inout ByteWriter) -> Int
  /// Starts reading the newest `count` audit records for `session`, off the loop's thread; the
  /// host replies when they are in.
  mutating func startLog(_ query: AuditQuery, for session: SessionTicket) -> LogStart
  /// What the decision on `payload` would be now, without acting or recording; the entry's
  /// label is copied into `label` (returns its length).
  func check(_ payload: UnsafeRawBufferPointer, label: UnsafeMutableRawBufferPointer) -> (Verdict, labelCount: Int)
  /// Pulses the relay for a console OPEN.
  mutating func open(milliseconds: Int?) -> OpenOutcome
  /// Reloads the allow-list now.
  mutating func reload() -> ReloadOutcome
  /// Plays every buzzer pattern and pulses the relay briefly.
  mutating func selfTest()
  /// Starts a snapshot whose reply goes to the session `session` names (checked again before
  /// the reply is sent: a client that left does not hand its reply to the next one).
  mutating func startSnapshot(for session: SessionTicket, text: Bool, redacted: Bool) -> SnapshotStart
  /// Records a console event (command, AUTH failure) in the event ring; returns its sequence.
  @discardableResult
  mutating func record(_ kind: EventKind, code: UInt16, text: UnsafeRawBufferPointer) -> UInt64
  /// The clock, its floor and whether it is synchronised (CLOCK, STATUS); nil when the reader
  /// keeps no clock floor.
  func clockReport() -> ClockReport?
  /// An operator's CLOCK FLOOR RESET: the floor becomes the clock's reading now, even when that
  /// is earlier (a floor raised by a bad reading), and is written durably. The floor before and
  /// after; nil when the reader keeps no floor.
  mutating func resetClockFloor() -> (before: Int64, after: Int64)?
  /// LOCKDOWN ON/OFF, TURNSTILE FORGIVE/RESET by an operator (`who`: the session, as records
  /// name it): carried out by the participant that owns it; nil when none does (not configured).
  mutating func perform(_ action: ConsoleAction, who: UnsafeRawBufferPointer) -> ConsoleActionOutcome?
  /// ENROL LAST / ENROL <tag> (operator `who`): the last decision's code (`tag` nil), or the
  /// recent unknown code whose shown tag is `tag`, when it was denied as unknown, is added to the
  /// allow-list file as a digest entry with `label` and `schedule` (empty: none), written durably
  /// and reloaded; recorded with who once done.
  mutating func enrol(
    tag: UInt64?, label: UnsafeRawBufferPointer, schedule: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer
  ) -> AllowListChange
  /// ENROL CANDIDATES: the newest codes denied as unknown as `| ` lines (tag, time, verdict,
  /// format, the payload escaped unless `payloads` hides it, what refuses it); returns how many.
  func writeEnrolCandidates(payloads: PayloadVisibility, into w: inout ByteWriter) -> Int
  /// REMOVE label=... (operator `who`): that entry's line is taken out of the file the same way.
  mutating func removeEntry(label: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer) -> AllowListChange
  /// IMPORT: one step of an import for `session` (DATA's bytes in `data`; `who` for APPLY's record).
  mutating func importPeople(
    _ step: ImportStep, data: UnsafeRawBufferPointer, session: SessionTicket, who: UnsafeRawBufferPointer
  )
    -> ImportOutcome
  /// PIN label=... <digits>|CLEAR (operator `who`): the entry's `pin=` made from `pin` under the
  /// keypad's PIN key (nil: taken off), written durably and reloaded; the PIN is never recorded.
  mutating func setPin(label: UnsafeRawBufferPointer, pin: UnsafeRawBufferPointer?, who: UnsafeRawBufferPointer) -> AllowListChange
  /// PASSES: up to `count` counted passes this reader remembers, the latest first use first, as
  /// `| id=<hex> uses=<n> first=<time> until=<time>` lines; returns how many were written and how many there are.
  func writePasses(_ count: Int, into w: inout ByteWriter) -> (shown: Int, total: Int)
  /// BACKUP (operator `who`): the configuration, lists and state (never a secret) sealed to
  /// `publicKey` with `salt` and `sealing` in the header, sent to `session` as a bulk reply.
  mutating func backup(
    publicKey: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, sealing: BackupSealing, session: SessionTicket,
    who: UnsafeRawBufferPointer
  ) -> BackupStart
  /// LIST: up to `query.count` live entries from index `query.from` whose shown label holds
  /// `query.match`, as `| ` lines (label, tag, flags; never a payload or a digest); returns how
  /// many were written, how many there are, and the index to go on from when entries remain.
  func writeEntries(_ query: EntryQuery, into w: inout ByteWriter) -> (shown: Int, total: Int, next: Int?)
}

/// What LIST asks for (docs/console.md, "LIST"): a page of the allow-list, on the reader's side.
public struct EntryQuery: Sendable, Equatable {
  public var count = 50
  /// The entry index to start from (the last reply's `next from=`).
  public var from = 0
  /// Only labels whose shown form (`Ivy%20Smith`) holds these bytes, ASCII case ignored.
  public var match = LabelLimits.Storage(repeating: 0)
  public var matchCount = 0
  public init(count: Int = 50) { self.count = count }
  public static let countMax = 200

  public static func == (a: EntryQuery, b: EntryQuery) -> Bool {
    a.count == b.count && a.from == b.from && a.matchCount == b.matchCount
      && (0..<a.matchCount).allSatisfy { a.match[$0] == b.match[$0] }
  }

  /// Whether `label` (shown form) holds `match`, ASCII case ignored.
  public func matches(_ label: UnsafeRawBufferPointer) -> Bool {
    guard matchCount > 0 else { return true }
    guard label.count >= matchCount else { return false }
    func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b + 32 : b }
    for start in 0...(label.count - matchCount) {
      var k = 0
      while k < matchCount && lower(label[start + k]) == lower(match[k]) { k += 1 }
      if k == matchCount { return true }
    }
    return false
  }
}

/// What became of ENROL or REMOVE.
public enum AllowListChange: Equatable, Sendable {
  /// The entry is in the file and live: its keyed tag's shown digits, the list's version, the
  /// record's sequence.
  case enrolled(tag: String, version: Int, sequence: UInt64)
  case removed(tag: String, version: Int, sequence: UInt64)
  /// PIN: the entry's `pin=` set (or, `set` false, taken off).
  case pinChanged(set: Bool, version: Int, sequence: UInt64)
  /// Nothing changed (the file and the live list are as they were): the console's code and why.
  case refused(code: Int, reason: String)
}

/// What became of a LOCKDOWN or TURNSTILE action.
public enum ConsoleActionOutcome: Equatable, Sendable {
  case latched
  case alreadyLatched(EmergencyAuthority)
  case cleared
  case notLatched
  /// Latched by another authority: only it lifts the lockdown.
  case heldBy(EmergencyAuthority)
  case forgiven
  case unknownCredential
  case occupancyReset(before: Int64)
  /// The change could not be made durable: nothing changed.
  case notDurable
}

extension ConsoleHost where Self: ~Copyable {
  public func clockReport() -> ClockReport? { nil }
  public mutating func resetClockFloor() -> (before: Int64, after: Int64)? { nil }
  public mutating func perform(_ action: ConsoleAction, who: UnsafeRawBufferPointer) -> ConsoleActionOutcome? { nil }
  public mutating func enrol(
    tag: UInt64?, label: UnsafeRawBufferPointer, schedule: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer
  ) -> AllowListChange { .refused(code: 503, reason: "this reader does not edit its allow-list") }
  public func writeEnrolCandidates(payloads: PayloadVisibility, into w: inout ByteWriter) -> Int { 0 }
  public mutating func removeEntry(label: UnsafeRawBufferPointer, who: UnsafeRawBufferPointer) -> AllowListChange {
    .refused(code: 503, reason: "this reader does not edit its allow-list")
  }
  public func writeEntries(_ query: EntryQuery, into w: inout ByteWriter) -> (shown: Int, total: Int, next: Int?) { (0, 0, nil) }
  public mutating func importPeople(
    _ step: ImportStep, data: UnsafeRawBufferPointer, session: SessionTicket, who: UnsafeRawBufferPointer
  ) -> ImportOutcome {
    .refused(code: 503, reason: "no allow_list.path is configured: there is no file to import into")
  }
  public mutating func backup(
    publicKey: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, sealing: BackupSealing, session: SessionTicket,
    who: UnsafeRawBufferPointer
  ) -> BackupStart { .refused(code: 503, reason: "this reader makes no backups") }
  public func writePasses(_ count: Int, into w: inout ByteWriter) -> (shown: Int, total: Int) { (0, 0) }
  public mutating func setPin(label: UnsafeRawBufferPointer, pin: UnsafeRawBufferPointer?, who: UnsafeRawBufferPointer) -> AllowListChange {
    .refused(code: 503, reason: "this reader does not edit its allow-list")
  }
}

/// The clock as CLOCK and STATUS show it (docs/credentials.md, "Time").
public struct ClockReport: Equatable, Sendable {
  /// The wall clock now and the floor (Unix seconds).
  public var wall: Int64
  public var floor: Int64
  /// The kernel's NTP status.
  public var synchronized: Bool
  /// Why the floor file could not be read or written (it names the file), or nil.
  public var problem: String?
  public init(wall: Int64, floor: Int64, synchronized: Bool, problem: String? = nil) {
    self.wall = wall
    self.floor = floor
    self.synchronized = synchronized
    self.problem = problem
  }
  /// The clock reads earlier than a time known to have passed.
  public var isBehind: Bool { wall < floor }
}

/// Where console replies go: one fixed output buffer per session slot.
public protocol ConsoleOutput: AnyObject {
  /// Appends one whole reply for `slot` (dropping the client if it does not fit).
  func send(_ slot: Int, _ body: (inout ByteWriter) -> Void)
  /// Closes `slot` once what it has pending is sent (QUIT).
  func closeWhenFlushed(_ slot: Int)
}

/// A console OPEN's outcome.
public enum OpenOutcome: Equatable, Sendable {
  /// The relay pulses for this many milliseconds.
  case pulsed(milliseconds: Int)
  /// The relay is resting after a capped period: no pulse for this many more milliseconds.
  case resting(milliseconds: Int)
}

/// RELOAD's outcome.
public enum ReloadOutcome: Sendable {
  case loaded(version: Int, entries: Int)
  case rejected(AllowListError)
}

/// LOG's start.
public enum LogStart: Equatable, Sendable {
  case started
  case busy
  case notConfigured
}

/// SNAPSHOT's start.
public enum SnapshotStart: Equatable, Sendable {
  case started
  case busy
  case noCamera(state: String)
}

/// Names one console session across slot reuse: a reply meant for a client that left must not
/// reach the next client in the same slot.
public struct SessionTicket: Equatable, Sendable {
  public var slot: Int
  public var generation: UInt32
  public init(slot: Int, generation: UInt32) {
    self.slot = slot
    self.generation = generation
  }
}

/// The reader's state as the console shows it. Filled by the host on demand (STATUS is not on
/// the frame path); text fields are written sanitized.
public struct ReaderStatus: Sendable {
  public struct Console: Sendable {
    public var tcpClients = 0
    public var watching = 0
    public var dropped: UInt64 = 0
    public var rejected: UInt64 = 0
    /// Unauthenticated clients closed to make room for a newcomer.
    public var reclaimed: UInt64 = 0
    /// How clients on this host are told apart ("by user"; "" when not reported).
    public var localPeers = ""
    public var serialPath = ""
    public var serialOpen = false
    public var secretProblem: String? = nil
    public var tlsListeners = 0
    public init() {}
  }

  public var version = ""
  public var decoderVersion = ""
  public var gpioVersion = ""
  public var cameraState = "starting"
  public var cameraSummary = ""
  public var cameraError: String? = nil
  public var framesPerSecondTimes100 = 0
  public var droppedFrames: UInt64 = 0
  public var cameraLosses: UInt64 = 0
  public var relayActive = false
  public var buzzerActive = false
  public var stats = ScanStats()
  public var allowListVersion = 0
  public var allowListEntries = 0
  public var allowListLoadedAtUnixSeconds: Int64 = 0
  public var allowListError: AllowListError? = nil
  /// Live entries that need a PIN this reader cannot ask for (each is `denied-pin-unavailable`).
  public var allowListPinRefused = 0
  /// Whether this reader asks for a PIN after the pass (a keypad is its second factor).
  public var pinAvailable = true
  public var decoder: DecoderStats? = nil
  /// The decoder worker processes (nil: the reader decodes in its own process).
  public var decoderWorkers: DecoderIsolationStats? = nil
  /// How the last worker that died on its own ended ("SIGABRT"), or nil.
  public var decoderLastCrash: String? = nil
  public var aim = CodeGeometry()
  public var exposure = ExposureMetrics()
  public var codesInView = 0
  public var lastDecision: Verdict? = nil
  public var lastDecisionAgeSeconds = 0
  public var console = Console()
  /// One line about the audit log (written by the log), or nil when there is none.
  public var logLine: String? = nil
  /// One line about signed credentials (trust, revocation, clock, replay), or nil when off.
  public var credentialsLine: String? = nil
  /// One line about the panel link (panel mode: mode, last poll, Secure Channel, last card), or nil.
  public var panelLine: String? = nil
  /// The clock and its floor (nil: the reader keeps no floor).
  public var clock: ClockReport? = nil
  public var uptimeSeconds: UInt64 = 0
  /// The door, when one is configured.
  public var door: DoorStatus? = nil
  /// Lines a domain writes about itself (`| <name> <line>`: emergency, turnstile, keypad, fleet,
  /// feedback, ...), in the order its participant was registered: a domain adds its own without
  /// a field here.
  public var sections: [StatusSection] = []
  public init() {}

  /// The line a domain wrote (`section("turnstile")`), or nil when it has none.
  public func section(_ name: String) -> String? {
    sections.first { $0.name.description == name }?.line
  }
}

/// One domain's STATUS line: `| <name> <line>` (the line shown sanitised, as every line is).
public struct StatusSection: Sendable, Equatable {
  public let name: StaticString
  public let line: String
  public init(_ name: StaticString, _ line: String) {
    self.name = name
    self.line = line
  }
  public static func == (a: StatusSection, b: StatusSection) -> Bool {
    a.name.description == b.name.description && a.line == b.line
  }
}
