/// Digital inputs debounced on the monotonic clock, free of I/O: raw edges in (with the kernel's
/// timestamps, even when read late), and a level counts only once it has held for its input's
/// debounce time. The owner settles pending inputs in time order (`nextSettle`, `settle`), so two
/// inputs settling in one step keep their order and each settles at the instant its level had
/// held, not when the owner looked. The door, the emergency inputs and the turnstile each keep
/// one (up to `capacity` inputs). Nothing allocates.
public struct DebouncedInputs: Sendable {
  public static let capacity = 4
  public let count: Int
  private var stable = InlineArray<4, LineLevel>(repeating: .inactive)
  private var raw = InlineArray<4, LineLevel>(repeating: .inactive)
  private var rawSince: InlineArray<4, Instant>

  /// `count` inputs found at `levels` at `now` (their debounced levels from the start).
  public init(count: Int, levels: (Int) -> LineLevel, at now: Instant) {
    precondition(count >= 0 && count <= Self.capacity)
    self.count = count
    rawSince = .init(repeating: now)
    for i in 0..<count {
      stable[i] = levels(i)
      raw[i] = levels(i)
    }
  }

  /// The debounced level of input `index`.
  public func level(_ index: Int) -> LineLevel { stable[index] }

  /// A raw edge of input `index` to `level` at `time`: its level's duration is measured from the
  /// edge's own time.
  public mutating func edge(_ index: Int, level: LineLevel, at time: Instant) {
    raw[index] = level
    rawSince[index] = time
  }

  /// The earliest pending settle: the input whose raw level differs from its debounced one and
  /// the instant that level will have held `debounceMilliseconds(input)` (nil: none pending).
  public func nextSettle(debounceMilliseconds: (Int) -> Int) -> (index: Int, at: Instant)? {
    var best: (index: Int, at: Instant)? = nil
    for i in 0..<count where raw[i] != stable[i] {
      let at = rawSince[i].adding(milliseconds: debounceMilliseconds(i))
      if best == nil || at < best!.at { best = (i, at) }
    }
    return best
  }

  /// Input `index`'s raw level becomes its debounced level; true when that changed it.
  public mutating func settle(_ index: Int) -> Bool {
    guard raw[index] != stable[index] else { return false }
    stable[index] = raw[index]
    return true
  }
}

/// One transition a state machine recorded, as the ring records it: an event kind, its code,
/// when, and (the turnstile's) the grant's ticket (0: none). The door's, the emergencies' and
/// the turnstile's transitions are this one type.
public struct Transition: Equatable, Sendable {
  public var kind: EventKind
  public var code: UInt16
  public var at: Instant
  public var ticket: UInt32
  public init(kind: EventKind, code: UInt16, at: Instant, ticket: UInt32 = 0) {
    self.kind = kind
    self.code = code
    self.at = at
    self.ticket = ticket
  }
}

/// A fixed ring of the transitions a state machine recorded, taken by its owner every loop
/// iteration (into the event ring); one that does not fit is dropped and counted, never blocks.
public struct TransitionQueue: Sendable {
  public static let capacity = 16
  private var items = InlineArray<16, Transition>(repeating: Transition(kind: .state, code: 0, at: Instant(nanoseconds: 0)))
  private var head = 0
  private var stored = 0
  /// Transitions that did not fit.
  public private(set) var dropped: UInt64 = 0

  public init() {}

  public var isEmpty: Bool { stored == 0 }

  public mutating func append(_ transition: Transition) {
    guard stored < Self.capacity else {
      dropped &+= 1
      return
    }
    items[(head + stored) % Self.capacity] = transition
    stored += 1
  }

  /// The oldest transition not yet taken.
  public mutating func take() -> Transition? {
    guard stored > 0 else { return nil }
    let transition = items[head]
    head = (head + 1) % Self.capacity
    stored -= 1
    return transition
  }
}
