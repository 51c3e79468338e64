import ScanAccess
import ScanBase
import ScanReader
import Testing

@Suite struct PayloadTests {
  func escaped(_ s: String) -> String { PayloadEscaping.escaped(Array(s.utf8)) }

  @Test("control characters, space, % and # are escaped; printable ASCII is not")
  func escaping() {
    #expect(escaped("ABC-123_x.y/z") == "ABC-123_x.y/z")
    #expect(escaped("a b%c#d") == "a%20b%25c%23d")
    #expect(escaped("\r\nOK \u{1b}[2J\0") == "%0D%0AOK%20%1B[2J%00")
    #expect(escaped("é") == "%C3%A9")
    #expect(escaped("\u{7f}") == "%7F")
  }

  @Test("escape then unescape gives the bytes back, for every byte value")
  func roundTrip() throws {
    let all = (0...255).map { UInt8($0) }
    let text = PayloadEscaping.escaped(all)
    #expect(text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F })
    #expect(try PayloadEscaping.unescape(text[...].utf8) == all)
  }

  @Test("the fixed-buffer escaper never overflows and says how much it consumed")
  func boundedEscape() {
    let input = Array("ab\ncd".utf8)
    var out = [UInt8](repeating: 0, count: 4)
    let (written, consumed) = input.withUnsafeBytes { i in out.withUnsafeMutableBytes { PayloadEscaping.escape(i, into: $0) } }
    #expect(written == 2 && consumed == 2)  // "%0A" would not fit after "ab"
    #expect(Array(out[0..<2]) == Array("ab".utf8))
  }

  @Test("unescape rejects bad escapes and raw bytes that need escaping", arguments: ["%", "%4", "%zz", "a b", "a\u{1}"])
  func rejects(text: String) {
    #expect(throws: ParseError.self) { try PayloadEscaping.unescape(text[...].utf8) }
  }

  @Test(
    "payload kinds, as ML Kit types them",
    arguments: [
      ("https://example.com/door?id=1", PayloadKind.url),
      ("HTTP://EXAMPLE.COM", .url),
      ("WIFI:S:Office;T:WPA;P:secret;;", .wifi),
      ("ALICE-0001", .text),
      ("grüße\ttab", .text),
      ("bad\u{1}control", .bytes),
    ])
  func kinds(text: String, kind: PayloadKind) {
    #expect(Array(text.utf8).withUnsafeBytes { PayloadKind.classify($0) } == kind)
  }

  @Test("invalid UTF-8 is bytes")
  func invalidUTF8() {
    for bytes: [UInt8] in [[0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xC2, 0x85]] {
      #expect(bytes.withUnsafeBytes { PayloadKind.classify($0) } == .bytes)
    }
  }

  @Test("Wi-Fi fields, with escapes")
  func wifi() {
    let w = WiFiCredentials(#"WIFI:T:WPA;S:My\;Net;P:p\:w\\d;H:true;;"#)
    #expect(w?.ssid == "My;Net")
    #expect(w?.security == "WPA")
    #expect(w?.password == #"p:w\d"#)
    #expect(w?.hidden == true)
    #expect(WiFiCredentials("hello") == nil)
  }

  @Test("format lists parse and name unknown formats")
  func formats() throws {
    #expect(try BarcodeFormats.parse("qr,ean13") == [.qrCode, .ean13])
    #expect(try BarcodeFormats.parse("all") == .all)
    #expect(BarcodeFormats.all.listDescription.split(separator: ",").count == 14)
    #expect(throws: ParseError.self) { try BarcodeFormats.parse("qr,bogus") }
  }
}

@Suite struct HistogramTests {
  @Test("percentiles are within one bucket (≤ 3.2 %) of the truth")
  func percentiles() {
    var h = LatencyHistogram()
    for us in 1...10_000 { h.record(microseconds: UInt64(us)) }
    for (q, truth) in [(0.5, 5_000.0), (0.99, 9_900.0), (0.1, 1_000.0), (0.003, 30.0)] {
      let got = Double(h.percentile(q))
      #expect(got >= truth && got <= truth * 1.032, "q=\(q) got \(got)")
    }
    #expect(h.percentile(1.0) == 10_000)
    #expect(h.count == 10_000)
  }

  @Test("every bucket is at most 1/32 of its lower bound wide, and buckets tile the range")
  func bucketWidths() {
    var previousUpper: UInt64? = nil
    for i in 0..<LatencyHistogram.bucketCount {
      let lo = LatencyHistogram.lowerBound(i), hi = LatencyHistogram.upperBound(i)
      #expect(lo == (previousUpper.map { $0 + 1 } ?? 0), "bucket \(i) starts where \(i - 1) ended")
      #expect(LatencyHistogram.bucket(lo) == i && LatencyHistogram.bucket(hi) == i, "bucket \(i)")
      if lo >= 32 { #expect(Double(hi - lo + 1) <= Double(lo) / 32, "bucket \(i): \(lo)...\(hi)") }
      previousUpper = hi
    }
    #expect(previousUpper! >= 120_000_000, "the last bucket reaches past two minutes")
  }

  @Test("a 0.1 ms difference at 2.5 ms shows in the percentiles (the frame-to-edge check)")
  func resolvesTenthOfAMillisecond() {
    // 99 values each and one outlier, so p99 is a bucket's bound, not the maximum seen.
    func histogram(_ us: UInt64) -> LatencyHistogram {
      var h = LatencyHistogram()
      for _ in 0..<99 { h.record(microseconds: us) }
      h.record(microseconds: 50_000)
      return h
    }
    let decode = histogram(2_500)
    #expect(decode.percentile(0.99) >= 2_500 && decode.percentile(0.99) <= 2_580)
    // 60 µs later passes "frame to edge p99 ≤ decode p99 + 0.1 ms"; 150 µs later does not.
    #expect(histogram(2_560).percentile(0.99) <= decode.percentile(0.99) + 100)
    #expect(histogram(2_650).percentile(0.99) > decode.percentile(0.99) + 100)
  }

  @Test("an empty histogram reads 0, huge values land in the last bucket")
  func edges() {
    var h = LatencyHistogram()
    #expect(h.percentile(0.5) == 0)
    h.record(microseconds: UInt64.max / 2)
    #expect(h.percentile(0.5) > 0)
    #expect(LatencyHistogram.bucket(UInt64.max) == LatencyHistogram.bucketCount - 1)
  }
}

@Suite struct EventRingTests {
  @Test("events come back in order with sequence numbers; lapped readers see overwritten")
  func ring() {
    let ring = EventRing(capacity: 8)
    #expect(ring.capacity == 8)
    for i in 1...20 {
      var e = ScanEvent()
      e.code = UInt16(i)
      #expect(ring.append(e) == UInt64(i))
    }
    guard case .event(let last) = ring.read(20) else { Issue.record("newest event missing"); return }
    #expect(last.code == 20 && last.sequence == 20)
    if case .event(let e) = ring.read(14) { #expect(e.code == 14) } else { Issue.record("event 14 missing") }
    if case .overwritten = ring.read(5) {} else { Issue.record("event 5 should be overwritten") }
    if case .notYet = ring.read(21) {} else { Issue.record("event 21 should not exist yet") }
  }

  @Test("payload and label are clipped copies")
  func clipping() {
    var e = ScanEvent()
    let long = [UInt8](repeating: 65, count: 200)
    long.withUnsafeBytes { e.setPayload($0) }
    #expect(e.payloadCount == 64 && e.payloadTruncated)
    #expect(e.withPayload { $0.count } == 64)
  }
}

@Suite struct EventCursorTests {
  @Test("a cursor that fell behind is told how many events it lost and resumes at the oldest kept")
  func lappedCursor() {
    let ring = EventRing(capacity: 8)
    var cursor = EventCursor(next: 1)
    for i in 0..<3 {
      var e = ScanEvent()
      e.code = UInt16(i)
      ring.append(e)
    }
    var seen: [UInt64] = []
    cursor.read(ring) { if case .event(let e) = $0 { seen.append(e.sequence) } }
    #expect(seen == [1, 2, 3] && cursor.next == 4)
    for _ in 0..<20 { ring.append(ScanEvent()) }  // 4...23: the ring keeps the newest 6 readable
    var lost: UInt64 = 0
    seen = []
    cursor.read(ring) { item in
      switch item {
      case .event(let e): seen.append(e.sequence)
      case .overwritten(let n): lost += n
      }
    }
    #expect(lost + UInt64(seen.count) == 20, "every sequence accounted for once: lost \(lost), read \(seen)")
    #expect(seen.last == 23 && seen == Array(seen.first!...23))
    #expect(cursor.next == 24)
  }
}
