import ScanConsole
import ScanCore

extension EventRing {
  /// The events in the ring from sequence 1 on, oldest first, as the lines `text` makes of them
  /// (nil: not shown).
  package func lines(_ text: (ScanEvent) -> String?) -> [String] {
    var out: [String] = []
    var s: UInt64 = 1
    while case .event(let e) = read(s) {
      if let line = text(e) { out.append(line) }
      s += 1
    }
    return out
  }

  /// The decisions in the ring, as "verdict label".
  package func decisionLines() -> [String] {
    lines { e in e.kind == .decision ? e.verdict.name + " " + e.withLabel { String(decoding: $0, as: UTF8.self) } : nil }
  }

  /// The door's events in the ring, as "kind detail" ("door-unlocked fleet", "door-opened").
  package func doorEventLines() -> [String] {
    lines { e in
      guard EventKind.doorKinds.contains(e.kind) else { return nil }
      let detail = DoorText.detail(e.kind, code: e.code)
      return detail.isEmpty ? e.kind.name : e.kind.name + " " + detail
    }
  }
}

/// A console session's output collected as text (every slot into one string).
package final class TextConsoleOutput: ConsoleOutput {
  package var text = ""
  package init() {}
  package func send(_ slot: Int, _ body: (inout ByteWriter) -> Void) {
    withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      body(&w)
      text += String(decoding: w.written, as: UTF8.self)
    }
  }
  package func closeWhenFlushed(_ slot: Int) {}
}

/// An operator secret that is not set: no AUTH succeeds.
package final class NoOperatorSecret: OperatorSecretVerifier {
  package init() {}
  package var problem: String? { "none" }
  package func matches(_ candidate: UnsafeRawBufferPointer) -> Bool { false }
}
