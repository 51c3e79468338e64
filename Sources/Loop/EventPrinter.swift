import Glibc
import ScanCore
import ScanPlatform
import Synchronization

/// Prints the loop's events to standard output from a thread of its own, so formatting and
/// writing (which allocate and may block on a slow journal or terminal) never run on the loop.
public final class EventPrinter: @unchecked Sendable {
  private let ring: EventRing
  private let start: Instant
  private let clock: any MonotonicClock
  private let worker = WorkerThread()
  private let printedUpTo = Atomic<UInt64>(0)
  /// Kinds not printed (e.g. edges, when only decisions matter).
  public let skipping: Set<EventKind>

  /// Whether journal lines show payloads (`log.raw_payloads`); by default they do not.
  public let payloads: PayloadVisibility
  /// Why-lines the loop posts (a file refused on reload): each printed after its event.
  public let notes: JournalNotes?

  public init(
    ring: EventRing, start: Instant, clock: any MonotonicClock, skipping: Set<EventKind> = [],
    payloads: PayloadVisibility, notes: JournalNotes? = nil
  ) {
    self.payloads = payloads
    self.notes = notes
    self.ring = ring
    self.start = start
    self.clock = clock
    self.skipping = skipping
  }

  /// Starts the printing thread.
  public func startThread() {
    worker.start { [self] in body() }
  }

  /// Prints what is left, then stops the thread.
  public func stop() {
    worker.stop()
  }

  /// Everything up to this sequence has been printed.
  public var printedSequence: UInt64 { printedUpTo.load(ordering: .acquiring) }

  private func body() {
    var cursor = EventCursor(next: 1)
    while true {
      let stopping = worker.stopRequested
      drain(&cursor)
      if stopping { break }
      usleep(20_000)
    }
  }

  private func drain(_ cursor: inout EventCursor) {
    cursor.read(ring) { item in
      switch item {
      case .overwritten(let count): emit("(\(count) events overwritten before they could be printed)")
      case .event(let e):
        if !skipping.contains(e.kind) { emit(EventText.line(e, since: start, payloads: payloads)) }
        for note in notes?.take(upTo: e.sequence) ?? [] { emit(note) }
      }
    }
    for note in notes?.take(upTo: cursor.next - 1) ?? [] { emit(note) }
    printedUpTo.store(cursor.next - 1, ordering: .releasing)
  }

  private func emit(_ line: String) {
    try? writeAll(1, line + "\n", "write standard output")  // a closed output: nothing to print to
  }
}
