import ScanCore

/// LOG's form (docs/console.md, "LOG"): `LOG [n] [before=<seq>] [since=<unix s>]
/// [until=<unix s>] [verdict=<name>] [kind=<name>] [label=<label>]`, each filter at most once.
extension ConsoleRequest {
  static func parseLog(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer
  ) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: .log)
    var seen: UInt8 = 0
    // Each filter once: a second `verdict=` is refused, not silently the last one.
    func once(_ bit: UInt8) -> Bool {
      defer { seen |= bit }
      return seen & bit == 0
    }
    for k in 1..<max(words, 1) {
      let w = word(k)
      if k == 1, let n = parseNumber(w) {
        guard n > 0 else { return .failure(.badArgument) }
        request.number = n
      } else if let v = value(w, key: "before="), once(1), let n = parseSequence(v) {
        request.log.before = n
      } else if let v = value(w, key: "since="), once(2), let n = parseSequence(v) {
        request.log.since = n
      } else if let v = value(w, key: "until="), once(4), let n = parseSequence(v) {
        request.log.until = n
      } else if let v = value(w, key: "verdict="), once(8), let verdict = Verdict.all.first(where: { equalsExactly(v, $0.name) }) {
        request.log.verdict = verdict
      } else if let v = value(w, key: "kind="), once(16), let kind = EventKind.all.first(where: { equalsExactly(v, $0.name) }) {
        request.log.kind = kind
      } else if let v = value(w, key: "label="), once(32), v.count <= 3 * LabelLimits.bytesMax, AllowListEdit.isShownLabel(v) {
        // The label as the allow-list and the log keep it: %XX undone, at most 48 bytes.
        guard let n = try? PercentCodec.decode(v, into: argument, strict: false), n > 0, n <= LabelLimits.bytesMax else {
          return .failure(.badLabel)
        }
        for i in 0..<n { request.log.label[i] = argument[i] }
        request.log.labelCount = n
      } else {
        return .failure(.badArgument)
      }
    }
    request.log.count = min(request.number ?? 10, AuditQuery.countMax)
    return .success(request)
  }

  /// A record sequence or a Unix time: 1 to 12 digits.
  static func parseSequence(_ word: UnsafeRawBufferPointer) -> Int64? {
    guard (1...12).contains(word.count) else { return nil }
    var n: Int64 = 0
    for b in word {
      guard b >= 48 && b <= 57 else { return nil }
      n = n * 10 + Int64(b - 48)
    }
    return n
  }

  static func equalsExactly(_ word: UnsafeRawBufferPointer, _ name: String) -> Bool {
    var k = 0
    for b in name.utf8 {
      guard k < word.count, word[k] == b else { return false }
      k += 1
    }
    return k == word.count
  }
}
