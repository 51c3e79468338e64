import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// A rule of the sources that x86_64 would never catch at run time: the words the service and its
/// decoder worker share are reached only by release stores and acquire loads (ARM reorders plain
/// ones; docs/arm64.md, "What differs on ARM").
@Suite struct SharedMemoryOrderingTests {
  @Test("every use of the shared sequence words is a release store or an acquire load, never a plain access")
  func sharedWordsOrdered() throws {
    var uses = 0
    for file in ChokepointTests.swiftFiles(under: packageRoot + "/Sources").map({ packageRoot + "/Sources/" + $0 }) {
      let text = String(decoding: try readWholeFile(file, maxBytes: 1 << 20), as: UTF8.self)
      for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
      where line.contains("offsetRequestSequence") || line.contains("offsetDoneSequence") || line.contains("offsetReady") {
        if line.contains("static let") { continue }
        uses += 1
        #expect(
          line.contains("sg_sb_store_release(") || line.contains("sg_sb_load_acquire("),
          "\(file):\(n + 1): a shared word reached without release/acquire: \(line)")
      }
    }
    #expect(uses >= 6, "the service's and the worker's uses were found (\(uses))")
  }
}
