import CGPIOD
import CLinux
import ScanBase

/// A door input through libgpiod edge events (contact, exit button, tamper), requested for the
/// owner's lifetime. With libgpiod 2 the kernel debounces the line (`kernelDebounce`); with 1.6
/// the door machine does, on the kernel's edge timestamps. The event buffers are allocated here,
/// once; reading edges allocates nothing.
public final class GPIODInputLine: InputLine {
  private let line: OpaquePointer
  public let chip: String
  public let offset: UInt32
  /// Whether the kernel debounces this line (the machine's own debounce is then 0).
  public let kernelDebounce: Bool
  private let levels: UnsafeMutableBufferPointer<Int32>
  private let timestamps: UnsafeMutableBufferPointer<UInt64>
  static let batch = 16

  public init(
    chip: String, offset: UInt32, activeLow: Bool, bias: LineBias, debounceMilliseconds: Int,
    consumer: String = "scangate"
  ) throws(GPIOError) {
    var kernel: Int32 = 0
    let biasCode: Int32
    switch bias {
    case .asIs: biasCode = Int32(SG_BIAS_AS_IS)
    case .disabled: biasCode = Int32(SG_BIAS_DISABLED)
    case .pullUp: biasCode = Int32(SG_BIAS_PULL_UP)
    case .pullDown: biasCode = Int32(SG_BIAS_PULL_DOWN)
    }
    guard
      let line = sg_gpio_request_input(
        chip, offset, activeLow ? 1 : 0, biasCode, UInt32(max(0, debounceMilliseconds)) * 1_000, consumer, &kernel)
    else {
      throw GPIOError(errno: .current, operation: "request \(chip) input line \(offset)")
    }
    self.line = line
    self.chip = chip
    self.offset = offset
    kernelDebounce = kernel != 0
    levels = .allocate(capacity: Self.batch)
    levels.initialize(repeating: 0)
    timestamps = .allocate(capacity: Self.batch)
    timestamps.initialize(repeating: 0)
  }

  deinit {
    sg_gpio_input_release(line)
    levels.deallocate()
    timestamps.deallocate()
  }

  public var pollDescriptor: Int32 { sg_gpio_input_fd(line) }
  public var nextEdgeAt: Instant? { nil }
  public var backend: String { "libgpiod " + GPIODOutputLine.libraryVersion }

  public func currentLevel() throws(GPIOError) -> LineLevel {
    let v = sg_gpio_input_get(line)
    if v < 0 { throw GPIOError(errno: .current, operation: "read \(chip) line \(offset)") }
    return v == 1 ? .active : .inactive
  }

  @discardableResult
  public func readEdges(now: Instant, _ body: (LineLevel, Instant) -> Void) throws(GPIOError) -> Int {
    var total = 0
    // Bounded: `inputEdgesPerRead` a service, the rest waits for the next iteration.
    for _ in 0..<(inputEdgesPerRead / Self.batch) {
      let n = sg_gpio_input_read(line, levels.baseAddress, timestamps.baseAddress, Int32(Self.batch))
      if n < 0 { throw GPIOError(errno: .current, operation: "read \(chip) line \(offset) events") }
      for i in 0..<Int(n) { body(levels[i] == 1 ? .active : .inactive, Instant(nanoseconds: timestamps[i])) }
      total += Int(n)
      if Int(n) < Self.batch { break }
    }
    return total
  }
}
