import ScanCore

/// ENROL's forms (docs/console.md, "People"): its fields and a candidate's tag.
extension ConsoleRequest {
  /// ENROL LAST's fields: `label=` (required), `schedule=`; `zones=` is refused by name.
  static func parseEnrol(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError>? {
    var request = ConsoleRequest(verb: .enrol)
    var label: UnsafeRawBufferPointer? = nil
    var schedule: UnsafeRawBufferPointer? = nil
    for k in 2..<words {
      if let v = value(word(k), key: "label=") {
        guard label == nil, v.count <= LabelLimits.bytesMax, AllowListEdit.isShownLabel(v) else {
          return .failure(.badLabel)
        }
        label = v
      } else if let v = value(word(k), key: "schedule=") {
        guard schedule == nil, v.count > 0, v.count <= 32, v.allSatisfy({ isScheduleByte($0) }) else { return .failure(.badSchedule) }
        schedule = v
      } else if value(word(k), key: "zones=") != nil {
        return .failure(.noZones)
      } else {
        return .failure(.badArgument)
      }
    }
    guard let label else { return .failure(.badLabel) }
    argument.copyMemory(from: label)
    request.labelCount = label.count
    argumentCount = label.count
    if let schedule {
      UnsafeMutableRawBufferPointer(rebasing: argument[label.count...]).copyMemory(from: schedule)
      argumentCount += schedule.count
    }
    return .success(request)
  }

  /// LIST [n] [from=<index>] [match=<text>]: `match` as labels are shown (`Ivy%20`), 1 to 48 bytes.
  static func parseList(words: Int, _ word: (Int) -> UnsafeRawBufferPointer) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: .list)
    var from = false
    for k in 1..<max(words, 1) {
      let w = word(k)
      if k == 1, let n = parseNumber(w) {
        guard n > 0 else { return .failure(.badArgument) }
        request.number = n
      } else if let v = value(w, key: "from="), !from, let n = parseNumber(v) {
        request.entries.from = n
        from = true
      } else if let v = value(w, key: "match="), request.entries.matchCount == 0, AllowListEdit.isShownLabel(v) {
        for i in 0..<v.count { request.entries.match[i] = v[i] }
        request.entries.matchCount = v.count
      } else {
        return .failure(.badArgument)
      }
    }
    request.entries.count = min(request.number ?? 50, EntryQuery.countMax)
    return .success(request)
  }

  /// A tag as events show it (16 hex digits), or nil.
  static func parseTag(_ tag: UnsafeRawBufferPointer) -> UInt64? {
    guard tag.count == 2 * PayloadTag.shownBytes else { return nil }
    var value: UInt64 = 0
    for b in tag {
      guard let h = hex(b) else { return nil }
      value = value << 4 | UInt64(h)
    }
    return value
  }
}
