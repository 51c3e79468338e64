import CAllocCounter
import Glibc
import ScanCore
@testable import ScanReaderLinux
import ScanLinux
import Testing

/// The replay source frees its frames when the loop drops it (issue 27, item 10: +19 MB per
/// reopen, 1.7 GB after 87 reopens in 30 s).
@Suite struct ReplaySourceTests {
  @Test("dropped replay sources give their frames back (ten reopens of a 40 MB reel leave < 150 MB in use)")
  func droppedSourceFreesFrames() throws {
    let path = "/tmp/scangate-replay-\(getpid()).gray"
    let width = 1920
    let height = 1080
    let frames = 20
    try writeFileAtomically(path, [UInt8](repeating: 0x80, count: width * height * frames), mode: 0o600)
    defer { unlink(path) }
    let before = Int(alloc_counter_heap_in_use())
    for _ in 0..<10 {
      var source = try ReplayFrameSource(
        path: path, width: width, height: height, framesPerSecond: 0, loops: true, clock: SystemMonotonicClock())
      let sum = try source.withNextFrame(timeoutMilliseconds: 0) { frame in Int(frame.bytes[0]) + Int(frame.bytes[frame.bytes.count - 1]) }
      #expect(sum == 0x100)
    }
    // Leaking, this is 10 × 41 MB; other suites running alongside allocate far less than the margin.
    let grown = Int(alloc_counter_heap_in_use()) - before
    #expect(grown < 150 << 20, "\(grown >> 20) MB still allocated after ten reopens")
  }
}
