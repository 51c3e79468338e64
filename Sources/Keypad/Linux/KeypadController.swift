import CLinux
import ScanAccessLinux
import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform

/// A PIN after the pass: the engine's second factor and a poll participant. A good pass that
/// needs a PIN (its allow-list entry has `pin=`, or `keypad.require_pin`) starts an entry; the
/// keys come from the keypad (`KeySource`: the Linux input device, grabbed); `enter` checks the
/// PIN against the entry's keyed hash (HMAC-SHA-256 under the site's PIN key, bound to the
/// credential: the allow-list holds nothing a PIN can be brute-forced from without the key), and
/// the grant goes ahead or is refused through the loop's request queue. Wrong PINs are counted
/// per credential (by its keyed tag) and lock it out; the count is written and synced before the
/// refusal takes effect, so a restart does not reset it. Runs on the loop's thread; nothing
/// allocates per key.
public final class KeypadController: PollParticipant, SecondFactor {
  public let settings: KeypadSettings
  private var source: (any KeySource)?
  private let sourceName: String
  /// Opens the keypad again (unplugged and plugged back): tried every 2 s while it is missing.
  private let reopen: (() -> (any KeySource)?)?
  private var nextReopen = Instant(nanoseconds: 0)
  private var entry: PinEntry
  private var attempts: PinAttempts
  private let attemptFile: SlotFile?
  private let wall: any WallClock
  private let time: TrustedTime
  /// The PIN key (32 bytes), wiped at deinit.
  private let pinKey: UnsafeMutableRawBufferPointer
  /// The grant waiting: its id, the credential's digest and tag, its verifier.
  private var waiting: (id: UInt64, digest: Digest, tag: Digest, pin: PinVerifier)? = nil
  /// An outcome to hand the loop on the next service.
  private var outcome: (id: UInt64, verdict: Verdict)? = nil
  private var token = PollSet.Token.none
  /// Counters for STATUS.
  public private(set) var granted: UInt64 = 0
  public private(set) var wrong: UInt64 = 0
  public private(set) var timedOut: UInt64 = 0
  public private(set) var lockouts: UInt64 = 0
  public private(set) var problem: String? = nil

  /// `source`: the keypad (nil: none could be opened; every PIN is then refused, fail-secure);
  /// `attemptPath`: where wrong-PIN counts are kept (nil: no state directory; counted until a
  /// restart, said on STATUS).
  public init(
    settings: KeypadSettings, source: (any KeySource)?, sourceName: String, reopen: (() -> (any KeySource)?)? = nil,
    pinKey: [UInt8], wall: any WallClock, time: TrustedTime, attemptPath: String?
  ) throws(FileError) {
    precondition(pinKey.count == 32)
    self.settings = settings
    self.source = source
    self.sourceName = sourceName
    self.reopen = reopen
    entry = PinEntry(timeoutMilliseconds: settings.entryTimeoutMilliseconds)
    var table = PinAttempts(
      capacity: settings.attemptEntries, attemptsMax: settings.attemptsMax, lockoutSeconds: Int64(settings.lockoutSeconds))
    if let attemptPath {
      attemptFile = try SlotFile(
        path: attemptPath, slotBytes: Self.slotBytes, slotsMax: settings.attemptEntries, reservingSlots: settings.attemptEntries
      ) { i, bytes in
        guard bytes[32] != 0 || bytes.loadUnaligned(fromByteOffset: 40, as: Int64.self) != 0 else { return }
        let tag = Digest(bytes: UnsafeRawBufferPointer(rebasing: bytes[0..<32]))
        let until = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 40, as: Int64.self))
        table.restore(slot: i, PinAttempts.Entry(tag: tag, failures: Int(bytes[32]), lockedUntil: until))
      }
    } else {
      attemptFile = nil
    }
    attempts = table
    self.wall = wall
    self.time = time
    self.pinKey = .allocate(byteCount: 32, alignment: 8)
    pinKey.withUnsafeBytes { self.pinKey.copyMemory(from: $0) }
  }

  /// An allow-list entry's `pin=` for `pin` on the code whose SHA-256 is `digest`, under this
  /// reader's PIN key (the console's PIN: the key never leaves this object).
  public func verifier(digest: Digest, pin: UnsafeRawBufferPointer) -> Digest {
    PinMAC.verifier(key: UnsafeRawBufferPointer(pinKey), digest: digest, pin: pin)
  }

  deinit {
    sg_memzero(pinKey.baseAddress, 32)
    pinKey.deallocate()
  }

  /// A slot: the tag (32 bytes), failures (1), 7 zero bytes, locked-until (Unix seconds, 8, LE).
  static let slotBytes = 48

  // MARK: The second factor

  public func begin(id: UInt64, pin: PinVerifier?, hasPin: Bool, digest: Digest, tag: Digest, at now: Instant) -> Verdict? {
    guard hasPin || settings.requirePin else { return nil }
    // A refusal here leaves an entry under way alone; a new entry replaces it.
    guard let pin else { return .deniedPin }  // required and none, or a signed pass's that did not open
    guard source != nil else { return .deniedPin }  // no keypad: nothing can be typed
    if attempts.isLocked(tag, now: judgedNow()) { return .deniedPinLocked }
    endEntry()
    waiting = (id, digest, tag, pin)
    entry.begin(at: now)
    return .pinRequired
  }

  private func judgedNow() -> Int64 { time.judged(wall.unixSeconds()) }

  private func endEntry() {
    entry.end()
    waiting = nil
  }

  /// The entry ended with `result`: counted, made durable, handed to the loop.
  private func finish(_ result: PinEntry.Outcome?, matched: Bool) {
    guard let w = waiting else { return }
    var verdict = Verdict.granted
    if matched {
      granted &+= 1
      if let slot = attempts.succeed(w.tag) { _ = persist(slot) }
    } else if result == .timedOut {
      timedOut &+= 1
      verdict = .deniedPin
    } else {
      wrong &+= 1
      let (slot, locked) = attempts.fail(w.tag, now: judgedNow())
      if locked { lockouts &+= 1 }
      // The count is durable before the refusal is shown; if it cannot be, the refusal stands.
      if !persist(slot) { problem = "\(attemptFile?.path ?? "pin attempts"): cannot be written" }
      verdict = locked ? .deniedPinLocked : .deniedPin
    }
    outcome = (w.id, verdict)
    endEntry()
  }

  private func persist(_ slot: Int) -> Bool {
    guard let attemptFile else { return true }
    let e = attempts.entry(slot)
    return attemptFile.write(slot) { bytes in
      for i in 0..<32 { bytes[i] = e.tag.byte(i) }
      bytes[32] = UInt8(clamping: e.failures)
      bytes.storeBytes(of: e.lockedUntil.littleEndian, toByteOffset: 40, as: Int64.self)
    }
  }

  // MARK: The loop

  public var pollCapacity: Int { 1 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if source == nil, let reopen, now >= nextReopen {
      nextReopen = now.adding(milliseconds: 2_000)
      if let opened = reopen() {
        source = opened
        problem = nil
      }
    }
    token = .none
    if let source { token = poll.add(source.descriptor, events: Int16(POLLIN)) }
    if let out = entry.expire(at: now) { finish(out, matched: false) }
    if outcome != nil { return now }
    if entry.active { return entry.deadline }
    return source == nil && reopen != nil ? nextReopen : nil
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    if let source, token != .none, poll.revents(token) != 0 {
      let alive = source.read { key in
        guard waiting != nil, let result = entry.press(key, at: now) else { return }
        let matched = result == .submitted && check()
        finish(result, matched: matched)
      }
      if !alive {
        self.source = nil
        problem = "\(sourceName): the keypad is gone; every PIN is refused until it is back"
        if waiting != nil { finish(.timedOut, matched: false) }
      }
    }
    if let out = entry.expire(at: now) { finish(out, matched: false) }
    if let o = outcome {
      outcome = nil
      requests.post(.secondFactor(id: o.id, verdict: o.verdict))
    }
  }

  /// The typed digits against the waiting grant's verifier, in constant time: an allow-list
  /// entry's under the site's PIN key and bound to the credential's digest, a signed pass's
  /// under its own salt.
  private func check() -> Bool {
    guard let w = waiting else { return false }
    let typed: Digest
    if let salt = w.pin.salt {
      // The salt's bytes in order (a Digest's words are not its bytes in memory order).
      var key = InlineArray<32, UInt8>(repeating: 0)
      for i in 0..<32 { key[i] = salt.byte(i) }
      typed = withUnsafeBytes(of: key) { k in entry.withDigits { PinMAC.verifier(key: k, digest: .zero, pin: $0) } }
      withUnsafeMutableBytes(of: &key) { sg_memzero($0.baseAddress, $0.count) }
    } else {
      typed = entry.withDigits { PinMAC.verifier(key: UnsafeRawBufferPointer(pinKey), digest: w.digest, pin: $0) }
    }
    return withUnsafeBytes(of: typed.words) { a in
      withUnsafeBytes(of: w.pin.mac.words) { b in
        sg_secure_compare(
          a.baseAddress!.assumingMemoryBound(to: UInt8.self), b.baseAddress!.assumingMemoryBound(to: UInt8.self), 32) == 0
      }
    }
  }

  /// STATUS: `keypad <device> ok, 3 granted, 1 wrong, 0 timed out, 0 locked out now`.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    var line = sourceName + (source == nil ? " MISSING (every PIN refused)" : " ok")
    line += settings.requirePin ? ", PIN required for every pass" : ", PIN for entries with pin="
    line += ", \(granted) granted, \(wrong) wrong, \(timedOut) timed out"
    line += ", \(attempts.lockedCount(now: judgedNow())) locked out now"
    if entry.active { line += ", waiting for a PIN" }
    if attemptFile == nil { line += "; no state directory: wrong PINs are counted until a restart" }
    if let problem { line += "; FAULT " + problem }
    status.sections.append(StatusSection("keypad", line))
  }
}
