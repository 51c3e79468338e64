import Glibc
import Synchronization
import ScanCore
import ScanLinux
import ScanService

/// `scangate fleet bench`: many fleet links (the real `FleetLink`, several per process, each
/// with its own audit database) against one broker, each reader logging at a steady rate,
/// and one subscriber that de-duplicates and times every event (bench/fleet/run drives it).
public enum FleetBench {
  /// A bench reader's writer, as the service's AuditLog is to its link.
  final class Progress: AuditLogProgress, @unchecked Sendable {
    private let written = Atomic<Int64>(0)
    private let retain = Atomic<Int64>(.max)
    var writtenRecords: Int64 { written.load(ordering: .acquiring) }
    var retainFrom: Int64 {
      get { retain.load(ordering: .acquiring) }
      set { retain.store(newValue, ordering: .releasing) }
    }
    func add(_ n: Int) { written.wrappingAdd(Int64(n), ordering: .releasing) }
  }

  final class Subscriber: @unchecked Sendable {
    let stop = Atomic<Bool>(false)
    let options: Options
    var client: MQTTClient? = nil
    var seen: [String: Set<Int64>] = [:]
    var duplicates = 0
    var reconnects = 0
    var latenciesMicroseconds: [Int64] = []
    /// Per second of the run: first deliveries and their latencies (the timeline file).
    var startNanoseconds: Int64 = 0
    var timeline: [[Int64]] = []
    init(_ options: Options) { self.options = options }

    /// A persistent session (same client id, not clean): what the broker queued for it while
    /// it was away is delivered when it is back.
    func connect() -> Bool {
      client = nil
      guard let c = FleetToolClient.connect(options, clientID: "scangate-bench-subscriber", cleanSession: false) else { return false }
      do { try c.subscribe("scangate/+/events", qos: 1) } catch { return false }
      client = c
      return true
    }

    func run() {
      while !stop.load(ordering: .relaxed) {
        guard let client, client.state == .connected || client.state == .connecting else {
          usleep(200_000)
          if connect() { reconnects += 1 }
          continue
        }
        client.loop(timeoutMilliseconds: 50)
        while let m = client.takeMessage() {
          let now = SystemWallClock().unixNanoseconds()
          guard let (reader, seq) = FleetToolClient.identity(m.payload) else { continue }
          if seen[reader, default: []].insert(seq).inserted {
            if let t = timeNanoseconds(m.payload) {
              latenciesMicroseconds.append((now - t) / 1_000)
              let second = Int(max(0, now - startNanoseconds) / 1_000_000_000)
              while timeline.count <= second { timeline.append([]) }
              timeline[second].append((now - t) / 1_000)
            }
          } else {
            duplicates += 1
          }
        }
      }
    }

    func timeNanoseconds(_ payload: [UInt8]) -> Int64? {
      let key = Array(#""time_ns":"#.utf8)
      guard payload.count > key.count else { return nil }
      for i in 0...(payload.count - key.count) where payload[i..<i + key.count].elementsEqual(key) {
        return Int64(String(decoding: payload[(i + key.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self))
      }
      return nil
    }
  }

  /// The bench's command line: --broker URL --dir DIR [--links N] [--rate N] [--seconds N] [--timeline FILE].
  struct Settings {
    var options: Options
    var links: Int, rate: Int, seconds: Int
    var url: String, dir: String

    /// The settings, or nil when the command line is wrong (the problem is printed).
    static func parse(_ arguments: [String]) -> Settings? {
      let options: Options
      let links: Int, rate: Int, seconds: Int
      do {
        options = try Options(arguments, valued: ["broker", "links", "rate", "seconds", "dir", "timeline"], known: [])
        links = try options.integer("links", default: 100, range: 1...5_000)
        rate = try options.integer("rate", default: 1, range: 1...1_000)
        seconds = try options.integer("seconds", default: 30, range: 1...86_400)
      } catch {
        writeStandardError("scangate fleet bench: \(error)\n")
        return nil
      }
      guard let url = options.value("broker"), let dir = options.value("dir") else {
        writeStandardError("scangate fleet bench: --broker URL and --dir DIR are needed\n")
        return nil
      }
      return Settings(options: options, links: links, rate: rate, seconds: seconds, url: url, dir: dir)
    }
  }

  /// The bench's readers: each one's audit database, chain key, fleet link and writer progress.
  struct Readers {
    var stores: [AuditStore] = []
    var keys: [AuditChainKey] = []
    var fleet: [FleetLink] = []
    var progress: [Progress] = []

    /// A keyed audit database per reader in --dir, and its link to --broker (not started yet).
    init(_ settings: Settings) throws {
      for i in 0..<settings.links {
        let path = "\(settings.dir)/reader-\(i).db"
        let store = try AuditStore(path: path, readOnly: false)
        let key = try AuditChainKey.generate(path + ".key")
        try store.beginKeyedChain(key)
        stores.append(store)
        keys.append(key)
        var s = FleetSettings()
        s.brokers = [settings.url]
        s.readerID = "bench-\(i)"
        s.keepaliveSeconds = 10
        s.homeAssistantPrefix = ""
        progress.append(Progress())
        fleet.append(FleetLink(settings: s, logPath: path, auditLog: progress[i]))
      }
    }

    /// Appends `each` decision records to every reader's log in turn; `written` counts them.
    func log(_ each: Int, written: inout Int) {
      for i in stores.indices {
        let now = SystemWallClock().unixNanoseconds()
        var batch: [AuditRecord] = []
        for _ in 0..<each {
          batch.append(
            AuditRecord(
              sequence: 0, run: 1, eventSequence: Int64(written), wallNanoseconds: now, kind: .decision, verdict: .granted,
              format: "qr", label: "bench"))
        }
        do {
          try stores[i].append(batch, key: keys[i])
          progress[i].add(each)
        } catch { writeStandardError("append: \(error)\n") }
        written += each
      }
    }
  }

  /// Runs the bench: links logging at a steady rate, then drained; exit 0 when no record was lost.
  public static func run(_ arguments: [String]) -> Int32 {
    guard let settings = Settings.parse(arguments) else { return 2 }
    let rssStart = SoakCommand.residentKiB()
    let readers: Readers
    do { readers = try Readers(settings) } catch {
      writeStandardError("scangate fleet bench: \(error)\n")
      return 1
    }
    let subscriber = Subscriber(settings.options)
    guard connectSubscriber(subscriber) else { return 1 }
    subscriber.startNanoseconds = SystemWallClock().unixNanoseconds()
    let subscriberThread = startThread { subscriber.run() }
    for link in readers.fleet { link.start() }
    let rssLinks = SoakCommand.residentKiB()
    let written = logSteadily(readers, settings)
    let drainMilliseconds = drain(readers)
    usleep(1_000_000)
    let rssEnd = SoakCommand.residentKiB()
    for link in readers.fleet { link.stop() }
    withExtendedLifetime(readers.progress) {}
    subscriber.stop.store(true, ordering: .relaxed)
    pthread_join(subscriberThread, nil)
    var lost = 0
    for i in 0..<settings.links {
      let got = subscriber.seen["bench-\(i)"] ?? []
      lost += Int(readers.stores[i].lastSequence) - got.filter { $0 >= 1 && $0 <= readers.stores[i].lastSequence }.count
    }
    if let path = settings.options.value("timeline") { writeTimeline(subscriber.timeline, to: path) }
    printSummary(
      settings, written: written, lost: lost, subscriber: subscriber, drainMilliseconds: drainMilliseconds,
      memoryKiB: (rssStart, rssLinks, rssEnd))
    return lost == 0 ? 0 : 1
  }

  /// Connects the subscriber, trying once a second, 30 times at most.
  static func connectSubscriber(_ subscriber: Subscriber) -> Bool {
    var tries = 0
    while !subscriber.connect() {
      tries += 1
      guard tries < 30 else { return false }
      usleep(1_000_000)
    }
    return true
  }

  /// Logs at --rate records a second per reader for --seconds, with progress every 10 s; returns
  /// how many records were written.
  static func logSteadily(_ readers: Readers, _ settings: Settings) -> Int {
    // Every 100 ms each reader logs rate/10 records (spread: reader i logs when its turn comes).
    let clock = SystemMonotonicClock()
    let start = clock.now()
    var written = 0
    var carry = 0.0
    var lastSecond = -1
    while clock.now().milliseconds(since: start) < settings.seconds * 1_000 {
      carry += Double(settings.rate) / 10
      let each = Int(carry)
      carry -= Double(each)
      if each > 0 { readers.log(each, written: &written) }
      let second = clock.now().milliseconds(since: start) / 1_000
      if second != lastSecond && second % 10 == 0 {
        lastSecond = second
        let connected = readers.fleet.filter(\.isConnected).count
        print("t=\(second)s written \(written), links connected \(connected)/\(settings.links)")
        flushStandardOutput()
      }
      usleep(100_000)
    }
    return written
  }

  /// Waits until every link acknowledged through its last record, or 60 s; returns the milliseconds waited.
  static func drain(_ readers: Readers) -> Int {
    let clock = SystemMonotonicClock()
    let drainStart = clock.now()
    while clock.now().milliseconds(since: drainStart) < 60_000 {
      if zip(readers.fleet, readers.stores).allSatisfy({ $0.acknowledgedThrough == $1.lastSequence }) { break }
      usleep(100_000)
    }
    return clock.now().milliseconds(since: drainStart)
  }

  /// Writes the timeline file (--timeline): per second, events delivered (first copies), their
  /// median and 99th percentile latency in ms.
  static func writeTimeline(_ timeline: [[Int64]], to path: String) {
    var text = "second,delivered,p50_ms,p99_ms\n"
    for (second, values) in timeline.enumerated() {
      let v = values.sorted()
      let p50 = v.isEmpty ? 0 : Double(v[v.count / 2]) / 1_000
      let p99 = v.isEmpty ? 0 : Double(v[min(v.count - 1, v.count * 99 / 100)]) / 1_000
      text += "\(second),\(v.count),\(p50),\(p99)\n"
    }
    do { try writeFileAtomically(path, Array(text.utf8)) } catch { writeStandardError("timeline: \(error)\n") }
  }

  /// Prints the run's totals, its log-to-subscriber latency, drain time and memory per link.
  static func printSummary(
    _ settings: Settings, written: Int, lost: Int, subscriber: Subscriber, drainMilliseconds: Int,
    memoryKiB rss: (start: Int, links: Int, end: Int)
  ) {
    let links = settings.links, rate = settings.rate, seconds = settings.seconds
    let delivered = subscriber.seen.values.reduce(0) { $0 + $1.count }
    let sorted = subscriber.latenciesMicroseconds.sorted()
    func p(_ q: Double) -> Double { sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1_000 }
    print("links \(links), \(rate) records/s each asked, \(Double(written * 100 / (links * seconds)) / 100) written, \(seconds) s")
    print("written \(written), delivered \(delivered), lost \(lost), duplicates \(subscriber.duplicates), subscriber reconnects \(subscriber.reconnects)")
    print("latency log-to-subscriber p50 \(p(0.5)) ms, p99 \(p(0.99)) ms, max \(p(1.0)) ms; drained in \(drainMilliseconds) ms")
    print(
      "memory: \(rss.start) KiB before, \(rss.links) KiB with links started, \(rss.end) KiB at the end: "
        + "\((rss.end - rss.start) / links) KiB per link (its thread, SQLite connection, MQTT client)")
  }
}
