/// Splits a byte stream into lines of at most `capacity` bytes, LF or CRLF terminated.
///
/// Bytes are copied into one buffer allocated at init. A line that grows past the capacity is
/// not truncated into a command: the rest of it is discarded up to its end, and it is reported
/// as `.overlong`. Feeding a stream in chunks of any size gives the same lines.
public struct LineFramer: ~Copyable {
  /// What the framer found.
  public enum Output {
    /// A complete line without its terminator (valid only during the callback).
    case line(UnsafeRawBufferPointer)
    /// A line longer than the capacity ended; `byteCount` is its length without terminator.
    case overlong(byteCount: Int)
  }

  public let capacity: Int
  private let buffer: UnsafeMutableRawBufferPointer
  private var count = 0
  private var discarding = false
  private var discarded = 0
  private var discardedEndsInCR = false

  public init(capacity: Int) {
    precondition(capacity > 0)
    self.capacity = capacity
    buffer = .allocate(byteCount: capacity + 1, alignment: 8)
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
  }

  deinit { buffer.deallocate() }

  /// Bytes of an unfinished line held now.
  public var pendingByteCount: Int { discarding ? discarded : count }

  /// Drops any partial line (a client reconnected, a serial port reopened).
  public mutating func reset() {
    count = 0
    discarding = false
    discarded = 0
  }

  /// Feeds bytes; calls `body` for each line or overlong line they complete.
  public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (Output) -> Void) {
    for b in bytes {
      if b == 0x0A {
        if discarding {
          // The CR of a CRLF is not part of the line.
          body(.overlong(byteCount: discarded - (discardedEndsInCR ? 1 : 0)))
          discarding = false
          discarded = 0
        } else {
          var n = count
          if n > 0 && buffer[n - 1] == 0x0D { n -= 1 }
          body(.line(UnsafeRawBufferPointer(rebasing: buffer[0..<n])))
        }
        count = 0
        continue
      }
      if discarding {
        discarded += 1
        discardedEndsInCR = b == 0x0D
        continue
      }
      // One byte of slack: a CR right at the limit may still turn out to be half of a CRLF.
      if count == capacity + 1 || (count == capacity && b != 0x0D) {
        discarding = true
        discarded = count + 1
        discardedEndsInCR = b == 0x0D
        count = 0
        continue
      }
      buffer[count] = b
      count += 1
    }
  }
}
