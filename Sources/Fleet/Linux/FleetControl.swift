import Glibc
import ScanAccessLinux
import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform
import ScanReaderLinux
import Synchronization

/// What arrives from the fleet: signed bundles and signed commands (ScanCore's FleetControl
/// forms inside a signed envelope). Runs on the fleet link's thread; asks the loop for what
/// only the loop may do (a relay pulse, a reload) through `FleetRequests`, a poll participant.
///
/// A bundle is applied only when its envelope verifies, it names this reader (or `*`), and its
/// version is newer than the last applied one: each file is written whole beside its target
/// and renamed into place (the allow-list's watcher and the loop's reload do the rest), then the
/// version is kept. Otherwise nothing changes and the reply says why.
///
/// A command is acted on only when its envelope verifies, it names this reader, it was not
/// retained by the broker, it has not expired (and expires at most 300 s ahead) and its nonce
/// was never used (the nonces are kept in a file until they expire, so a restart does not
/// forget them). Every outcome is published on the reply topic.
public final class FleetControl: FleetInbox {
  public let settings: FleetSettings
  public let verifier: (any SignedEnvelopeVerifier)?
  /// Bundle file name → the path it replaces (only names configured here may be applied).
  public let targets: [String: String]
  public let requests: FleetRequests
  private let statePath: String
  private var ledger = NonceLedger()
  public private(set) var bundleVersion: Int64 = 0
  private let wall = SystemWallClock()
  /// The one time policy (the loop's): commands and envelopes are judged at the later of the
  /// clock and its floor.
  public var time = TrustedTime()
  /// Bundle file names whose own watcher reloads them when they are renamed into place.
  public var watchedTargets: Set<String> = []

  public init(
    settings: FleetSettings, statePath: String, verifier: (any SignedEnvelopeVerifier)?, targets: [String: String],
    requests: FleetRequests
  ) {
    self.settings = settings
    self.statePath = statePath
    self.verifier = verifier
    self.targets = targets
    self.requests = requests
    // The nonces and the bundle version protect what is acted on: a file that exists and cannot
    // be read refuses every bundle and command until it is repaired, never reads as empty.
    if fileExists(noncePath) {
      do { ledger.load(try readWholeFile(noncePath, maxBytes: 1 << 20)) } catch { stateProblem = error.description }
    }
    do {
      let mark = try VersionMarks(path: versionPath, name: "bundle")
      bundleVersion = Int64(clamping: mark.highest)
      bundleMark = mark
    } catch {
      stateProblem = error.description
    }
  }

  /// Why bundles and commands are refused (a damaged state file), or nil.
  public private(set) var stateProblem: String? = nil
  private var bundleMark: VersionMarks? = nil

  var noncePath: String { statePath + "-nonces" }
  var versionPath: String { statePath + "-bundle-version" }

  public func connected(_ client: MQTTClient, link: FleetLink) {
    _ = try? client.subscribe(link.topics.bundle, qos: 1)
    _ = try? client.subscribe(link.topics.command, qos: 1)
  }

  public func received(_ message: MQTTMessage, link: FleetLink, client: MQTTClient) {
    var reply = JSONObject()
    reply.add("reader", settings.readerID)
    if message.topic == link.topics.bundle {
      reply.add("type", "bundle")
      switch applyBundle(message) {
      case .success(let version):
        reply.add("ok", true)
        reply.add("version", version)
      case .failure(let refusal):
        reply.add("ok", false)
        reply.add("reason", refusal.reason)
        reply.add("version_kept", bundleVersion)
      }
    } else if message.topic == link.topics.command {
      reply.add("type", "command")
      switch actOn(message, link: link, client: client) {
      case .success(let (command, result)):
        reply.add("ok", true)
        reply.add("command", command.action.rawValue)
        reply.add("nonce", command.nonce)
        reply.add("result", result)
      case .failure(let refusal):
        reply.add("ok", false)
        reply.add("reason", refusal.reason)
      }
    } else {
      return
    }
    _ = try? client.publish(topic: link.topics.reply, reply.bytes, qos: 1, retain: false)
  }

  private func open(_ message: MQTTMessage) -> Result<VerifiedEnvelope, EnvelopeRefusal> {
    guard let verifier else { return .failure(EnvelopeRefusal("no trust file: signed bundles and commands are refused")) }
    return verifier.verify(message.payload, nowUnixSeconds: time.judged(wall.unixSeconds()))
  }

  func applyBundle(_ message: MQTTMessage) -> Result<Int64, EnvelopeRefusal> {
    if let stateProblem { return .failure(EnvelopeRefusal("the fleet's state is damaged (\(stateProblem)): refused")) }
    let envelope: VerifiedEnvelope
    switch open(message) {
    case .success(let e): envelope = e
    case .failure(let f): return .failure(EnvelopeRefusal("signature: \(f.reason)"))
    }
    let bundle: FleetBundle
    switch FleetBundle.parse(envelope.payload) {
    case .success(let b): bundle = b
    case .failure(let f): return .failure(f)
    }
    guard bundle.reader == "*" || bundle.reader == settings.readerID else {
      return .failure(EnvelopeRefusal("the bundle is for reader '\(bundle.reader)'"))
    }
    guard bundle.version > bundleVersion else {
      return .failure(EnvelopeRefusal("version \(bundle.version) is not newer than \(bundleVersion)"))
    }
    for file in bundle.files where targets[file.name] == nil {
      return .failure(EnvelopeRefusal("this reader has no \(file.name) file configured"))
    }
    // Every file is written beside its target first (0640, synced); only then renamed into
    // place, durably. Targets belong in the state directory (FleetBundleFiles, docs/fleet.md).
    // A file whose watcher sees the rename reloads through it; the loop is asked only for the
    // others (one reload per bundle, never one from the watcher and one from here).
    // The version is durable before the first file goes in (after every file was written beside
    // its target): a crash while they go in never lets an older bundle (replayed off the broker)
    // apply after a restart, and a bundle refused before that changes nothing, its version
    // included. A bundle whose renames then fail is spent: the fleet sends a newer version.
    let mark = bundleMark!
    let refusal = FleetBundleFiles.replace(bundle.files.map { (targets[$0.name]!, $0.bytes) }) {
      mark.raise(to: UInt64(bundle.version)) ? nil : EnvelopeRefusal("the bundle version could not be kept durably: not applied")
    }
    if mark.highest >= UInt64(bundle.version) { bundleVersion = bundle.version }
    if let refusal { return .failure(refusal) }
    if bundle.files.contains(where: { !watchedTargets.contains($0.name) }) { requests.ask { $0.reload = true } }
    return .success(bundle.version)
  }

  func actOn(_ message: MQTTMessage, link: FleetLink, client: MQTTClient) -> Result<(FleetCommand, String), EnvelopeRefusal> {
    if let stateProblem { return .failure(EnvelopeRefusal("the fleet's state is damaged (\(stateProblem)): refused")) }
    guard !message.retained else { return .failure(EnvelopeRefusal("a retained command is never acted on")) }
    let envelope: VerifiedEnvelope
    switch open(message) {
    case .success(let e): envelope = e
    case .failure(let f): return .failure(EnvelopeRefusal("signature: \(f.reason)"))
    }
    let command: FleetCommand
    switch FleetCommand.parse(envelope.payload) {
    case .success(let c): command = c
    case .failure(let f): return .failure(f)
    }
    guard command.reader == settings.readerID else { return .failure(EnvelopeRefusal("the command is for reader '\(command.reader)'")) }
    // Judged at the later of the clock and its floor; the nonce is durable before anything is done.
    var next = ledger
    if let refusal = next.admit(command, now: time.judged(wall.unixSeconds())) { return .failure(refusal) }
    do { try writeFileAtomically(noncePath, next.text, mode: 0o600) } catch {
      return .failure(EnvelopeRefusal("the nonce could not be kept durably (\(error.reason)): not acted on"))
    }
    ledger = next
    switch command.action {
    case .open:
      requests.accept(command, by: "fleet key " + envelope.keyID)
      return .success((command, "relay pulse requested by \(envelope.keyID)"))
    case .reload:
      requests.accept(command, by: "fleet key " + envelope.keyID)
      return .success((command, "reload requested"))
    case .lockdownOn, .lockdownOff, .occupancyReset, .passbackForgive:
      guard !requests.owners.isEmpty else { return .failure(EnvelopeRefusal("no lockdown or turnstile on this reader")) }
      requests.accept(command, by: "fleet key " + envelope.keyID)
      return .success((command, "\(command.action.rawValue) requested by \(envelope.keyID)"))
    case .status:
      var text = ""
      withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        link.writeStatus(into: &w)
        text = String(decoding: w.written, as: UTF8.self)
      }
      return .success((command, text + "; bundle version \(bundleVersion)"))
    case .snapshot:
      guard let snapshot = requests.snapshot else {
        return .failure(EnvelopeRefusal("snapshots over the fleet are off on this reader (fleet.snapshot)"))
      }
      let generation = snapshot.generation
      let asked = wall.unixNanoseconds()
      requests.ask { $0.snapshot = true }
      guard snapshot.wait(after: generation, notBefore: asked, milliseconds: 3_000, askAgain: { requests.ask { $0.snapshot = true } })
      else {
        return .failure(EnvelopeRefusal("no frame within 3 s"))
      }
      let png: [UInt8], width: Int, height: Int, codes: Int
      switch snapshot.render() {
      case .success(let r): (png, width, height, codes) = r
      case .failure(let refusal): return .failure(refusal)
      }
      do { _ = try client.publish(topic: link.topics.snapshot, png, qos: 1, retain: false) } catch {
        return .failure(EnvelopeRefusal("cannot publish the snapshot: \(error)"))
      }
      return .success(
        (command, "snapshot png \(width)x\(height) \(png.count) bytes, \(codes) codes, \(snapshot.policy.rawValue), on \(link.topics.snapshot)"))
    }
  }
}

/// The fleet's copy of a snapshot: the loop hands the captured frame over (`deliver`, on the
/// loop's thread: a copy into memory allocated here at startup, never a wait — when the fleet
/// thread holds the copy, the loop offers the next frame instead), the fleet thread redacts it
/// as `fleet.snapshot` says and renders the PNG.
///
/// Redacting fails closed: the reader's own decode of that frame may not have located every code
/// (it stops at the first; a large mode looks at a downscaled view), so after blanking what it
/// located, the frame is decoded again here with every attempt, view and format, and whatever
/// still reads is blanked too; if a code still reads after three rounds, no picture is sent.
public final class FleetSnapshot: SnapshotSink, @unchecked Sendable {
  public let policy: FleetSnapshotPolicy
  private let buffer: SnapshotBuffer
  private let maxWidth: Int, maxHeight: Int
  /// Deliveries so far, under the lock that guards `buffer`.
  private let delivered = Mutex<Int>(0)
  /// The second look (fleet thread only, made on first use).
  private var verifier: DecodePipeline<ZXingDecoder>? = nil
  /// With decoder isolation (the default): makes the worker pair the second look runs in, so the
  /// service never parses the camera's pixels itself (docs/decoder.md "The decoder worker"). Made
  /// on first use, on the fleet thread; nil from it, or no answer by the deadline: no snapshot.
  public var makeWorkers: (() -> DecoderWorkers?)? = nil
  private var workers: DecoderWorkers? = nil

  public init(policy: FleetSnapshotPolicy, maxWidth: Int, maxHeight: Int) {
    self.policy = policy
    self.maxWidth = maxWidth
    self.maxHeight = maxHeight
    buffer = SnapshotBuffer(maxWidth: maxWidth, maxHeight: maxHeight)
  }

  public func deliver(_ snapshot: SnapshotBuffer) -> Bool {
    let taken: Bool? = delivered.withLockIfAvailable { count in
      if buffer.copy(from: snapshot) { count += 1 }  // a frame larger than configured is not counted
      return true
    }
    return taken == true
  }

  /// How many snapshots the loop has handed over.
  public var generation: Int { delivered.withLock { $0 } }

  /// Waits (polling, on the fleet thread) for a delivery after `generation` of a frame captured
  /// at or after `notBefore` (wall ns); a late one left by an earlier request that timed out
  /// calls `askAgain` and waits on.
  func wait(after generation: Int, notBefore: Int64, milliseconds: Int, askAgain: () -> Void) -> Bool {
    var seen = generation
    for _ in 0..<max(1, milliseconds / 10) {
      let (count, captured) = delivered.withLock { ($0, buffer.wallNanoseconds) }
      if count > seen {
        if captured >= notBefore { return true }
        seen = count
        askAgain()
      }
      usleep(10_000)
    }
    return false
  }

  /// The delivered frame as PNG, redacted unless the policy is `full`; a refusal when a code
  /// still reads after redacting.
  public func render() -> Result<(png: [UInt8], width: Int, height: Int, codes: Int), EnvelopeRefusal> {
    delivered.withLock { _ in
      if policy != .full {
        buffer.redact()
        var rounds = 0
        while true {
          guard let found = readable() else {
            return .failure(EnvelopeRefusal("the redaction could not be checked (the decoder did not answer): no snapshot sent"))
          }
          if found.isEmpty { break }
          rounds += 1
          guard rounds <= 3 else { return .failure(EnvelopeRefusal("a code still reads after redaction: no snapshot sent")) }
          for corners in found { buffer.blank(corners) }
        }
      }
      guard let png = SnapshotRenderer.png(buffer) else { return .failure(EnvelopeRefusal("the snapshot could not be encoded")) }
      return .success((png, buffer.width, buffer.height, buffer.symbolCount))
    }
  }

  /// How the second look decodes: every format and view, every attempt of the reader's order
  /// (above 640×480 not the whole frame doubled: the tiles are, and the frame is seen at full
  /// resolution), no budget.
  public static func secondLook(maxWidth: Int, maxHeight: Int) -> DecodeSettings {
    var settings = DecodeSettings()
    settings.formats = .all
    settings.variants = ImageVariant.allCases
    settings.variantMode = .retry
    settings.attempts = DecodeAttempt.readerDefault
    if maxWidth * maxHeight > 640 * 480 { settings.attempts.removeLast() }
    return settings
  }

  /// Workers for the second look (with decoder isolation): its settings, 64 results.
  public static func secondLookWorkers(
    maxWidth: Int, maxHeight: Int, arenaBytes: Int, supervision: DecoderSupervisor.Settings, executable: String = "/proc/self/exe"
  ) throws(SystemError) -> DecoderWorkers {
    let settings = DecoderWorkerSettings(
      decode: secondLook(maxWidth: maxWidth, maxHeight: maxHeight), maxWidth: maxWidth, maxHeight: maxHeight,
      arenaBytes: arenaBytes, resultsCapacity: 64, payloadBytesMax: 8192)
    return try DecoderWorkers(settings: settings, supervision: supervision, executable: executable)
  }

  /// The corners of every code any attempt, view or format reads in the buffer now; nil when that
  /// could not be learned (a worker that did not start, crashed or passed its deadline).
  private func readable() -> [InlineArray<8, Int32>]? {
    var results = DecodeResults(capacity: 64, payloadBytesMax: 8192)
    let frame = LumaFrame(
      bytes: UnsafeRawBufferPointer(rebasing: buffer.pixels[0..<buffer.width * buffer.height]),
      geometry: .gray(width: buffer.width, height: buffer.height), captured: Instant(nanoseconds: 0), sequence: 0)
    if let makeWorkers {
      if workers == nil { workers = makeWorkers() }
      // Started at the first snapshot: a loaded or slow reader's warm-up gets its start timeout,
      // at most 10 s (the link's thread waits meanwhile; without them no picture is sent).
      guard let workers, workers.waitUntilReady(milliseconds: min(workers.startTimeoutMilliseconds, 10_000)),
        workers.submit(frame, allViews: true, now: SystemMonotonicClock().now()),
        workers.pump(milliseconds: 5_000, until: { $0.hasReply }), workers.takeReply(into: &results) != nil
      else { return nil }
      return (0..<results.count).map { results[$0].corners }
    }
    if verifier == nil {
      guard let decoder = try? ZXingDecoder(arenaBytes: 0, capacity: 64) else { return nil }
      verifier = DecodePipeline(
        decoder: decoder, settings: Self.secondLook(maxWidth: maxWidth, maxHeight: maxHeight), maxWidth: maxWidth, maxHeight: maxHeight)
    }
    verifier!.decode(frame, into: &results)
    return (0..<results.count).map { results[$0].corners }
  }
}
