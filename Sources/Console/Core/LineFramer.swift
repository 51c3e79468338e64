/// Splits a byte stream into lines of at most `capacity` bytes. CR, LF and CRLF each end a
/// line (picocom and screen send a bare CR on Enter; scripts send LF or CRLF); the LF of a CRLF
/// ends nothing more, even when it arrives in the next chunk.
///
/// Bytes are copied into one buffer allocated at init. A line that grows past the capacity is
/// not truncated into a command: the rest of it is discarded up to its end, and it is reported
/// as `.overlong`. Feeding a stream in chunks of any size gives the same lines.
public struct LineFramer: ~Copyable {
  /// The console's line limit (docs/console.md), without terminator.
  public static let lineBytesMax = 512

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
  /// The last byte seen was a CR: an LF right after it belongs to it.
  private var afterCR = false

  public init(capacity: Int) {
    precondition(capacity > 0)
    self.capacity = capacity
    buffer = .allocate(byteCount: capacity, alignment: 8)
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
    afterCR = false
  }

  /// Feeds bytes; calls `body` for each line or overlong line they complete.
  public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (Output) -> Void) {
    for b in bytes {
      let wasAfterCR = afterCR
      afterCR = b == 0x0D
      if b == 0x0A && wasAfterCR { continue }  // the LF of a CRLF
      if b == 0x0A || b == 0x0D {
        if discarding {
          body(.overlong(byteCount: discarded))
          discarding = false
          discarded = 0
        } else {
          body(.line(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
        }
        count = 0
        continue
      }
      if discarding {
        discarded += 1
        continue
      }
      if count == capacity {
        discarding = true
        discarded = count + 1
        count = 0
        continue
      }
      buffer[count] = b
      count += 1
    }
  }
}
