import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// LOG's filters on a real SQLite log (docs/console.md, "LOG"): what the web page's event
/// history pages through.
@Suite struct AuditQueryTests {
  let base: Int64 = 1_796_000_000

  /// 300 records a second apart: decisions for alice, "ivy smith" and unknown codes, and a
  /// forced door every tenth.
  func records() -> [AuditRecord] {
    (0..<300).map { i in
      let time = (base + Int64(i)) * 1_000_000_000
      if i % 10 == 9 {
        return AuditRecord(sequence: 0, run: 1, eventSequence: Int64(i + 1), wallNanoseconds: time, kind: .doorForced, detail: "forced")
      }
      let label = i % 3 == 0 ? "alice" : (i % 3 == 1 ? "ivy smith" : "")
      return AuditRecord(
        sequence: 0, run: 1, eventSequence: Int64(i + 1), wallNanoseconds: time, kind: .decision,
        verdict: label.isEmpty ? .deniedUnknown : .granted, format: "qr", variant: "upright", label: label,
        payload: "P\(i)", edgeMicroseconds: 900)
    }
  }

  func query(_ text: String) -> AuditQuery {
    var argument = [UInt8](repeating: 0, count: 512)
    var count = 0
    let parsed = Array(text.utf8).withUnsafeBytes { line in
      argument.withUnsafeMutableBytes { ConsoleRequest.parse(line, argument: $0, argumentCount: &count) }
    }
    guard case .success(let request)? = parsed else { fatalError("not parsed: \(text)") }
    return request.log
  }

  func sequences(_ store: AuditStore, _ text: String) throws -> [Int64] {
    var out: [Int64] = []
    try store.read(query(text)) { out.append($0.sequence) }
    return out
  }

  @Test("each filter, and all together, select what a plain scan of the records selects; paging by before= walks every match once")
  func filters() throws {
    let dir = temporaryDirectory("query")
    defer { removeTree(dir) }
    let store = try AuditStore(path: dir + "/a.db", readOnly: false)
    let key = try { () throws -> AuditChainKey in
      writeFile(dir + "/a.db.key", String(repeating: "ab", count: 32) + "\n")
      chmod(dir + "/a.db.key", 0o600)
      return try AuditChainKey.load(dir + "/a.db.key")
    }()
    try store.beginKeyedChain(key)
    let all = records()
    try store.append(all, key: key)
    // The expectation: the records as written (sequence = index + 1, after the chain's first).
    var first: Int64 = 0
    try store.read(limit: 1) { first = $0.sequence }
    let offset = try sequences(store, "LOG 100").last! - Int64(all.count)
    #expect(first <= offset + 1)
    func expected(_ count: Int, _ keep: (Int, AuditRecord) -> Bool) -> [Int64] {
      Array(all.enumerated().filter { keep($0.offset, $0.element) }.map { offset + Int64($0.offset) + 1 }.suffix(count))
    }
    #expect(try sequences(store, "LOG 20 verdict=granted") == expected(20) { $1.verdict == .granted })
    #expect(try sequences(store, "LOG 100 label=ivy%20smith") == expected(100) { $1.label == "ivy smith" })
    #expect(try sequences(store, "LOG 100 kind=door-forced") == expected(100) { $1.kind == .doorForced })
    let since = base + 100, until = base + 150
    #expect(
      try sequences(store, "LOG 100 since=\(since) until=\(until) verdict=denied-unknown")
        == expected(100) { i, r in Int64(i) >= 100 && Int64(i) < 150 && r.verdict == .deniedUnknown })
    #expect(try sequences(store, "LOG 100 label=nobody").isEmpty)
    // Paging: the newest 7 alice grants, then before= the oldest shown, until nothing is left.
    var seen: [Int64] = []
    var before = ""
    while true {
      let page = try sequences(store, "LOG 7 label=alice\(before)")
      if page.isEmpty { break }
      #expect(page.count <= 7)
      seen = page + seen
      before = " before=\(page[0])"
    }
    #expect(seen == expected(300) { $1.label == "alice" })
  }

  @Test("a LOG through the running log: the payload column only when the query allows it (never for the web page)")
  func payloadsHiddenByQuery() throws {
    let dir = temporaryDirectory("query")
    defer { removeTree(dir) }
    let ring = EventRing(capacity: 64)
    var settings = AuditLogSettings(path: dir + "/a.db")
    settings.commitIntervalMilliseconds = 20
    settings.rawPayloads = true
    let log = AuditLog(settings: settings, ring: ring)
    log.start()
    defer { log.stop() }
    var e = ScanEvent()
    e.kind = .decision
    e.verdict = .deniedUnknown
    e.wallNanoseconds = SystemWallClock().unixNanoseconds()
    Array("SECRET-PASS-1".utf8).withUnsafeBytes { e.setPayload($0) }
    _ = ring.append(e)
    let deadline = SystemMonotonicClock().now().adding(milliseconds: 10_000)
    while log.committedSequence != ring.lastSequence && SystemMonotonicClock().now() < deadline { usleep(10_000) }
    func read(_ payloads: Bool) -> String {
      var q = query("LOG 5 verdict=denied-unknown")
      q.payloads = payloads
      #expect(log.requestRecent(q, for: SessionTicket(slot: 1, generation: 1)))
      while SystemMonotonicClock().now() < deadline {
        if let read = log.takeRecent() { return String(decoding: read.text, as: UTF8.self) }
        usleep(10_000)
      }
      return "(no answer)"
    }
    let shown = read(true)
    #expect(shown.contains("SECRET-PASS-1"), "\(shown)")
    let hidden = read(false)
    #expect(hidden.contains("denied-unknown") && !hidden.contains("SECRET"), "\(hidden)")
  }
}
