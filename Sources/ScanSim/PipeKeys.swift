import Glibc
import ScanCore

/// Keys from a pipe: '0'–'9' digits, '#' enter, '*' clear (the keypad's place in a test).
public final class PipeKeys: KeySource {
  public let readEnd: Int32
  public let writeEnd: Int32
  public var gone = false
  public init() {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
    readEnd = fds[0]
    writeEnd = fds[1]
  }
  deinit {
    close(readEnd)
    close(writeEnd)
  }
  public var descriptor: Int32 { readEnd }
  public func type(_ keys: String) { _ = keys.utf8.withContiguousStorageIfAvailable { write(writeEnd, $0.baseAddress, $0.count) } }
  /// The same from bytes made beforehand (nothing allocated: the allocation tests type this way).
  public func type(bytes: UnsafeRawBufferPointer) { _ = write(writeEnd, bytes.baseAddress, bytes.count) }
  public func read(_ body: (KeypadKey) -> Void) -> Bool {
    var byte: UInt8 = 0
    while Glibc.read(readEnd, &byte, 1) == 1 {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): body(.digit(byte - 0x30))
      case UInt8(ascii: "#"): body(.enter)
      case UInt8(ascii: "*"): body(.clear)
      default: break
      }
    }
    return !gone
  }
}
