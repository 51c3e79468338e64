import ScanBase

/// Bounds the allow-list is checked against at load time.
public struct AllowListLimits: Equatable, Sendable {
  public var entriesMax: Int
  public var fileBytesMax: Int
  public var lineBytesMax: Int
  public static let labelBytesMax = LabelLimits.bytesMax
  public init(entriesMax: Int = 10_000, fileBytesMax: Int = 8 << 20, lineBytesMax: Int = 8_192) {
    self.entriesMax = entriesMax
    self.fileBytesMax = fileBytesMax
    self.lineBytesMax = lineBytesMax
  }
}

/// An allow-list refused at a line; the live list stays in force.
public typealias AllowListError = LineRejection

/// One allow-list table: digests in fixed open-addressing slots, allocated once.
///
/// `text:` entries are stored by their SHA-256 too, so the table holds one kind of key and a
/// lookup is one digest plus a probe sequence.
public struct AllowListTable: ~Copyable {
  public let entriesMax: Int
  public private(set) var count = 0
  private let slotMask: Int
  private let slots: UnsafeMutableBufferPointer<Int32>  // entry index + 1; 0 = empty
  private let digests: UnsafeMutableBufferPointer<Digest>
  private let validFrom: UnsafeMutableBufferPointer<Int64>
  private let validUntil: UnsafeMutableBufferPointer<Int64>
  private let labels: UnsafeMutableRawBufferPointer
  private let labelLengths: UnsafeMutableBufferPointer<UInt8>
  /// The entry's `schedule=` name as `ScheduleKey` (0: none).
  private let scheduleKeys: UnsafeMutableBufferPointer<UInt64>
  /// Per entry: `static=yes` (bit 0: kept under the fleet's deny-all-but-static offline policy)
  /// and `lockdown=yes` (bit 1: still granted during a lockdown).
  private let flags: UnsafeMutableBufferPointer<UInt8>
  static let staticFlag: UInt8 = 1
  static let lockdownFlag: UInt8 = 2
  static let pinFlag: UInt8 = 4
  private let cards: UnsafeMutableBufferPointer<CardNumber?>
  /// The entry's `pin=` verifier (a keyed hash of its PIN: docs/admin.md, "PIN"), when bit 2 is set.
  private let pins: UnsafeMutableBufferPointer<Digest>

  public init(entriesMax: Int) {
    precondition(entriesMax > 0 && entriesMax <= 1_000_000)
    self.entriesMax = entriesMax
    var slotCount = 16
    while slotCount < entriesMax * 2 { slotCount <<= 1 }
    slotMask = slotCount - 1
    slots = .allocate(capacity: slotCount)
    slots.initialize(repeating: 0)
    digests = .allocate(capacity: entriesMax)
    digests.initialize(repeating: .zero)
    validFrom = .allocate(capacity: entriesMax)
    validFrom.initialize(repeating: .min)
    validUntil = .allocate(capacity: entriesMax)
    validUntil.initialize(repeating: .max)
    labels = .allocate(byteCount: entriesMax * AllowListLimits.labelBytesMax, alignment: 8)
    labels.initializeMemory(as: UInt8.self, repeating: 0)
    labelLengths = .allocate(capacity: entriesMax)
    labelLengths.initialize(repeating: 0)
    scheduleKeys = .allocate(capacity: entriesMax)
    scheduleKeys.initialize(repeating: 0)
    flags = .allocate(capacity: entriesMax)
    flags.initialize(repeating: 0)
    cards = .allocate(capacity: entriesMax)
    cards.initialize(repeating: nil)
    pins = .allocate(capacity: entriesMax)
    pins.initialize(repeating: .zero)
  }

  deinit {
    slots.deallocate(); digests.deallocate(); validFrom.deallocate(); validUntil.deallocate()
    labels.deallocate(); labelLengths.deallocate(); scheduleKeys.deallocate(); cards.deallocate(); flags.deallocate()
    pins.deallocate()
  }

  /// Bytes this table holds, for the memory budget.
  public static func bytes(entriesMax: Int) -> Int {
    var slotCount = 16
    while slotCount < entriesMax * 2 { slotCount <<= 1 }
    return slotCount * 4 + entriesMax * (32 + 8 + 8 + AllowListLimits.labelBytesMax + 1 + 8 + MemoryLayout<CardNumber?>.stride + 1 + 32)
  }

  public mutating func removeAll() {
    slots.update(repeating: 0)
    count = 0
  }

  /// Index of the entry with `digest`, if any.
  public func find(_ digest: Digest) -> Int? {
    var i = Int(truncatingIfNeeded: digest.bucketSeed) & slotMask
    for _ in 0...slotMask {
      let s = slots[i]
      if s == 0 { return nil }
      if digests[Int(s) - 1] == digest { return Int(s) - 1 }
      i = (i + 1) & slotMask
    }
    return nil
  }

  /// Adds an entry; false when the digest is already present. Precondition: not full.
  mutating func insert(
    _ digest: Digest, from: Int64, until: Int64, label: [UInt8], schedule: UInt64 = 0, card: CardNumber? = nil,
    isStatic: Bool = false, isLockdown: Bool = false, pin: Digest? = nil
  ) -> Bool {
    precondition(count < entriesMax)
    if find(digest) != nil { return false }
    let index = count
    digests[index] = digest
    validFrom[index] = from
    validUntil[index] = until
    scheduleKeys[index] = schedule
    flags[index] = (isStatic ? Self.staticFlag : 0) | (isLockdown ? Self.lockdownFlag : 0) | (pin != nil ? Self.pinFlag : 0)
    pins[index] = pin ?? .zero
    let n = min(label.count, AllowListLimits.labelBytesMax)
    for k in 0..<n { labels[index * AllowListLimits.labelBytesMax + k] = label[k] }
    labelLengths[index] = UInt8(n)
    cards[index] = card
    var i = Int(truncatingIfNeeded: digest.bucketSeed) & slotMask
    while slots[i] != 0 { i = (i + 1) & slotMask }
    slots[i] = Int32(index + 1)
    count += 1
    return true
  }

  /// The decision for `digest` at wall time `now`, with the entry's index when it matched.
  public func decide(_ digest: Digest, nowUnixSeconds now: Int64) -> (Verdict, Int?) {
    guard let index = find(digest) else { return (.deniedUnknown, nil) }
    if now < validFrom[index] { return (.deniedNotYetValid, index) }
    if now >= validUntil[index] { return (.deniedExpired, index) }
    return (.granted, index)
  }

  /// Entry `index`'s schedule (`ScheduleKey` of its `schedule=` name; 0: none).
  public func scheduleKey(_ index: Int) -> UInt64 { scheduleKeys[index] }
  /// Whether entry `index` is `static=yes`.
  public func isStatic(_ index: Int) -> Bool { flags[index] & Self.staticFlag != 0 }
  /// Whether entry `index` is `lockdown=yes`.
  public func isLockdown(_ index: Int) -> Bool { flags[index] & Self.lockdownFlag != 0 }
  /// The card number of entry `index` (`card=`), if it has one.
  public func card(_ index: Int) -> CardNumber? { cards[index] }
  /// Entry `index`'s PIN verifier (`pin=`), if it has one.
  public func pin(_ index: Int) -> Digest? { flags[index] & Self.pinFlag != 0 ? pins[index] : nil }

  /// Entry `index`'s digest (the SHA-256 of its payload): for tagging inside the reader only,
  /// never shown (a short payload's SHA-256 can be searched offline).
  package func digest(_ index: Int) -> Digest { digests[index] }
  /// Whether entry `index` has a validity window (`from=` or `until=`).
  public func hasWindow(_ index: Int) -> Bool { validFrom[index] != .min || validUntil[index] != .max }

  /// The label bytes (escaped form, as written in the file) of entry `index`.
  public func label(_ index: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(rebasing: labels[(index * AllowListLimits.labelBytesMax)..<(index * AllowListLimits.labelBytesMax + Int(labelLengths[index]))])
  }
}

/// The live allow-list and its spare: reload parses into the spare, then swaps.
public struct AllowList: ~Copyable {
  private var tables: InlineArray<2, AllowListTable>
  private var liveIndex = 0
  public let limits: AllowListLimits
  /// Increments on every successful load.
  public private(set) var version = 0
  /// Why the last load failed (nil after a success).
  public private(set) var lastError: AllowListError? = nil
  /// Wall time of the last successful load.
  public private(set) var loadedAtUnixSeconds: Int64 = 0

  public init(limits: AllowListLimits) {
    self.limits = limits
    tables = InlineArray { _ in AllowListTable(entriesMax: limits.entriesMax) }
  }

  public var count: Int { tables[liveIndex].count }

  public func decide(_ digest: Digest, nowUnixSeconds now: Int64) -> (Verdict, Int?) {
    tables[liveIndex].decide(digest, nowUnixSeconds: now)
  }

  /// Entry `index`'s schedule key (0: none).
  public func scheduleKey(_ index: Int) -> UInt64 { tables[liveIndex].scheduleKey(index) }
  /// Whether live entry `index` is `static=yes`.
  public func isStatic(_ index: Int) -> Bool { tables[liveIndex].isStatic(index) }
  /// Whether live entry `index` is `lockdown=yes` (granted during a lockdown).
  public func isLockdown(_ index: Int) -> Bool { tables[liveIndex].isLockdown(index) }
  /// The card number of live entry `index`, if it has one.
  public func card(_ index: Int) -> CardNumber? { tables[liveIndex].card(index) }
  /// The PIN verifier of live entry `index` (`pin=`), if it has one.
  public func pin(_ index: Int) -> Digest? { tables[liveIndex].pin(index) }

  /// Live entry `index`'s digest (inside the reader only: see `AllowListTable.digest`).
  package func digest(_ index: Int) -> Digest { tables[liveIndex].digest(index) }
  /// Whether live entry `index` has a `from=`/`until=` window.
  public func hasWindow(_ index: Int) -> Bool { tables[liveIndex].hasWindow(index) }
  /// Whether live entry `index` names a schedule.
  public func hasSchedule(_ index: Int) -> Bool { tables[liveIndex].scheduleKey(index) != 0 }
  /// Live entry `index`'s label bytes (as written in the file).
  public func withLabel<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R { body(tables[liveIndex].label(index)) }

  /// Whether `text` would load, parsed into the spare table (the live list is untouched, and
  /// nothing is recorded): an edit is checked before it is written.
  /// `schedules`: what `schedule=` names must resolve against (the loop's live schedules, or the
  /// schedule file for a tool).
  public mutating func validate(
    _ text: [UInt8], digester: some PayloadDigester, schedules: ScheduleReferences = .notLoaded
  ) -> AllowListError? {
    AllowListParser.parse(text, limits: limits, digester: digester, schedules: schedules, into: &tables[1 - liveIndex])
  }

  /// The schedule keys the live entries name (each once): what a new schedule file must keep.
  public func scheduleKeysInUse() -> [UInt64] {
    var keys: [UInt64] = []
    for i in 0..<count {
      let key = scheduleKey(i)
      if key != 0 && !keys.contains(key) { keys.append(key) }
    }
    return keys
  }

  /// How many live entries need a PIN after the pass (`pin=`).
  public var pinEntryCount: Int {
    var n = 0
    for i in 0..<count where pin(i) != nil { n += 1 }
    return n
  }

  /// Whether live entry `index` needs a PIN after the pass (`pin=`).
  public func hasPin(_ index: Int) -> Bool { tables[liveIndex].pin(index) != nil }

  /// Copies entry `index`'s label into `out`; returns the byte count.
  public func copyLabel(_ index: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
    let label = tables[liveIndex].label(index)
    let n = min(label.count, out.count)
    out.copyMemory(from: UnsafeRawBufferPointer(rebasing: label[0..<n]))
    return n
  }

  /// Parses `text` into the spare table and makes it live. On any error the live list is
  /// untouched and the error is returned (and kept in `lastError`).
  @discardableResult
  public mutating func load(
    _ text: [UInt8], digester: some PayloadDigester, schedules: ScheduleReferences = .notLoaded, nowUnixSeconds: Int64
  ) -> AllowListError? {
    let spare = 1 - liveIndex
    let error = AllowListParser.parse(text, limits: limits, digester: digester, schedules: schedules, into: &tables[spare])
    if let error {
      lastError = error
      return error
    }
    liveIndex = spare
    version += 1
    lastError = nil
    loadedAtUnixSeconds = nowUnixSeconds
    return nil
  }

  /// Records a failure that happened before parsing (the file could not be read).
  public mutating func recordFailure(_ error: AllowListError) { lastError = error }
}

/// The allow-list file format (docs/allow-list.md).
public enum AllowListParser {
  /// The line that says a list with no entries is meant to be empty. Without it a file with no
  /// entries (0 bytes, blank lines, comments) is refused like one cut short: an empty file is
  /// what an interrupted copy or a failed export leaves, and it would deny every code.
  public static let emptyMarker = "# scangate: empty"

  /// Why a list with no entries is refused (the same words for every list that has the rule).
  public static let emptyReason =
    "no entries: an empty file is refused like one cut short (a list meant to be empty holds the line \"# scangate: empty\")"

  /// Whether `line` (without its newline) is `emptyMarker`, give or take surrounding blanks and a CR.
  public static func isEmptyMarker(_ line: ArraySlice<UInt8>) -> Bool {
    var trimmed = line
    while let first = trimmed.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
    while let last = trimmed.last, last == 0x20 || last == 0x09 || last == 0x0D { trimmed = trimmed.dropLast() }
    return trimmed.elementsEqual(emptyMarker.utf8)
  }

  public static func parse(
    _ text: [UInt8], limits: AllowListLimits, digester: some PayloadDigester, schedules: ScheduleReferences = .notLoaded,
    into table: inout AllowListTable
  ) -> AllowListError? {
    table.removeAll()
    if text.count > limits.fileBytesMax {
      return AllowListError(line: 0, reason: "file is \(text.count) bytes, over the \(limits.fileBytesMax)-byte limit")
    }
    // A file cut short (written in place and read mid-write) must not load its last line as
    // a shorter payload: every line, the last included, ends with a newline.
    if let last = text.last, last != 0x0A {
      var lines = 1
      for b in text where b == 0x0A { lines += 1 }
      return AllowListError(
        line: lines, reason: "the file does not end with a newline (cut short? write a new file and rename it into place)")
    }
    var lineNumber = 0
    var start = 0
    var markedEmpty = false
    while start < text.count {
      var end = start
      while end < text.count && text[end] != 0x0A { end += 1 }
      lineNumber += 1
      if end - start > limits.lineBytesMax {
        return AllowListError(line: lineNumber, reason: "line longer than \(limits.lineBytesMax) bytes")
      }
      if isEmptyMarker(text[start..<end]) { markedEmpty = true }
      if let error = parseLine(
        text[start..<end], lineNumber: lineNumber, limits: limits, digester: digester, schedules: schedules, into: &table)
      {
        return error
      }
      start = end + 1
    }
    if table.count == 0 && !markedEmpty { return AllowListError(line: 0, reason: emptyReason) }
    return nil
  }
}
