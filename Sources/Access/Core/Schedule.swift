import ScanBase

/// One weekly window: days of the week (bit 0 = Sunday) and a span of minutes [start, end).
public struct ScheduleWindow: Equatable, Sendable {
  public var days: UInt8
  public var startMinute: Int
  public var endMinute: Int
  public func contains(_ t: CivilTime) -> Bool {
    days & (1 << UInt8(t.weekday)) != 0 && t.minuteOfDay >= startMinute && t.minuteOfDay < endMinute
  }
}

/// A schedule file refused at a line; the live schedules stay in force.
public typealias ScheduleError = LineRejection

/// Weekly schedules in the reader's local time, holidays, and which schedules hold the door
/// unlocked (docs/schedules.md). Parsed whole or rejected whole; asking it allocates nothing.
public struct ScheduleSet: Equatable, Sendable {
  public static let schedulesMax = 32
  public static let windowsMax = 16
  public static let holidaysMax = 64
  public static let nameBytesMax = 32
  public static let fileBytesMax = 64 << 10
  public static let lineBytesMax = 512

  public private(set) var names: [String] = []
  /// `ScheduleKey` of each name (what allow-list entries carry).
  public private(set) var keys: [UInt64] = []
  /// Windows per schedule, in the order of `names`.
  public private(set) var windows: [[ScheduleWindow]] = []
  /// Holiday dates (yyyymmdd), sorted: no schedule is open on them.
  public private(set) var holidays: [Int] = []
  /// Schedules whose windows hold the door unlocked (indices into `names`).
  public private(set) var unlockSchedules: [Int] = []
  /// An unlock window starts only once someone was granted inside it.
  public private(set) var firstPersonIn = false

  public init() {}

  /// The schedule named `name`, or nil.
  public func index(named name: some StringProtocol) -> Int? { names.firstIndex { $0 == name } }

  /// The schedule whose `ScheduleKey` is `key`, or nil (no allocation: the decision path).
  public func index(key: UInt64) -> Int? {
    for i in 0..<keys.count where keys[i] == key { return i }
    return nil
  }

  /// Whether schedule `index` is open at `t` (closed on holidays).
  public func isOpen(_ index: Int, at t: CivilTime) -> Bool {
    guard index >= 0 && index < windows.count, !isHoliday(t) else { return false }
    // Indices, not `for w in windows[index]`: an unoptimised build allocates iterating the inner array.
    let list = windows[index]
    var k = 0
    while k < list.count {
      if list[k].contains(t) { return true }
      k += 1
    }
    return false
  }

  /// Whether a credential zone (a schedule's name, as signed credentials carry them) admits at
  /// `t`: nil when no schedule has that name.
  public func allows(zone: some StringProtocol, at t: CivilTime) -> Bool? {
    guard let i = index(named: zone) else { return nil }
    return isOpen(i, at: t)
  }

  public func isHoliday(_ t: CivilTime) -> Bool {
    let key = t.dateKey
    var lo = 0, hi = holidays.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if holidays[mid] < key { lo = mid + 1 } else { hi = mid }
    }
    return lo < holidays.count && holidays[lo] == key
  }

  /// Whether an unlock window stands at `t` (before "first person in" is applied).
  public func unlockWindowOpen(at t: CivilTime) -> Bool {
    var k = 0
    while k < unlockSchedules.count {
      if isOpen(unlockSchedules[k], at: t) { return true }
      k += 1
    }
    return false
  }

  // MARK: - Parsing

  static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

  /// Parses a whole schedule file. Any error rejects it whole, naming the first bad line.
  public static func parse(_ bytes: [UInt8]) -> Result<ScheduleSet, ScheduleError> {
    guard bytes.count <= fileBytesMax else { return .failure(ScheduleError(line: 0, reason: "file larger than \(fileBytesMax) bytes")) }
    var set = ScheduleSet()
    var unlockNames: [(String, Int)] = []
    var lineNumber = 0
    var statements = 0
    var markedEmpty = false
    for rawLine in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
      lineNumber += 1
      guard rawLine.count <= lineBytesMax else { return .failure(ScheduleError(line: lineNumber, reason: "line too long")) }
      if AllowListParser.isEmptyMarker(rawLine) { markedEmpty = true }
      var text = rawLine
      if let hash = text.firstIndex(of: UInt8(ascii: "#")) { text = text[..<hash] }
      guard text.allSatisfy({ $0 == 0x09 || $0 == 0x0D || ($0 >= 0x20 && $0 < 0x7F) }) else {
        return .failure(ScheduleError(line: lineNumber, reason: "bytes outside printable ASCII"))
      }
      let words = text.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }).map {
        String(decoding: $0, as: UTF8.self)
      }
      if words.isEmpty { continue }
      statements += 1
      if let reason = set.apply(words, line: lineNumber, unlockNames: &unlockNames) {
        return .failure(ScheduleError(line: lineNumber, reason: reason))
      }
    }
    // As the allow-list: a file with nothing in it is what a cut-short copy leaves, unless it says it is meant so.
    if statements == 0 && !markedEmpty { return .failure(ScheduleError(line: 0, reason: AllowListParser.emptyReason)) }
    for (name, line) in unlockNames {
      guard let i = set.index(named: name) else { return .failure(ScheduleError(line: line, reason: "unknown schedule \"\(name)\"")) }
      if !set.unlockSchedules.contains(i) { set.unlockSchedules.append(i) }
    }
    set.holidays.sort()
    return .success(set)
  }

  /// Applies one line's words; returns why it is bad, or nil.
  private mutating func apply(_ w: [String], line: Int, unlockNames: inout [(String, Int)]) -> String? {
    switch w[0] {
    case "schedule":
      guard w.count == 4 else { return "want: schedule <name> <days> <HH:MM>-<HH:MM>" }
      guard Self.validName(w[1]) else { return "schedule names are 1 to 32 of a-z, 0-9, '-', '_'" }
      guard let days = Self.parseDays(w[2]) else { return "days: mon, mon-fri, sat,sun, ... (sun mon tue wed thu fri sat)" }
      guard let (start, end) = Self.parseSpan(w[3]) else { return "time span: HH:MM-HH:MM, start before end, end up to 24:00" }
      var i = index(named: w[1])
      if i == nil {
        guard names.count < Self.schedulesMax else { return "more than \(Self.schedulesMax) schedules" }
        names.append(w[1])
        keys.append(ScheduleKey.of(w[1].utf8))
        windows.append([])
        i = names.count - 1
      }
      guard windows[i!].count < Self.windowsMax else { return "more than \(Self.windowsMax) windows in \"\(w[1])\"" }
      windows[i!].append(ScheduleWindow(days: days, startMinute: start, endMinute: end))
    case "holiday":
      guard w.count == 2, let key = Self.parseDate(w[1]) else { return "want: holiday YYYY-MM-DD" }
      guard !holidays.contains(key) else { return "duplicate holiday \(w[1])" }
      guard holidays.count < Self.holidaysMax else { return "more than \(Self.holidaysMax) holidays" }
      holidays.append(key)
    case "unlock":
      guard w.count == 2, Self.validName(w[1]) else { return "want: unlock <schedule name>" }
      unlockNames.append((w[1], line))
    case "first-person-in":
      guard w.count == 1 else { return "first-person-in takes no argument" }
      firstPersonIn = true
    default:
      return "unknown keyword (schedule, holiday, unlock, first-person-in)"  // never echoed: the line may be a pass
    }
    return nil
  }

  static func validName(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.count <= nameBytesMax
      && s.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
  }

  /// `mon`, `mon-fri`, `sat,sun`, `fri-mon` (wrapping) → a day mask.
  static func parseDays(_ s: String) -> UInt8? {
    var mask: UInt8 = 0
    for part in s.split(separator: ",", omittingEmptySubsequences: false) {
      let ends = part.split(separator: "-", omittingEmptySubsequences: false)
      guard ends.count == 1 || ends.count == 2,
        let a = dayNames.firstIndex(of: String(ends[0])),
        let b = ends.count == 2 ? dayNames.firstIndex(of: String(ends[1])) : a
      else { return nil }
      var d = a
      while true {
        mask |= 1 << UInt8(d)
        if d == b { break }
        d = (d + 1) % 7
      }
    }
    return mask == 0 ? nil : mask
  }

  /// `HH:MM-HH:MM` → minutes [start, end), end up to 24:00.
  static func parseSpan(_ s: String) -> (Int, Int)? {
    let parts = s.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let a = parseClock(parts[0]), let b = parseClock(parts[1]), a < b, a < 1_440 else { return nil }
    return (a, b)
  }

  static func parseClock(_ s: Substring) -> Int? {
    let u = Array(s.utf8)
    guard u.count == 5, u[2] == UInt8(ascii: ":"), u.indices.allSatisfy({ $0 == 2 || (u[$0] >= 0x30 && u[$0] <= 0x39) })
    else { return nil }
    let h = Int(u[0] - 0x30) * 10 + Int(u[1] - 0x30), m = Int(u[3] - 0x30) * 10 + Int(u[4] - 0x30)
    guard m < 60, h < 24 || (h == 24 && m == 0) else { return nil }
    return h * 60 + m
  }

  /// `YYYY-MM-DD` (a real date) → yyyymmdd.
  static func parseDate(_ s: String) -> Int? {
    let u = Array(s.utf8)
    guard u.count == 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-") else { return nil }
    func number(_ r: Range<Int>) -> Int? {
      var n = 0
      for i in r {
        guard u[i] >= 0x30 && u[i] <= 0x39 else { return nil }
        n = n * 10 + Int(u[i] - 0x30)
      }
      return n
    }
    guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10), y >= 1970, m >= 1, m <= 12 else { return nil }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
    let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    guard d >= 1 && d <= lengths[m - 1] else { return nil }
    return y * 10_000 + m * 100 + d
  }
}

/// A schedule name as a 64-bit FNV-1a hash: what an allow-list entry stores for its
/// `schedule=` field (8 bytes per entry instead of the name). Never 0 (0 means "no schedule").
public enum ScheduleKey {
  public static func of(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
    return h == 0 ? 1 : h
  }
}

/// The live schedules, shared by the decision (through `AccessPolicies`) and the loader that
/// reloads the file: both run on the loop's thread. A failed load keeps the live set.
public final class ScheduleStore {
  public private(set) var live = ScheduleSet()
  public private(set) var version = 0
  public private(set) var lastError: ScheduleError? = nil
  /// The reader's local time.
  public let calendar: any LocalCalendar

  /// The schedules the live allow-list names (`AllowList.scheduleKeysInUse`, set by the loop at
  /// every allow-list load): a new file that drops one is refused whole (the allow-list first).
  public var required: [UInt64] = []

  public init(calendar: any LocalCalendar) { self.calendar = calendar }

  /// What an allow-list's `schedule=` names resolve against now.
  public var references: ScheduleReferences { version == 0 ? .notLoaded : .names(live.names) }

  /// Parses `bytes` and makes them live; on an error the live set stays and the error is kept.
  @discardableResult
  public func load(_ bytes: [UInt8]) -> ScheduleError? {
    switch ScheduleSet.parse(bytes) {
    case .success(let set):
      if let dropped = required.first(where: { set.index(key: $0) == nil }) {
        let name = live.index(key: dropped).map { "\"" + live.names[$0] + "\"" } ?? "a schedule"
        let error = ScheduleError(
          line: 0,
          reason:
            "it drops \(name), which the allow-list names: take it off the allow-list first (to rename a schedule: add the new name, move the allow-list to it, then drop the old)"
        )
        lastError = error
        return error
      }
      live = set
      version += 1
      lastError = nil
      return nil
    case .failure(let error):
      lastError = error
      return error
    }
  }

  /// The verdict for an allow-list grant whose entry names schedule `key` (0: none) at `now`:
  /// granted inside a window, denied outside one, on a holiday, or when no schedule has the name.
  public func check(key: UInt64, nowUnixSeconds now: Int64) -> Verdict {
    guard key != 0 else { return .granted }
    guard let i = live.index(key: key), live.isOpen(i, at: calendar.civil(unixSeconds: now)) else {
      return .deniedOutsideSchedule
    }
    return .granted
  }

  /// Whether a credential zone admits now (signed credentials carry zone names): nil when no
  /// schedule has that name.
  public func allows(zone: some StringProtocol, nowUnixSeconds now: Int64) -> Bool? {
    live.allows(zone: zone, at: calendar.civil(unixSeconds: now))
  }

  /// Whether an unlock window stands now (before "first person in" is applied).
  public func unlockWindowOpen(nowUnixSeconds now: Int64) -> Bool {
    guard !live.unlockSchedules.isEmpty else { return false }
    return live.unlockWindowOpen(at: calendar.civil(unixSeconds: now))
  }

  /// The same for a zone given as its `ScheduleKey` (what a decision has, without a String).
  public func allows(zoneKey: UInt64, nowUnixSeconds now: Int64) -> Bool? {
    guard let i = live.index(key: zoneKey) else { return nil }
    return live.isOpen(i, at: calendar.civil(unixSeconds: now))
  }
}
