import ScanCore

/// The console's verbs.
public enum ConsoleVerb: UInt8, CaseIterable, Sendable {
  case help, version, status, stats, last, watch, check, log, auth, quit
  case open, reload, selftest, snapshot
  case door
  case clock
  case lockdown, turnstile
  case enrol, remove, list
  case `as`
  case importList
  case backup, pin, passes

  public var name: String {
    switch self {
    case .help: "HELP"
    case .version: "VERSION"
    case .status: "STATUS"
    case .stats: "STATS"
    case .last: "LAST"
    case .watch: "WATCH"
    case .check: "CHECK"
    case .log: "LOG"
    case .auth: "AUTH"
    case .quit: "QUIT"
    case .open: "OPEN"
    case .reload: "RELOAD"
    case .selftest: "SELFTEST"
    case .snapshot: "SNAPSHOT"
    case .door: "DOOR"
    case .clock: "CLOCK"
    case .lockdown: "LOCKDOWN"
    case .turnstile: "TURNSTILE"
    case .enrol: "ENROL"
    case .remove: "REMOVE"
    case .list: "LIST"
    case .as: "AS"
    case .importList: "IMPORT"
    case .backup: "BACKUP"
    case .pin: "PIN"
    case .passes: "PASSES"
    }
  }

  /// Commands that need AUTH: they act on the door or change state (OPEN, RELOAD, SELFTEST),
  /// or they would show a credential (LOG bodies, SNAPSHOT frames, CHECK answers guesses);
  /// ENROL, REMOVE and LIST manage the people on the allow-list.
  public var needsOperator: Bool {
    switch self {
    case .open, .reload, .selftest, .log, .snapshot, .check, .enrol, .remove, .list, .importList, .backup, .pin, .passes: true
    case .help, .version, .status, .stats, .last, .watch, .auth, .quit, .door, .clock, .lockdown, .turnstile, .as: false
    }
  }

  /// Commands recorded in the audit log when an operator runs them (the rest are counted).
  public var isAuditedForOperator: Bool {
    switch self {
    case .open, .reload, .selftest, .log, .snapshot, .check, .last, .watch, .list, .passes: true
    // CLOCK FLOOR RESET records itself once done, with the floor before and after and who.
    // LOCKDOWN ON/OFF, TURNSTILE FORGIVE/RESET, ENROL and REMOVE record themselves once done, with who.
    // AS records itself (who, as whom) when an operator's session gives itself a name.
    // BACKUP records itself once sealed, with who and how many files; PIN once set, never the PIN.
    case .help, .version, .status, .stats, .auth, .quit, .door, .clock, .lockdown, .turnstile, .enrol, .remove, .as, .importList,
      .backup, .pin:
      false
    }
  }

  /// The words a line of this verb may have: the verb and three arguments, more for ENROL's
  /// fields and LIST's and LOG's filters.
  var wordsMax: Int {
    switch self {
    case .enrol: 5
    case .list: 4
    case .log: 8
    case .backup: 5
    default: 3
    }
  }
}

/// A parsed command line. Arguments stay in the caller's line buffer or in fixed storage:
/// parsing allocates nothing.
public struct ConsoleRequest: Sendable {
  public var verb: ConsoleVerb
  /// The numeric argument (LAST, LOG, OPEN), if one was given.
  public var number: Int? = nil
  /// LOG: how many records and which (its count is `number`'s, capped).
  public var log = AuditQuery()
  /// LIST: which page of the allow-list.
  public var entries = EntryQuery()
  /// IMPORT: which step (DATA's bytes are the argument).
  public var importStep = ImportStep.begin
  /// BACKUP: the key derivation's limits the header records (the key and salt are the argument's 48 bytes).
  public var sealing = BackupSealing(ops: 0, mem: 0)
  /// WATCH ON / OFF; SNAPSHOT TEXT; CLOCK FLOOR RESET; LOCKDOWN ON / OFF.
  public var flag = false
  /// What LOCKDOWN or TURNSTILE is asked to do (`.show`: only report).
  public var action = ConsoleAction.show
  /// ENROL: the label is the argument's first `labelCount` bytes, the schedule name (if any) the rest.
  /// REMOVE: the label is the whole argument.
  public var labelCount = 0
  /// ENROL <tag>: the candidate's shown tag (16 hex digits); nil for ENROL LAST. ENROL CANDIDATES
  /// sets `flag` instead.
  public var enrolTag: UInt64? = nil
  /// HELP <verb>: the verb to explain.
  public var helpVerb: ConsoleVerb? = nil

  /// Whether this request needs AUTH: an operator verb, or a state change of CLOCK, LOCKDOWN or
  /// TURNSTILE (the bare verbs are read-only).
  public var needsOperator: Bool { verb.needsOperator || (verb == .clock && flag) || action != .show }

  public static let numberMax = 3_600_000

  /// Parses one line. CHECK's payload and AUTH's secret are unescaped into `argument`
  /// (which must hold at least 512 bytes); `argumentCount` gets their length.
  public static func parse(
    _ line: UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError>? {
    argumentCount = 0
    for b in line where (b < 0x20 && b != 0x09) || b >= 0x7F { return .failure(.malformed) }
    // Words: at most eight (verb and seven arguments: LOG's filters; four for ENROL; three for
    // every other verb), split on spaces and tabs.
    var starts = InlineArray<8, Int>(repeating: 0)
    var ends = InlineArray<8, Int>(repeating: 0)
    var words = 0
    var i = 0
    while i < line.count {
      while i < line.count && (line[i] == 0x20 || line[i] == 0x09) { i += 1 }
      guard i < line.count else { break }
      guard words < 8 else { return .failure(.tooManyArguments) }
      starts[words] = i
      while i < line.count && line[i] != 0x20 && line[i] != 0x09 { i += 1 }
      ends[words] = i
      words += 1
    }
    guard words > 0 else { return nil }  // an empty line: no reply
    func word(_ k: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: line[starts[k]..<ends[k]]) }
    guard let verb = ConsoleVerb.allCases.first(where: { equalsIgnoringCase(word(0), $0.name) }) else {
      return .failure(.unknownVerb)
    }
    guard words <= verb.wordsMax else { return .failure(.tooManyArguments) }
    switch verb {
    case .help where words == 2:
      guard let asked = ConsoleVerb.allCases.first(where: { equalsIgnoringCase(word(1), $0.name) }) else {
        return .failure(.unknownVerb)
      }
      var request = ConsoleRequest(verb: .help)
      request.helpVerb = asked
      return .success(request)
    case .help, .version, .status, .stats, .quit, .reload, .selftest, .door:
      guard words == 1 else { return .failure(.tooManyArguments) }
      return .success(ConsoleRequest(verb: verb))
    case .enrol:
      if words == 2 && equalsIgnoringCase(word(1), "CANDIDATES") {
        var request = ConsoleRequest(verb: .enrol)
        request.flag = true
        return .success(request)
      }
      guard words >= 3 else { return .failure(.badArgument) }
      var tag: UInt64? = nil
      if !equalsIgnoringCase(word(1), "LAST") {
        guard let value = parseTag(word(1)) else { return .failure(.badArgument) }
        tag = value
      }
      let parsed = parseEnrol(words: words, word, argument: argument, argumentCount: &argumentCount)
      if case .success(var request) = parsed {
        request.enrolTag = tag
        return .success(request)
      }
      return parsed
    case .remove, .check, .auth:
      return parseArgument(verb, words: words, word, argument: argument, argumentCount: &argumentCount)
    case .as, .importList, .backup, .pin:
      let parse = verb == .as ? parseAs : verb == .importList ? parseImport : verb == .backup ? parseBackup : parsePin
      return parse(words, word, argument, &argumentCount)
    case .log:
      return parseLog(words: words, word, argument: argument)
    case .list:
      return parseList(words: words, word)
    case .last, .open, .watch, .clock, .snapshot, .passes:
      return parseOption(verb, words: words, word)
    case .lockdown, .turnstile:
      return parseAction(verb, words: words, word)
    }
  }

  /// AS <name> viewer|operator: the name (1 to 32 of a-z, 0-9, '.', '_', '-', a letter first) into
  /// `argument`; `flag` for operator.
  private static func parseAs(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError> {
    let name = word(1)
    guard words == 3, (1...32).contains(name.count), (0x61...0x7A).contains(name[0]),
      name.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
    else { return .failure(.badArgument) }
    var request = ConsoleRequest(verb: .as)
    if equalsIgnoringCase(word(2), "OPERATOR") {
      request.flag = true
    } else if !equalsIgnoringCase(word(2), "VIEWER") {
      return .failure(.badArgument)
    }
    argument.copyMemory(from: name)
    argumentCount = name.count
    return .success(request)
  }

  /// REMOVE's `label=`, CHECK's payload and AUTH's secret: copied (or unescaped) into `argument`.
  private static func parseArgument(
    _ verb: ConsoleVerb, words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer,
    argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: verb)
    guard words == 2 else { return .failure(.badArgument) }
    if verb == .remove {
      guard let label = value(word(1), key: "label="), label.count <= LabelLimits.bytesMax, AllowListEdit.isShownLabel(label)
      else { return .failure(.badLabel) }
      argument.copyMemory(from: label)
      argumentCount = label.count
      request.labelCount = label.count
    } else {
      guard let n = try? PercentCodec.decode(word(1), into: argument, strict: false) else { return .failure(.badEscape) }
      argumentCount = n
    }
    return .success(request)
  }

  /// The optional number of LAST, LOG, OPEN and LIST, and the flags of WATCH ON|OFF,
  /// CLOCK FLOOR RESET and SNAPSHOT TEXT.
  private static func parseOption(
    _ verb: ConsoleVerb, words: Int, _ word: (Int) -> UnsafeRawBufferPointer
  ) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: verb)
    switch verb {
    case .watch:
      guard words == 2 else { return .failure(.badArgument) }
      if equalsIgnoringCase(word(1), "ON") {
        request.flag = true
      } else if equalsIgnoringCase(word(1), "OFF") {
        request.flag = false
      } else {
        return .failure(.badArgument)
      }
    case .clock:
      if words > 1 {
        guard words == 3, equalsIgnoringCase(word(1), "FLOOR"), equalsIgnoringCase(word(2), "RESET") else {
          return .failure(.badArgument)
        }
        request.flag = true
      }
    case .snapshot:
      guard words <= 2 else { return .failure(.tooManyArguments) }
      if words == 2 {
        guard equalsIgnoringCase(word(1), "TEXT") else { return .failure(.badArgument) }
        request.flag = true
      }
    case .last, .open, .passes:
      guard words <= 2 else { return .failure(.tooManyArguments) }
      if words == 2 {
        guard let n = parseNumber(word(1)), n > 0 else { return .failure(.badArgument) }
        request.number = n
      }
    case .help, .version, .status, .stats, .check, .auth, .quit, .reload, .selftest, .door, .lockdown, .turnstile, .enrol, .remove, .as,
      .log, .list, .importList, .backup, .pin:
      return .failure(.badArgument)  // `parse` dispatches these itself; refused, never parsed here
    }
    return .success(request)
  }

  /// LOCKDOWN [ON|OFF] and TURNSTILE [FORGIVE LAST|<tag>|RESET]: what they are asked to do.
  private static func parseAction(
    _ verb: ConsoleVerb, words: Int, _ word: (Int) -> UnsafeRawBufferPointer
  ) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: verb)
    if verb == .lockdown {
      guard words <= 2 else { return .failure(.tooManyArguments) }
      if words == 2 {
        if equalsIgnoringCase(word(1), "ON") {
          request.action = .lockdownOn
        } else if equalsIgnoringCase(word(1), "OFF") {
          request.action = .lockdownOff
        } else {
          return .failure(.badArgument)
        }
      }
    } else if words == 2 {
      guard equalsIgnoringCase(word(1), "RESET") else { return .failure(.badArgument) }
      request.action = .resetOccupancy
    } else if words == 3 {
      guard equalsIgnoringCase(word(1), "FORGIVE") else { return .failure(.badArgument) }
      if equalsIgnoringCase(word(2), "LAST") {
        request.action = .forgiveLast
      } else {
        guard let value = parseTag(word(2)) else { return .failure(.badArgument) }
        request.action = .forgiveTag(value)
      }
    }
    return .success(request)
  }

  /// The bytes after `key` (matched exactly, lowercase) in `word`, or nil.
  static func value(_ word: UnsafeRawBufferPointer, key: StaticString) -> UnsafeRawBufferPointer? {
    let k = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
    guard word.count >= k.count, word.starts(with: k) else { return nil }
    return UnsafeRawBufferPointer(rebasing: word[k.count...])
  }

  /// A byte of a schedule name (ScheduleSet.validName: a-z, 0-9, '-', '_').
  static func isScheduleByte(_ b: UInt8) -> Bool {
    (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
  }

  static func equalsIgnoringCase(_ word: UnsafeRawBufferPointer, _ name: String) -> Bool {
    var k = 0
    for b in name.utf8 {
      guard k < word.count else { return false }
      var c = word[k]
      if c >= 0x61 && c <= 0x7A { c -= 32 }
      guard c == b else { return false }
      k += 1
    }
    return k == word.count
  }

  static func parseNumber(_ word: UnsafeRawBufferPointer) -> Int? {
    guard !word.isEmpty, word.count <= 8 else { return nil }
    var n = 0
    for b in word {
      guard b >= 48 && b <= 57 else { return nil }
      n = n * 10 + Int(b - 48)
    }
    return n <= numberMax ? n : nil
  }

  /// Percent-unescapes `word` into `out`; nil on a bad escape.
  static func unescape(_ word: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
    var n = 0
    var i = 0
    while i < word.count {
      guard n < out.count else { return nil }
      if word[i] == UInt8(ascii: "%") {
        guard i + 2 < word.count, let h = hex(word[i + 1]), let l = hex(word[i + 2]) else { return nil }
        out[n] = h << 4 | l
        i += 3
      } else {
        out[n] = word[i]
        i += 1
      }
      n += 1
    }
    return n
  }

  static func hex(_ b: UInt8) -> UInt8? {
    switch b {
    case 48...57: b - 48
    case 65...70: b - 55
    case 97...102: b - 87
    default: nil
    }
  }
}
