import ScanBase
import Synchronization

/// Lines for the journal that say why an event happened (a file refused on reload, a camera that
/// did not open): the loop posts them, and the event printer prints each right after the event it
/// explains. The loop never writes to the journal itself (a slow journal must not stall it), and
/// events stay short and free of paths (they go to the audit log and the fleet). Bounded: past
/// `capacity` unprinted notes the oldest is dropped, and the next printed note says how many.
public final class JournalNotes: Sendable {
  public static let capacity = 32

  struct Note: Sendable {
    var sequence: UInt64
    var text: String
  }
  struct State: Sendable {
    var notes: [Note] = []
    var dropped = 0
  }
  private let state = Mutex(State())

  public init() {}

  /// Posts `text` to be printed after event `sequence` (0: as soon as the printer runs).
  public func post(_ text: String, after sequence: UInt64) {
    state.withLock { s in
      if s.notes.count >= Self.capacity {
        s.notes.removeFirst()
        s.dropped += 1
      }
      s.notes.append(Note(sequence: sequence, text: text))
    }
  }

  /// Removes and returns, in order, the notes of events up to `sequence`.
  public func take(upTo sequence: UInt64) -> [String] {
    state.withLock { s in
      guard let first = s.notes.first, first.sequence <= sequence else { return [] }
      var out: [String] = []
      if s.dropped > 0 {
        out.append("(\(s.dropped) journal notes dropped before they could be printed)")
        s.dropped = 0
      }
      while let note = s.notes.first, note.sequence <= sequence {
        out.append(note.text)
        s.notes.removeFirst()
      }
      return out
    }
  }
}
