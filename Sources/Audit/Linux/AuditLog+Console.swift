import ScanConsole
import ScanCore
import Synchronization

/// The log for the console: the STATUS text, and LOG requests read on the log's thread.
extension AuditLog {
  // MARK: - For the console (loop thread)

  public func writeStatus(into w: inout ByteWriter) {
    w.write(settings.path)
    if let id = identity.logID {
      w.write(" (log ")
      w.write(id)
      w.write(")")
    }
    w.write("; ")
    w.write(writtenRecords)
    w.write(" records written, committed through #")
    w.write(committedSequence)
    w.write(", ")
    w.write(pendingCount.load(ordering: .relaxed))
    w.write(" waiting, ")
    w.write(lostRecords)
    w.write(" lost; ")
    w.write(fault == .none ? "ok" : "FAULT: ")
    if fault != .none { w.write(fault.name) }
    if let problem = keyProblem {
      w.write(": ")
      w.write(problem)
    }
    w.write("; chain head ")
    chainHead.write(into: &w)
    if let missing = identity.missing {
      w.write("; FAULT log-missing: ")
      ConsoleText.writeSanitized(missing, into: &w)
    }
    let notice = integrityNotice.withLock { $0 }
    if !notice.isEmpty {
      ConsoleText.writeSanitized(notice, into: &w)
    } else if movedAsideCount.load(ordering: .relaxed) > 0 {
      w.write("; a file was moved aside")
    }
  }

  public func requestRecent(_ query: AuditQuery, for ticket: SessionTicket) -> Bool {
    recentRequest.withLock { request in
      guard request == nil else { return false }
      request = (query, ticket)
      return true
    }
  }

  public func takeRecent() -> AuditRecentRead? {
    recentResult.withLock { r in
      defer { r = nil }; return r
    }
  }

  /// On the log's thread: serves a pending LOG request from the open store (or says none).
  func serveRecent(_ store: AuditStore?) {
    guard let (query, ticket) = recentRequest.withLock({ $0 }) else { return }
    var read = AuditRecentRead(ticket: ticket, text: [], lines: 0)
    if let store {
      var lines: [[UInt8]] = []
      try? store.read(query) { found in
        var record = found
        // A decision's payload column is the pass itself (kept only with log.raw_payloads); a
        // command's is the reader's own words with who gave it, shown to all.
        if !query.payloads && record.kind == .decision { record.payload = "" }
        let line = withUnsafeTemporaryAllocation(byteCount: 1_024, alignment: 1) { buffer in
          var w = ByteWriter(buffer)
          w.write("| ")
          ConsoleText.writeSanitized(record.line, into: &w, escaped: true)
          w.newline()
          return w.overflowed ? Array("| (record too long to show)\n".utf8) : Array(w.written)
        }
        lines.append(line)
      }
      // The newest records that fit, oldest first.
      var total = 0
      var first = lines.count
      while first > 0 && total + lines[first - 1].count <= AuditRecentRead.bytesMax {
        first -= 1
        total += lines[first].count
      }
      for line in lines[first...] { read.text += line }
      read.lines = lines.count - first
    }
    recentResult.withLock { $0 = read }
    recentRequest.withLock { $0 = nil }
  }
}
