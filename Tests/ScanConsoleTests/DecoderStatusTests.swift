import ScanConsole
import ScanCore
import Testing

/// STATUS's decoder-workers line names what stops codes being read first.
@Suite struct DecoderStatusTests {
  func line(_ d: DecoderIsolationStats) -> String {
    var status = ReaderStatus()
    status.decoderWorkers = d
    return withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      ConsoleText.writeStatus(status, into: &w)
      let text = ConsoleLayout.join(String(decoding: w.written, as: UTF8.self))  // the line as written
      return text.split(separator: "\n").first { $0.hasPrefix("| decoder-workers") }.map(String.init) ?? ""
    }
  }

  @Test("no worker ready or decoding is a fault, named before an abandoned frame's; one ready is ok")
  func noWorker() {
    var d = DecoderIsolationStats()
    d.startFailures = 3
    d.faulted = true
    #expect(line(d).hasPrefix("| decoder-workers FAULT (no worker can decode: starting or failing to start), 0 ready;"), "\(line(d))")
    #expect(line(d).contains("start-failures 3"))
    d.busy = true
    #expect(line(d).hasPrefix("| decoder-workers FAULT (frames abandoned or a worker crashed lately), 0 ready;"))
    d.faulted = false
    #expect(line(d).hasPrefix("| decoder-workers ok, 0 ready;"))
    d.busy = false
    d.ready = 1
    #expect(line(d).hasPrefix("| decoder-workers ok, 1 ready;"))
  }
}
