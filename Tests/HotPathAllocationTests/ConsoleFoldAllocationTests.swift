import CAllocCounter
import ScanConsole
import ScanCore
import Testing

/// STATUS is answered on the loop's thread: folding its long lines to 80 columns (in place, in
/// the client's output buffer) must allocate nothing.
@Suite(.serialized) struct ConsoleFoldAllocationTests {
  @Test("a STATUS whose lines fold to 80 columns, and the fold of an event line, allocate nothing")
  func foldedStatusAllocatesNothing() {
    var s = ReaderStatus()
    s.cameraSummary = "/dev/v4l/by-id/usb-Generic_HD_USB_Camera_SN0123456789-video-index0 1280x720 MJPG at 30 fps"
    s.console.serialPath = "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
    s.logLine = "/var/lib/scangate/" + String(repeating: "deep-folder/", count: 10) + "audit.db; 81234 records written, 0 lost"
    s.sections = [
      StatusSection(
        "fleet",
        "connected to broker.north-building.example.org:8883 as loading-bay-3 (TLS, client certificate); "
          + "acknowledged through #8123400 of log 8123450 (50 to send); last contact 2026-12-02T10:00:00Z")
    ]
    // No clock line: RFC3339.format makes Strings (the clock line allocated before folding too).
    withUnsafeTemporaryAllocation(byteCount: 16_384, alignment: 1) { buffer in
      func status() -> Int {
        var w = ByteWriter(buffer)
        ConsoleText.writeStatus(s, into: &w)
        w.write("! decision granted qr label=alice payload=")
        for _ in 0..<40 { w.write("ALICE-0001%20") }
        w.newline()
        return ConsoleLayout.fold(&w, from: 0)
      }
      let lines = status()  // warm-up
      alloc_counter_reset()
      var total = 0
      for _ in 0..<100 { total += status() }
      let allocations = alloc_counter_mallocs()
      #expect(allocations == 0, "\(allocations) allocations in 100 folded STATUS replies")
      #expect(lines > 20 && total == 100 * lines)
    }
  }
}
