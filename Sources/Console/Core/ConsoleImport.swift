import ScanCore

/// IMPORT's steps (docs/console.md, "People"): a CSV sent in pieces by one session, checked
/// (what it would add, change and remove), then applied, the same import as `scangate allow-list
/// import --csv` on the file.
public enum ImportStep: Equatable, Sendable {
  /// Starts an import for this session (a previous one of its own is dropped).
  case begin
  /// The next bytes of the CSV (the argument, %XX unescaped).
  case data
  /// What the import would do; nothing written.
  case check(removeMissing: Bool)
  /// Does it: the file written durably, the list reloaded, recorded with who.
  case apply(removeMissing: Bool)
  /// CHECK LIST, APPLY LIST: the data is a whole allow-list file that replaces the list (a
  /// backup's, restored from the web page).
  case checkList, applyList
  case cancel
}

/// What became of an IMPORT step.
public enum ImportOutcome: Equatable, Sendable {
  /// BEGIN, DATA, CANCEL: the reply's text after `OK `.
  case accepted(String)
  /// CHECK, APPLY: one line a label added, changed or removed (`add ivy%20smith`), then the
  /// summary; `sequence` the APPLY's record (0 for CHECK or nothing to write).
  case plan(lines: [String], summary: String, sequence: UInt64)
  case refused(code: Int, reason: String)
}

extension ConsoleRequest {
  /// IMPORT BEGIN | DATA <text> | CHECK [REMOVE-MISSING|LIST] | APPLY [REMOVE-MISSING|LIST] | CANCEL.
  static func parseImport(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError> {
    var request = ConsoleRequest(verb: .importList)
    guard words >= 2 else { return .failure(.badArgument) }
    let step = word(1)
    let removeMissing = words == 3 && equalsIgnoringCase(word(2), "REMOVE-MISSING")
    let list = words == 3 && equalsIgnoringCase(word(2), "LIST")
    if equalsIgnoringCase(step, "BEGIN") && words == 2 {
      request.importStep = .begin
    } else if equalsIgnoringCase(step, "CANCEL") && words == 2 {
      request.importStep = .cancel
    } else if equalsIgnoringCase(step, "DATA") && words == 3 {
      guard let n = try? PercentCodec.decode(word(2), into: argument, strict: false) else { return .failure(.badEscape) }
      argumentCount = n
      request.importStep = .data
    } else if list && (equalsIgnoringCase(step, "CHECK") || equalsIgnoringCase(step, "APPLY")) {
      request.importStep = equalsIgnoringCase(step, "CHECK") ? .checkList : .applyList
    } else if equalsIgnoringCase(step, "CHECK") && (words == 2 || removeMissing) {
      request.importStep = .check(removeMissing: removeMissing)
    } else if equalsIgnoringCase(step, "APPLY") && (words == 2 || removeMissing) {
      request.importStep = .apply(removeMissing: removeMissing)
    } else {
      return .failure(.badArgument)
    }
    return .success(request)
  }
}

extension ConsoleCommands {
  func importPeople<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    let peer = self[slot]
    let outcome = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      Self.writeWho(peer, into: &w)
      return host.importPeople(request.importStep, data: argument, session: ticket(slot), who: w.written)
    }
    output.send(slot) { w in
      switch outcome {
      case .accepted(let text):
        w.write("OK ")
        ConsoleText.writeSanitized(text, into: &w)
      case .plan(let lines, let summary, let sequence):
        for line in lines {
          w.write("| ")
          // Labels as shown (`Ivy%20Smith`) are printable ASCII already: written as they are.
          if line.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { w.write(line) } else { ConsoleText.writeSanitized(line, into: &w) }
          w.newline()
        }
        w.write("OK ")
        if sequence > 0 {
          w.write("#")
          w.write(sequence)
          w.write(" ")
        }
        ConsoleText.writeSanitized(summary, into: &w)
      case .refused(let code, let reason): ConsoleText.writeError(code, reason, into: &w)
      }
      w.newline()
    }
  }
}
