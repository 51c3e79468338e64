import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Synchronization
import Testing

// Device owners are `~Copyable` structs whose `deinit` releases the device (GPIO line, camera,
// decoder arena). Swift 6.3's optimizer can run such a deinit twice, once on the value as it was
// before an in-place mutation (SROA splits a local aggregate through a nested type with a deinit;
// DCE then turns the dead `destructure_struct` into a destroy: swiftlang/swift#86840, #86901).
// These tests build the engine around fakes shaped like the vulnerable case (one trivial stored
// property, overwritten by `set`/`decode`) and check every deinit runs exactly once, in debug and
// in release (`swift test -c release --filter DeviceLifetimeTests`). The check does catch the
// miscompile: the same fake in a two-line `Holder<R>` with a constrained extension calling
// `r.set(.active)` counts 2 deinits under `-c release` (1 in debug).

/// Deinit counters of one fake device (static: the fakes must hold no extra fields,
/// which would hide the miscompile).
final class DeviceCounters: Sendable {
  let deinits = Atomic<Int>(0)
  /// What the last deinit saw: the line level, or the decoder's last capture time.
  let lastSeen = Atomic<Int>(-1)
  func reset() {
    deinits.store(0, ordering: .sequentiallyConsistent)
    lastSeen.store(-1, ordering: .sequentiallyConsistent)
  }
  var deinitCount: Int { deinits.load(ordering: .sequentiallyConsistent) }
}

protocol DeviceTag { static var counters: DeviceCounters { get } }
enum RelayTag: DeviceTag { static let counters = DeviceCounters() }
enum BuzzerTag: DeviceTag { static let counters = DeviceCounters() }
enum DecoderTag: DeviceTag { static let counters = DeviceCounters() }

/// An output line owner whose only stored property is its level (the miscompile-prone shape).
/// `set` only overwrites the level: reading the old value first, or an atomic operation in `set`,
/// keeps the miscompile from showing (checked with swiftc 6.3.1 -O), so the edges are checked on
/// the engine's `relayLevel` instead.
struct CountingLine<Tag: DeviceTag>: OutputLine, ~Copyable {
  var level: LineLevel
  init() { level = .inactive }
  mutating func set(_ newLevel: LineLevel) throws(GPIOError) {
    level = newLevel
  }
  deinit {
    Tag.counters.deinits.add(1, ordering: .sequentiallyConsistent)
    Tag.counters.lastSeen.store(Int(level.rawValue), ordering: .sequentiallyConsistent)
  }
}

/// A decoder owner whose only stored property is the capture time of the last frame it saw,
/// overwritten (not read) on every call; a frame whose first pixel is 1 reads as "ALICE".
struct CountingDecoder: CodeDecoder, ~Copyable {
  static let payload: [UInt8] = Array("ALICE".utf8)
  var lastCaptured: UInt64 = 0
  init() {}
  mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {
    lastCaptured = view.captured.nanoseconds
    guard view.luma(x: 0, y: 0) == 1, results.count < results.capacity else { return }
    let storage = results.payloadStorage(results.count)
    let n = min(storage.count, Self.payload.count)
    Self.payload.withUnsafeBytes { storage.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    var symbol = DecodedSymbol()
    symbol.format = .qrCode
    symbol.byteCount = n
    symbol.corners = [10, 10, 50, 10, 50, 50, 10, 50]
    results.commit(symbol)
  }
  deinit {
    DecoderTag.counters.deinits.add(1, ordering: .sequentiallyConsistent)
    DecoderTag.counters.lastSeen.store(Int(lastCaptured), ordering: .sequentiallyConsistent)
  }
}

@Suite(.serialized) struct DeviceLifetimeTests {
  typealias Engine = ScanEngine<
    CountingDecoder, CountingLine<RelayTag>, CountingLine<BuzzerTag>, ManualClock, ManualClock, FixtureDigester
  >

  static let width = 64, height = 48

  static func resetCounters() {
    RelayTag.counters.reset()
    BuzzerTag.counters.reset()
    DecoderTag.counters.reset()
  }

  static func makeEngine(clock: ManualClock, ring: EventRing) -> Engine {
    var settings = EngineSettings()
    settings.actuation.relayPulseMilliseconds = 200
    var engine = Engine(
      settings: settings, decoder: CountingDecoder(), relay: CountingLine(), buzzer: CountingLine(),
      clock: clock, wall: clock, digester: FixtureDigester(), events: ring, maxWidth: width, maxHeight: height)
    #expect(engine.allowList.load(Array("text:ALICE\n".utf8), digester: FixtureDigester(), nowUnixSeconds: clock.unixSeconds()) == nil)
    return engine
  }

  /// `frames` frames of `pixels` (first pixel 1 = ALICE, 0 = no code), each followed by 33 ticks 1 ms apart.
  static func feed(_ engine: inout Engine, _ pixels: [UInt8], clock: ManualClock, frames: Int) {
    for n in 0..<frames {
      pixels.withUnsafeBytes { raw in
        engine.process(LumaFrame(bytes: raw, geometry: .gray(width: width, height: height), captured: clock.now(), sequence: UInt64(n)))
      }
      for _ in 0..<33 {
        clock.advance(milliseconds: 1)
        engine.tick()
      }
    }
  }

  static func expectReleasedOnce(lastCaptured: UInt64) {
    #expect(RelayTag.counters.deinitCount == 1, "relay deinit runs once")
    #expect(BuzzerTag.counters.deinitCount == 1, "buzzer deinit runs once")
    #expect(DecoderTag.counters.deinitCount == 1, "decoder deinit runs once")
    // The one deinit saw the final state (a spurious one sees the value before a mutation).
    #expect(RelayTag.counters.lastSeen.load(ordering: .sequentiallyConsistent) == Int(LineLevel.inactive.rawValue))
    #expect(DecoderTag.counters.lastSeen.load(ordering: .sequentiallyConsistent) == Int(lastCaptured))
  }

  @Test("a grant drives the relay active then inactive; each device is released exactly once")
  func grantReleasesEachDeviceOnce() {
    Self.resetCounters()
    let clock = ManualClock()
    let ring = EventRing(capacity: 1024)
    let code = FixtureDecoder.frame(width: Self.width, height: Self.height, naming: 1)
    let empty = FixtureDecoder.frame(width: Self.width, height: Self.height, naming: 0)
    var lastCaptured: UInt64 = 0
    do {
      var engine = Self.makeEngine(clock: clock, ring: ring)
      Self.feed(&engine, code, clock: clock, frames: 3)
      #expect(engine.relayLevel == .active)
      Self.feed(&engine, empty, clock: clock, frames: 10)  // 330 ms > the 200 ms pulse
      #expect(engine.stats.grants == 1)
      #expect(engine.relayLevel == .inactive)
      #expect(RelayTag.counters.deinitCount == 0 && BuzzerTag.counters.deinitCount == 0 && DecoderTag.counters.deinitCount == 0)
      lastCaptured = engine.pipeline.decoder.lastCaptured
      #expect(lastCaptured > 0)
      _ = consume engine
    }
    Self.expectReleasedOnce(lastCaptured: lastCaptured)
  }

  @Test("tick and releaseOutputs called directly on a local engine release each device once")
  func directTickReleasesOnce() {
    Self.resetCounters()
    let clock = ManualClock()
    let ring = EventRing(capacity: 1024)
    do {
      var engine = Self.makeEngine(clock: clock, ring: ring)
      engine.openManually(milliseconds: 50)
      #expect(engine.relayLevel == .active)
      clock.advance(milliseconds: 60)
      engine.tick()
      #expect(engine.relayLevel == .inactive)
      engine.releaseOutputs()
    }
    Self.expectReleasedOnce(lastCaptured: 0)
  }
}
