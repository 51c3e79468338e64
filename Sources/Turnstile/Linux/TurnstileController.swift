import ScanConsole
import ScanCore
import ScanFleetLinux
import ScanLoop
import ScanPlatform

/// The turnstile on the loop: a poll participant and the engine's `PassageGate`.
///
/// A grant reaches it through `admit` (on the loop's thread, inside the engine's decision):
/// anti-passback is checked at the trusted time, the credential's record written and synced
/// (`SlotFile`) before the direction unlocks, and the machine given one passage. The passage
/// sensors' and the alarm input's edges (libgpiod, or simulated lines) run the
/// `TurnstileMachine`; its transitions go to the ring with the grant's label and the
/// credential's tag (console WATCH, journal, audit log, fleet); a passage counts in the area's
/// occupancy (kept durably), a grant nobody used gives its anti-passback record back. It follows
/// the ring for the fire release (every direction free). Nothing allocates per grant or edge.
public final class TurnstileController: PollParticipant, PassageGate, SitePassageRecorder {
  public private(set) var machine: TurnstileMachine
  public let passback: AntiPassback
  public private(set) var occupancy = Occupancy() {
    didSet { occupancyGauge.store(occupancy.count) }
  }
  /// The occupancy for other threads (the fleet's state topic and Home Assistant's sensor).
  public let occupancyGauge = SharedGauge()
  public let config: TurnstileConfig
  /// Entry passage, exit passage, the turnstile's alarm (`TurnstileInput`'s order), then the
  /// direction input.
  private let inputs: InputLines
  private var directionLevel = LineLevel.inactive
  /// With `direction = "camera"`: which camera the decision came from (the loop's source sets it).
  public var frameOrigin: FrameOrigin? = nil
  private var outputs: InlineArray<3, (any OutputLine)?>
  private var outputLevels = InlineArray<3, LineLevel>(repeating: .inactive)
  private let ring: EventRing
  private var cursor: EventCursor
  private let wall: any WallClock
  private let time: TrustedTime
  private let passbackFile: SlotFile?
  private let occupancyFile: SlotFile?
  /// Why state is not kept (STATUS), or nil.
  public private(set) var problem: String? = nil
  public var inputErrors: UInt64 { inputs.errors }
  public private(set) var outputErrors: UInt64 = 0
  public var resyncs: UInt64 { inputs.resyncs }
  public private(set) var refusedNotDurable: UInt64 = 0
  public private(set) var refusedQueueFull: UInt64 = 0
  public private(set) var deniedPassback: UInt64 = 0
  /// Site-wide: grants refused while the fleet link was down (offline rule `deny`), grants
  /// decided on this reader's records alone while it was down, and passages learned from others.
  public private(set) var deniedOffline: UInt64 = 0
  public private(set) var grantedOffline: UInt64 = 0
  public private(set) var remoteRecorded: UInt64 = 0
  public private(set) var remoteNotDurable: UInt64 = 0
  /// Site-wide anti-passback (`turnstile.passback_site`): the link's state and where this
  /// reader's passages go. With it set, `keyer` is the site key (identities keyed the same on
  /// every reader of the site).
  public var site: (any SitePassageSink)? = nil
  /// Keys an identity before it is kept (the anti-passback file) or shown (events' tags): the
  /// reader's tag key (`PayloadTagger`); nil keeps it as it comes (tests).
  public var keyer: (any PayloadTagger)? = nil
  /// The credential last refused for anti-passback (TURNSTILE FORGIVE LAST).
  private var lastRefused: Digest? = nil
  private var fire = false

  /// What a waiting grant carries to its passage (or its timeout): label, tag, and the
  /// anti-passback record it wrote, to give back when nobody passes.
  private struct Ticket {
    var number: UInt32 = 0
    var tag = Digest.zero
    var label = InlineArray<64, UInt8>(repeating: 0)
    var labelCount = 0
    var slot = -1
    var previous: PassbackRecord? = nil
  }
  private var tickets = InlineArray<8, Ticket>(repeating: Ticket())
  private var nextTicket: UInt32 = 1

  /// The turnstile on `inputs` (entry passage, exit passage, alarm input) and `outputs` (entry
  /// unlock, exit unlock, alarm), its state kept at `passbackPath` and `occupancyPath` (nil: no
  /// state directory; anti-passback then refuses every grant it would have to remember, since a
  /// restart would forget it, and occupancy restarts at 0).
  public init(
    config: TurnstileConfig, ring: EventRing, wall: any WallClock, time: TrustedTime, now: Instant,
    entryPassage: (any InputLine)?, exitPassage: (any InputLine)?, alarmInput: (any InputLine)?,
    direction: (any InputLine)?, entryUnlock: (any OutputLine)?, exitUnlock: (any OutputLine)?,
    alarm: (any OutputLine)?, passbackPath: String?, occupancyPath: String?
  ) {
    self.config = config
    // Built here from single values (as DoorController does): an InlineArray of optional
    // existentials passed in as an argument crashed a debug build (Swift 6.3, retain in init).
    let inputs = InputLines([entryPassage, exitPassage, alarmInput, direction])
    self.inputs = inputs
    outputs = [entryUnlock, exitUnlock, alarm]
    var levels = InlineArray<3, LineLevel>(repeating: .inactive)
    for i in 0..<3 { levels[i] = inputs.levels[i] }
    directionLevel = inputs.levels[3]
    machine = TurnstileMachine(settings: config.machine, now: now, levels: levels)
    let table = AntiPassback(settings: config.passback)
    passback = table
    var problems: [String] = []
    var file: SlotFile? = nil
    if config.passback.mode != .off, let passbackPath {
      do {
        file = try SlotFile(path: passbackPath, slotBytes: PassbackRecord.encodedBytes, slotsMax: table.capacity, reservingSlots: table.capacity) {
          slot, bytes in
          table.restore(slot: slot, PassbackRecord(decoding: bytes))
        }
      } catch { problems.append("\(error); anti-passback refuses every grant") }
    } else if config.passback.mode != .off {
      problems.append("no state directory: anti-passback refuses every grant")
    }
    passbackFile = file
    var count = Occupancy()
    var occupancyFile: SlotFile? = nil
    if let occupancyPath {
      do {
        occupancyFile = try SlotFile(path: occupancyPath, slotBytes: Occupancy.encodedBytes, slotsMax: 1, reservingSlots: 1) { _, bytes in
          if let o = Occupancy(decoding: bytes) { count = o } else { problems.append("\(occupancyPath): damaged; occupancy from 0") }
        }
      } catch { problems.append("\(error); occupancy is not kept") }
    }
    self.occupancyFile = occupancyFile
    occupancy = count
    occupancyGauge.store(count.count)
    problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
    // On STATUS for as long as it lasts, and in the journal once (a deleted file is a fault).
    for p in problems { writeStandardError("scangate: turnstile: \(p)\n") }
    self.ring = ring
    self.wall = wall
    self.time = time
    cursor = EventCursor(next: ring.nextSequence)
  }

  /// The direction a grant now is for.
  public var direction: PassageDirection {
    switch config.direction {
    case .entry: .entry
    case .exit: .exit
    case .input: directionLevel == .active ? .exit : .entry
    case .camera: frameOrigin?.camera == 1 ? .exit : .entry
    }
  }

  // MARK: - The gate

  public func admit(identity raw: Digest?, label: UnsafeRawBufferPointer, tag: Digest, at now: Instant) -> Verdict {
    let identity = raw.map { keyer?.tag($0) ?? $0 }
    machine.advance(to: now)
    if fire { return .granted }  // free passage: every direction is released anyway
    let d = direction
    guard machine.waiting(d) < config.machine.grantsQueuedMax else {
      refusedQueueFull &+= 1
      return .deniedUnavailable
    }
    var ticket = Ticket()
    ticket.tag = identity ?? tag
    ticket.labelCount = min(label.count, 64)
    for i in 0..<ticket.labelCount { ticket.label[i] = label[i] }
    let linkUp = site?.linkConnected ?? false
    let judgement = config.site.judgement(mode: config.passback.mode, linkConnected: linkUp)
    if judgement != .off {
      // Without a durable record a restart would let the same pass through again: refused.
      guard let identity, let file = passbackFile else {
        refusedNotDurable &+= 1
        return .deniedUnavailable
      }
      // Site-wide with the link down: the offline rule (`turnstile.passback_offline`).
      guard case .check(let mode) = judgement else {
        deniedOffline &+= 1
        return .deniedOffline
      }
      let judged = time.judged(wall.unixSeconds())
      guard passback.check(identity, d, now: judged, mode: mode) == .granted else {
        deniedPassback &+= 1
        lastRefused = identity
        return .deniedPassback
      }
      let (slot, previous) = passback.record(identity, d, now: judged)
      let record = passback.record(at: slot)
      guard file.write(slot, { if let record { record.encode(into: $0) } }) else {
        passback.undo(slot: slot, previous: previous)
        refusedNotDurable &+= 1
        return .deniedUnavailable
      }
      ticket.slot = slot
      ticket.previous = previous
      if config.site.enabled && !linkUp {
        grantedOffline &+= 1
        writeStandardError("scangate: turnstile: fleet link down: anti-passback granted on this reader's records alone (passback_offline)\n")
      }
    }
    ticket.number = nextTicket
    nextTicket = nextTicket == UInt32.max ? 1 : nextTicket + 1
    guard machine.grant(d, ticket: ticket.number, at: now) else {
      giveBack(ticket)
      refusedQueueFull &+= 1
      return .deniedUnavailable
    }
    tickets[Int(ticket.number % 8)] = ticket
    drive(now: now)
    return .granted
  }

  /// OPEN: one passage in the current direction, labelled `console`, with no anti-passback record.
  public func openOnce(at now: Instant) -> Bool {
    machine.advance(to: now)
    // With a camera per direction no frame says which way: an operator's OPEN lets one in.
    let d = config.direction == .camera ? .entry : direction
    guard machine.waiting(d) < config.machine.grantsQueuedMax else { return false }
    var ticket = Ticket()
    for (i, b) in "operator".utf8.enumerated() { ticket.label[i] = b }
    ticket.labelCount = 8
    ticket.number = nextTicket
    nextTicket = nextTicket == UInt32.max ? 1 : nextTicket + 1
    guard machine.grant(d, ticket: ticket.number, at: now) else { return false }
    tickets[Int(ticket.number % 8)] = ticket
    drive(now: now)
    return true
  }

  /// A passage another reader of the site made (its message checked by `SitePassages`, handed
  /// over on the loop): recorded in the anti-passback table and its file, unless the table holds
  /// a later passage of the credential. False when not recorded (older, or not durable).
  @discardableResult
  public func recordRemote(identity: Digest, direction: PassageDirection, unixSeconds: Int64) -> Bool {
    guard config.passback.mode != .off, let file = passbackFile else { return false }
    guard let (slot, previous) = passback.merge(identity, direction, at: unixSeconds, now: time.judged(wall.unixSeconds())) else {
      return false
    }
    let record = passback.record(at: slot)
    guard file.write(slot, { if let record { record.encode(into: $0) } }) else {
      passback.undo(slot: slot, previous: previous)
      remoteNotDurable &+= 1
      return false
    }
    remoteRecorded &+= 1
    return true
  }

  /// A grant nobody used: its anti-passback record goes back to what it was (durably).
  private func giveBack(_ ticket: Ticket) {
    guard ticket.slot >= 0 else { return }
    passback.undo(slot: ticket.slot, previous: ticket.previous)
    let record = passback.record(at: ticket.slot)
    _ = passbackFile?.write(ticket.slot) { if let record { record.encode(into: $0) } }
  }

  // MARK: - The loop

  public var pollCapacity: Int { 4 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    follow(now: now)
    machine.advance(to: now)
    publish(now: now)
    var next = machine.nextDeadline(after: now)
    inputs.prepare(poll, now: now, next: &next)
    return next
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    follow(now: now)
    inputs.service(poll, now: now) { i, level, at in
      if let input = TurnstileInput(rawValue: i) { machine.edge(input, level: level, at: at) } else { directionLevel = level }
    }
    machine.advance(to: now)
    publish(now: now)
  }

  /// The fire release, from the emergency's events in the ring.
  private func follow(now: Instant) {
    cursor.read(ring) { item in
      guard case .event(let e) = item, e.kind == .fireAlarm else { return }
      fire = e.code == 1
      machine.setFree(fire, at: max(e.monotonic, machine.now))
    }
  }

  /// Records the machine's transitions (with their grant's label and tag), counts passages,
  /// gives back unused grants, and drives the lines.
  private func publish(now: Instant) {
    let wallNow = wall.unixNanoseconds()
    while let t = machine.takeTransition() {
      var e = ScanEvent(t.kind, code: t.code, at: t.at, seenAt: now, wallNow: wallNow)
      if t.ticket != 0, tickets[Int(t.ticket % 8)].number == t.ticket {
        let ticket = tickets[Int(t.ticket % 8)]
        e.tag = ticket.tag
        withUnsafeBytes(of: ticket.label) { e.setLabel(UnsafeRawBufferPointer(rebasing: $0[0..<ticket.labelCount])) }
        if t.kind == .grantedNotPassed { giveBack(ticket) }
        if t.kind == .passage, ticket.slot >= 0, let site {
          // A passage with an identity (keyed under the site key): the site's other readers learn it.
          site.send(identity: ticket.tag, direction: PassageCode.direction(t.code), unixSeconds: time.judged(wall.unixSeconds()))
        }
        if t.kind == .passage || t.kind == .grantedNotPassed { tickets[Int(t.ticket % 8)].number = 0 }
      }
      if t.kind == .passage {
        occupancy.passage(PassageCode.direction(t.code))
        persistOccupancy()
      }
      ring.append(e)
    }
    cursor = EventCursor(next: max(cursor.next, ring.nextSequence))
    drive(now: now)
  }

  private func persistOccupancy() {
    let o = occupancy
    _ = occupancyFile?.write(0) { o.encode(into: $0) }
  }

  /// Drives the entry and exit unlock lines and the alarm line to the machine's levels.
  private func drive(now: Instant) {
    let wanted: InlineArray<3, LineLevel> = [
      machine.outputLevel(.entry, at: now), machine.outputLevel(.exit, at: now), machine.alarmLevel(at: now),
    ]
    for i in 0..<3 where outputs[i] != nil && wanted[i] != outputLevels[i] {
      do throws(GPIOError) {
        try outputs[i]!.set(wanted[i])
        outputLevels[i] = wanted[i]
      } catch { outputErrors &+= 1 }
    }
  }

  /// Every output inactive (shutdown): the turnstile locks.
  public func release() {
    for i in 0..<3 where outputs[i] != nil {
      do throws(GPIOError) { try outputs[i]!.set(.inactive) } catch { outputErrors &+= 1 }
      outputLevels[i] = .inactive
    }
  }

  public func level(_ d: PassageDirection) -> LineLevel { outputLevels[Int(d.rawValue)] }

  // MARK: - Operators

  /// TURNSTILE FORGIVE and RESET (console, fleet).
  public func perform(_ command: OperatorCommand) -> OperatorReply? {
    guard case .action(let action, _, _) = command else { return nil }
    let now = machine.now
    switch action {
    case .forgiveLast, .forgiveTag:
      var key: Digest? = nil
      if case .forgiveTag(let prefix) = action {
        key = passback.find(prefix: prefix)
      } else {
        key = lastRefused
      }
      guard let key, let slot = passback.forgive(key) else { return .action(.unknownCredential) }
      guard passbackFile?.write(slot, { _ in }) ?? true else { return .action(.notDurable) }
      if key == lastRefused { lastRefused = nil }
      var e = ScanEvent(.passbackForgiven, at: now, wall: wall.unixNanoseconds())
      e.tag = key
      ring.append(e)
      return .action(.forgiven)
    case .resetOccupancy:
      var reset = occupancy
      let before = reset.reset()
      guard occupancyFile?.write(0, { reset.encode(into: $0) }) ?? true else { return .action(.notDurable) }
      occupancy = reset
      ring.append(ScanEvent(.occupancyReset, code: UInt16(clamping: before), at: now, wall: wall.unixNanoseconds()))
      return .action(.occupancyReset(before: before))
    default:
      return nil
    }
  }

  /// STATUS and TURNSTILE: each direction, occupancy, anti-passback, problems.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    var line = config.machine.wiring.rawValue + ", grants go " + (config.direction == .camera ? "by camera (1 entry, 2 exit)" : direction.name)
    if fire { line += "; FIRE: free passage" }
    for d in PassageDirection.allCases {
      line += "; " + d.name + " " + (outputLevels[Int(d.rawValue)] == .active ? "unlocked" : "locked")
      line += " \(machine.waiting(d)) waiting \(machine.passageCount(d)) passed"
    }
    line += "; \(machine.grantedNotPassedCount) granted-not-passed, \(machine.forcedCount) forced"
    line += "; occupancy " + config.area + " \(occupancy.count)"
    line += "; passback " + config.passback.mode.rawValue
    if config.passback.mode != .off { line += " \(passback.count) kept, \(deniedPassback) refused" }
    if config.site.enabled {
      line += "; site-wide (offline rule " + config.site.offline.rawValue + ", link " + ((site?.linkConnected ?? false) ? "up" : "DOWN")
      line += ") \(remoteRecorded) learned, \(deniedOffline) refused offline, \(grantedOffline) granted offline"
    }
    if refusedNotDurable > 0 { line += "; \(refusedNotDurable) refused (state not durable)" }
    if let file = passbackFile, !file.reserved { line += "; passback file's blocks not reserved: a full disk refuses new grants" }
    if let file = occupancyFile, file.writeFailures > 0 { line += "; occupancy not durable (\(file.writeFailures) failed writes)" }
    if let problem { line += "; FAULT " + problem }
    if inputErrors + outputErrors > 0 { line += "; \(inputErrors) input, \(outputErrors) output errors" }
    status.sections.append(StatusSection("turnstile", line))
  }
}
