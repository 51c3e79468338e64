/// The keyed tag of a payload: what every outside-facing form shows instead of its SHA-256.
///
/// A payload's unkeyed SHA-256 lets anyone who sees it test guesses offline (a badge number
/// such as `EMP-004217` falls in seconds). The tag is HMAC-SHA-256 under the reader's tag key
/// (32 random bytes kept in the state directory, never shown) over the payload's SHA-256, so
/// only who holds the key can link a tag to a payload (`scangate tag`). The engine computes it
/// once per decision (and per "left" event) and puts it in the event; the SHA-256 itself stays
/// in memory (the allow-list's `sha256:` entries and presence tracking match on it).
/// `tag` runs on the loop's thread: it must not block or allocate.
public protocol PayloadTagger: AnyObject, Sendable {
  func tag(_ digest: Digest) -> Digest
}

/// How tags are shown.
public enum PayloadTag {
  /// Bytes of the tag that events, the audit log and the fleet show (as hex: 16 digits).
  public static let shownBytes = 8

  /// The shown digits of `tag` (allocates: the log writer and tools).
  public static func hex(_ tag: Digest) -> String {
    String(unsafeUninitializedCapacity: shownBytes * 2) { out in
      for i in 0..<shownBytes {
        out[2 * i] = Hex.digit(tag.byte(i) >> 4)
        out[2 * i + 1] = Hex.digit(tag.byte(i))
      }
      return shownBytes * 2
    }
  }
}
