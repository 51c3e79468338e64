import ScanAccess
import ScanBase

/// The newest codes the reader denied as unknown, for the console's `ENROL CANDIDATES` and
/// `ENROL <tag>` (docs/console.md, "People"): the operator sees what was scanned (tag, time, the
/// payload escaped) before one is put on the list. A fixed ring: recording allocates nothing (the
/// decision path); a code seen again moves to the newest place instead of taking a second one.
public struct EnrolCandidates: Sendable {
  public static let capacity = 8

  public struct Candidate: Sendable {
    /// The decision as logged (tag, time, the payload's first bytes).
    public var event = ScanEvent()
    /// The payload's SHA-256 (inside the reader only: what an entry is written with).
    package var digest = Digest.zero
    /// A byte below 0x20 or 0x7F anywhere in the payload: a badge never holds one.
    public var hasControl = false
    /// The payload is a signed pass's text (`SG1…`): issued, never enrolled.
    public var isSignedPass = false
    public init() {}
  }

  private var slots = InlineArray<8, Candidate>(repeating: Candidate())
  /// Slots in use, oldest first from `first`.
  public private(set) var count = 0
  private var first = 0

  public init() {}

  /// Records a code denied as unknown.
  mutating func record(_ event: ScanEvent, digest: Digest, payload: UnsafeRawBufferPointer) {
    var c = Candidate()
    c.event = event
    c.digest = digest
    for b in payload where b < 0x20 || b == 0x7F {
      c.hasControl = true
      break
    }
    c.isSignedPass = CredentialText.isCredential(payload)
    // The same code again: its older place is dropped (the ring keeps distinct codes).
    var k = 0
    while k < count {
      if slots[(first + k) % Self.capacity].digest == digest {
        for j in k..<(count - 1) { slots[(first + j) % Self.capacity] = slots[(first + j + 1) % Self.capacity] }
        count -= 1
      } else {
        k += 1
      }
    }
    if count == Self.capacity {
      first = (first + 1) % Self.capacity
      count -= 1
    }
    slots[(first + count) % Self.capacity] = c
    count += 1
  }

  /// The `i`-th newest (0: the newest).
  public subscript(newest i: Int) -> Candidate {
    precondition(i >= 0 && i < count)
    return slots[(first + count - 1 - i) % Self.capacity]
  }

  /// The candidate whose tag under `tagger` shows as `prefix` (its first 8 bytes), if any.
  public func find(tagPrefix prefix: UInt64, tagger: some PayloadTagger) -> Candidate? {
    for i in 0..<count {
      let c = self[newest: i]
      let tag = tagger.tag(c.digest)
      var value: UInt64 = 0
      for k in 0..<8 { value = value << 8 | UInt64(tag.byte(k)) }
      if value == prefix { return c }
    }
    return nil
  }

  /// The candidate for `digest`, if it is one.
  package func find(digest: Digest) -> Candidate? {
    for i in 0..<count where self[newest: i].digest == digest { return self[newest: i] }
    return nil
  }
}
