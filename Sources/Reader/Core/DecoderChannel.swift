import ScanBase

/// What a decoder worker is started with: the pipeline's settings and the sizes of everything it
/// maps. Written by the service into the shared memory before the worker starts, so a spare
/// started hours later decodes exactly as the first did.
public struct DecoderWorkerSettings: Equatable, Sendable {
  public var decode: DecodeSettings
  public var maxWidth: Int
  public var maxHeight: Int
  public var arenaBytes: Int
  public var resultsCapacity: Int
  public var payloadBytesMax: Int
  /// Test hooks the worker honours (debug builds only; `DecoderChannel.TestHook`).
  public var testHooks: UInt32 = 0
  public init(
    decode: DecodeSettings, maxWidth: Int, maxHeight: Int, arenaBytes: Int, resultsCapacity: Int, payloadBytesMax: Int
  ) {
    self.decode = decode
    self.maxWidth = maxWidth
    self.maxHeight = maxHeight
    self.arenaBytes = arenaBytes
    self.resultsCapacity = resultsCapacity
    self.payloadBytesMax = payloadBytesMax
  }
}

/// The layout of one worker's shared memory, and the copies in and out of it (no allocation).
///
///     0    header: magic, version, sequences, the request (frame size, mode, capture time,
///          and at 144 the frame's turn) and the reply (count, strategy figures, engine counters)
///     256  settings (DecoderWorkerSettings)
///     512  result records, 64 bytes each; then payloads, then texts (payloadBytesMax each)
///     ...  the frame: maxWidth × maxHeight gray bytes, packed, 64-byte aligned
///
/// The service writes the request and the frame, then `requestSequence` (release); the worker
/// reads `requestSequence` (acquire), decodes, writes the reply, then `doneSequence` (release).
/// The atomic words are reached through `offset…` by the Linux side (ScanCore imports no C).
/// Everything the worker wrote is untrusted: `readReply` copies it once and checks every count.
public struct DecoderChannel: Sendable {
  public static let magic: UInt32 = 0x5347_4457  // "SGDW"
  public static let version: UInt32 = 1
  public static let offsetRequestSequence = 8
  public static let offsetDoneSequence = 12
  public static let offsetReady = 16
  static let settingsOffset = 256
  static let recordsOffset = 512
  static let recordBytes = 64

  /// Test hooks, honoured only by debug builds of the worker: a frame whose first row starts
  /// with the marker makes the worker abort, call open(2) (seccomp kills it) or spin; `slow`
  /// makes every decode take 60 ms more (decodes longer than a frame, on any machine).
  public enum TestHook: UInt32, Sendable, CaseIterable {
    case abort = 1
    case forbiddenCall = 2
    case spin = 4
    case slow = 8
    /// The marker that must open the frame's first row ("SG-TEST-ABORT" ...).
    public var marker: String {
      switch self {
      case .abort: "SG-TEST-ABORT"
      case .forbiddenCall: "SG-TEST-OPEN"
      case .spin: "SG-TEST-SPIN"
      case .slow: "SG-TEST-SLOW"
      }
    }
  }

  public let maxWidth: Int
  public let maxHeight: Int
  public let capacity: Int
  public let payloadBytesMax: Int
  public let frameOffset: Int
  public let totalBytes: Int

  public init(maxWidth: Int, maxHeight: Int, capacity: Int, payloadBytesMax: Int) {
    precondition(maxWidth > 0 && maxHeight > 0 && capacity > 0 && payloadBytesMax > 0)
    self.maxWidth = maxWidth
    self.maxHeight = maxHeight
    self.capacity = capacity
    self.payloadBytesMax = payloadBytesMax
    let results = Self.recordsOffset + capacity * (Self.recordBytes + 2 * payloadBytesMax)
    frameOffset = (results + 63) & ~63
    totalBytes = (frameOffset + maxWidth * maxHeight + 4095) & ~4095
  }

  public init(_ s: DecoderWorkerSettings) {
    self.init(maxWidth: s.maxWidth, maxHeight: s.maxHeight, capacity: s.resultsCapacity, payloadBytesMax: s.payloadBytesMax)
  }

  // MARK: - Settings

  /// Writes the header and the settings into a fresh region (`totalBytes` long).
  public func writeSettings(_ s: DecoderWorkerSettings, into base: UnsafeMutableRawPointer) {
    precondition(s.decode.attempts.count <= 16 && s.decode.variants.count <= 4)
    store(base, 0, Self.magic)
    store(base, 4, Self.version)
    store(base, 136, UInt64(totalBytes))
    let p = base + Self.settingsOffset
    store(p, 0, UInt32(s.maxWidth))
    store(p, 4, UInt32(s.maxHeight))
    store(p, 8, UInt64(s.arenaBytes))
    store(p, 16, UInt32(s.resultsCapacity))
    store(p, 20, UInt32(s.payloadBytesMax))
    let d = s.decode
    store(p, 24, d.formats.rawValue)
    store(p, 28, UInt8(d.downscale))
    store(p, 29, Self.modeCode(d.variantMode))
    store(p, 30, UInt8(d.tryHarder ? 1 : 0))
    store(p, 31, UInt8(d.region == nil ? 0 : 1))
    if let r = d.region {
      store(p, 32, Int32(r.x))
      store(p, 36, Int32(r.y))
      store(p, 40, Int32(r.width))
      store(p, 44, Int32(r.height))
    }
    store(p, 48, UInt8(d.variants.count))
    for (i, v) in d.variants.enumerated() { store(p, 49 + i, v.rawValue) }
    store(p, 53, UInt8(d.attempts.count))
    for (i, a) in d.attempts.enumerated() {
      let o = 56 + i * 5
      store(p, o, a.area.rawValue)
      store(p, o + 1, UInt8(a.scale.up))
      store(p, o + 2, UInt8(a.scale.down))
      store(p, o + 3, a.variant.rawValue)
      store(p, o + 4, a.binarizer.rawValue)
    }
    store(p, 136, UInt64(max(0, d.budgetMicroseconds)))
    store(p, 144, UInt64(max(0, d.quietAfterMicroseconds)))
    store(p, 152, s.testHooks)
  }

  /// Reads the settings a service wrote (the worker, at start); nil when anything is out of range.
  public static func readSettings(from base: UnsafeRawPointer, bytes: Int) -> DecoderWorkerSettings? {
    guard bytes >= recordsOffset, load(base, 0, UInt32.self) == magic, load(base, 4, UInt32.self) == version
    else { return nil }
    let p = base + settingsOffset
    let width = Int(load(p, 0, UInt32.self)), height = Int(load(p, 4, UInt32.self))
    let capacity = Int(load(p, 16, UInt32.self)), payload = Int(load(p, 20, UInt32.self))
    guard (1...8192).contains(width), (1...8192).contains(height), (1...64).contains(capacity),
      (1...8192).contains(payload)
    else { return nil }
    var d = DecodeSettings()
    d.formats = BarcodeFormats(rawValue: load(p, 24, UInt32.self))
    d.downscale = Int(load(p, 28, UInt8.self))
    guard d.downscale == 1 || d.downscale == 2, let code = modeOf(load(p, 29, UInt8.self)), let mode = code else { return nil }
    d.variantMode = mode
    d.tryHarder = load(p, 30, UInt8.self) != 0
    if load(p, 31, UInt8.self) != 0 {
      d.region = Region(
        x: Int(load(p, 32, Int32.self)), y: Int(load(p, 36, Int32.self)), width: Int(load(p, 40, Int32.self)),
        height: Int(load(p, 44, Int32.self)))
    }
    let variantCount = Int(load(p, 48, UInt8.self)), attemptCount = Int(load(p, 53, UInt8.self))
    guard variantCount <= 4, attemptCount <= 16 else { return nil }
    d.variants = []
    for i in 0..<variantCount {
      guard let v = ImageVariant(rawValue: load(p, 49 + i, UInt8.self)) else { return nil }
      d.variants.append(v)
    }
    d.attempts = []
    for i in 0..<attemptCount {
      let o = 56 + i * 5
      let up = Int(load(p, o + 1, UInt8.self)), down = Int(load(p, o + 2, UInt8.self))
      guard let area = AttemptArea(rawValue: load(p, o, UInt8.self)), (up == 1 && (1...8).contains(down)) || (up == 2 && down == 1),
        let variant = ImageVariant(rawValue: load(p, o + 3, UInt8.self)),
        let binarizer = Binarizer(rawValue: load(p, o + 4, UInt8.self))
      else { return nil }
      d.attempts.append(DecodeAttempt(area, scale: ViewScale(up: up, down: down), variant: variant, binarizer: binarizer))
    }
    d.budgetMicroseconds = Int(clamping: load(p, 136, UInt64.self))
    d.quietAfterMicroseconds = Int(clamping: load(p, 144, UInt64.self))
    var s = DecoderWorkerSettings(
      decode: d, maxWidth: width, maxHeight: height, arenaBytes: Int(clamping: load(p, 8, UInt64.self)),
      resultsCapacity: capacity, payloadBytesMax: payload)
    s.testHooks = load(p, 152, UInt32.self)
    guard DecoderChannel(s).totalBytes <= bytes, Int(load(base, 136, UInt64.self)) == DecoderChannel(s).totalBytes else {
      return nil
    }
    return s
  }

  static func modeCode(_ m: VariantMode?) -> UInt8 {
    switch m {
    case nil: 0
    case .upright: 1
    case .retry: 2
    case .alternate: 3
    }
  }

  static func modeOf(_ code: UInt8) -> VariantMode?? {
    switch code {
    case 0: .some(nil)
    case 1: .upright
    case 2: .retry
    case 3: .alternate
    default: nil
    }
  }

  // MARK: - Request (service → worker)

  /// Copies `frame`'s luma, packed, into the frame area and writes the request fields (the
  /// sequence word is the caller's, with release ordering). Returns false when the frame is
  /// larger than the area.
  public func writeRequest(_ frame: LumaFrame, mode: VariantMode?, turn: UInt64 = 0, into base: UnsafeMutableRawPointer) -> Bool {
    let g = frame.geometry
    guard g.width <= maxWidth, g.height <= maxHeight, g.width > 0, g.height > 0 else { return false }
    let destination = base + frameOffset
    let source = frame.bytes.baseAddress!
    if g.pixelStrideBytes == 1 {
      for y in 0..<g.height {
        (destination + y * g.width).copyMemory(from: source + y * g.rowStrideBytes, byteCount: g.width)
      }
    } else {
      let out = destination.assumingMemoryBound(to: UInt8.self)
      let from = source.assumingMemoryBound(to: UInt8.self)
      for y in 0..<g.height {
        let row = y * g.rowStrideBytes
        for x in 0..<g.width { out[y * g.width + x] = from[row + x * g.pixelStrideBytes] }
      }
    }
    store(base, 20, UInt32(g.width))
    store(base, 24, UInt32(g.height))
    store(base, 28, UInt32(Self.modeCode(mode)))
    store(base, 32, frame.captured.nanoseconds)
    store(base, 40, frame.sequence)
    store(base, 144, turn)
    return true
  }

  /// The request's frame as the worker sees it (nil when its size is out of range), the mode it
  /// asks for (nil: the configured one) and its turn (`DecodePipeline.decode(turn:)`).
  public func readRequest(from base: UnsafeRawPointer) -> (frame: LumaFrame, mode: VariantMode?, turn: UInt64)? {
    let width = Int(load(base, 20, UInt32.self)), height = Int(load(base, 24, UInt32.self))
    guard (1...maxWidth).contains(width), (1...maxHeight).contains(height) else { return nil }
    guard let mode = Self.modeOf(UInt8(truncatingIfNeeded: load(base, 28, UInt32.self))) else { return nil }
    let frame = LumaFrame(
      bytes: UnsafeRawBufferPointer(start: base + frameOffset, count: width * height), geometry: .gray(width: width, height: height),
      captured: Instant(nanoseconds: load(base, 32, UInt64.self)), sequence: load(base, 40, UInt64.self))
    return (frame, mode, load(base, 144, UInt64.self))
  }

  /// The frame the service sent last, for the decision half (aiming figures, the snapshot).
  public func sentFrame(in base: UnsafeRawPointer, geometry g: FrameGeometry, captured: Instant, sequence: UInt64) -> LumaFrame {
    LumaFrame(
      bytes: UnsafeRawBufferPointer(start: base + frameOffset, count: g.width * g.height),
      geometry: .gray(width: g.width, height: g.height), captured: captured, sequence: sequence)
  }

  // MARK: - Reply (worker → service)

  /// Writes the worker's results, the strategy's figures and the engine's counters.
  public func writeReply(
    _ results: borrowing DecodeResults, frame report: StrategyFrame, engine: DecoderStats?, microseconds: UInt64,
    into base: UnsafeMutableRawPointer
  ) {
    let n = min(results.count, capacity)
    for i in 0..<n {
      let r = base + Self.recordsOffset + i * Self.recordBytes
      let s = results[i]
      store(r, 0, s.format.rawValue)
      store(r, 4, s.contentType.rawValue)
      store(r, 5, s.variant.rawValue)
      store(r, 6, UInt8(s.engineMirrored ? 1 : 0))
      store(r, 7, UInt8(s.truncated ? 1 : 0))
      for k in 0..<8 { store(r, 8 + 4 * k, s.corners[k]) }
      store(r, 40, s.orientationDegrees)
      let payload = results.payload(i), text = results.text(i)
      let bytes = min(payload.count, payloadBytesMax), textBytes = min(text.count, payloadBytesMax)
      store(r, 44, UInt32(bytes))
      store(r, 48, UInt32(textBytes))
      if bytes > 0 { (base + payloadOffset(i)).copyMemory(from: payload.baseAddress!, byteCount: bytes) }
      if textBytes > 0 { (base + textOffset(i)).copyMemory(from: text.baseAddress!, byteCount: textBytes) }
    }
    store(base, 48, UInt32(n))
    store(base, 52, UInt32(clamping: report.attempts))
    store(base, 56, report.microseconds)
    store(base, 64, UInt32((report.budgetSpent ? 1 : 0) | (report.quiet ? 2 : 0)))
    let e =
      engine
      ?? DecoderStats(
        decodes: 0, arenaAllocations: 0, arenaOverflows: 0, arenaHighWaterBytes: 0, arenaPinnedBytes: 0, arenaCapacityBytes: 0,
        engineErrors: 0)
    store(base, 72, e.decodes)
    store(base, 80, e.arenaAllocations)
    store(base, 88, e.arenaOverflows)
    store(base, 96, UInt64(e.arenaHighWaterBytes))
    store(base, 104, UInt64(e.arenaPinnedBytes))
    store(base, 112, UInt64(e.arenaCapacityBytes))
    store(base, 120, e.engineErrors)
    store(base, 128, microseconds)
  }

  /// Copies the worker's reply into `results` (cleared first), checking every count and size:
  /// a worker is untrusted, whatever it wrote. Returns the strategy's figures and the engine's.
  /// How many codes the reply in `base` says were read (untrusted: only "any or none" is used,
  /// by the pattern quarantine, before `readReply` checks it).
  public static func replyCount(_ base: UnsafeRawPointer) -> Int { Int(base.loadUnaligned(fromByteOffset: 48, as: UInt32.self)) }

  public func readReply(from base: UnsafeRawPointer, into results: inout DecodeResults) -> (StrategyFrame, DecoderStats) {
    results.removeAll()
    let n = min(Int(load(base, 48, UInt32.self)), capacity)
    for i in 0..<n where results.count < results.capacity {
      let r = base + Self.recordsOffset + i * Self.recordBytes
      var s = DecodedSymbol()
      s.format = BarcodeFormats(rawValue: load(r, 0, UInt32.self))
      s.contentType = ContentType(rawValue: load(r, 4, UInt8.self)) ?? .unknownECI
      s.variant = ImageVariant(rawValue: load(r, 5, UInt8.self)) ?? .upright
      s.engineMirrored = load(r, 6, UInt8.self) != 0
      s.truncated = load(r, 7, UInt8.self) != 0
      // Corners within the largest frame the channel carries: a corner far outside it (a
      // compromised worker's) would reach the snapshot's drawing as an empty or huge range.
      for k in 0..<8 {
        let bound = Int32(clamping: k % 2 == 0 ? maxWidth : maxHeight)
        s.corners[k] = min(max(load(r, 8 + 4 * k, Int32.self), 0), bound)
      }
      s.orientationDegrees = load(r, 40, Int32.self)
      let slot = results.count
      let keep = min(results.payloadBytesMax, payloadBytesMax)
      s.byteCount = min(Int(load(r, 44, UInt32.self)), keep)
      s.textByteCount = min(Int(load(r, 48, UInt32.self)), keep)
      guard s.format.rawValue != 0 else { continue }
      results.payloadStorage(slot).baseAddress!.copyMemory(from: base + payloadOffset(i), byteCount: s.byteCount)
      results.textStorage(slot).baseAddress!.copyMemory(from: base + textOffset(i), byteCount: s.textByteCount)
      results.commit(s)
    }
    var frame = StrategyFrame()
    frame.attempts = Int(min(load(base, 52, UInt32.self), 1_000))
    frame.microseconds = load(base, 56, UInt64.self)
    let flags = load(base, 64, UInt32.self)
    frame.budgetSpent = flags & 1 != 0
    frame.quiet = flags & 2 != 0
    let engine = DecoderStats(
      decodes: load(base, 72, UInt64.self), arenaAllocations: load(base, 80, UInt64.self),
      arenaOverflows: load(base, 88, UInt64.self), arenaHighWaterBytes: Int(clamping: load(base, 96, UInt64.self)),
      arenaPinnedBytes: Int(clamping: load(base, 104, UInt64.self)),
      arenaCapacityBytes: Int(clamping: load(base, 112, UInt64.self)), engineErrors: load(base, 120, UInt64.self))
    return (frame, engine)
  }

  /// Time the worker itself spent on the last request (microseconds).
  public func workerMicroseconds(in base: UnsafeRawPointer) -> UInt64 { load(base, 128, UInt64.self) }

  func payloadOffset(_ i: Int) -> Int { Self.recordsOffset + capacity * Self.recordBytes + i * payloadBytesMax }
  func textOffset(_ i: Int) -> Int { Self.recordsOffset + capacity * (Self.recordBytes + payloadBytesMax) + i * payloadBytesMax }

  /// Whether the first row of `frame` starts with `hook`'s marker (the test hooks).
  public static func frame(_ frame: LumaFrame, carries hook: TestHook) -> Bool {
    let marker = hook.marker.utf8
    guard frame.geometry.width >= marker.count else { return false }
    var x = 0
    for b in marker {
      if frame.luma(x: x, y: 0) != b { return false }
      x += 1
    }
    return true
  }
}

@inline(__always) private func store<T: FixedWidthInteger>(_ base: UnsafeMutableRawPointer, _ offset: Int, _ value: T) {
  base.storeBytes(of: value, toByteOffset: offset, as: T.self)
}

@inline(__always) private func load<T: FixedWidthInteger>(_ base: UnsafeRawPointer, _ offset: Int, _ type: T.Type) -> T {
  base.loadUnaligned(fromByteOffset: offset, as: T.self)
}

/// The engine's decoder when the decode runs in a worker process: the engine's own pipeline is
/// never asked (`ScanEngine.completeFrame` takes the worker's results), and finds nothing if it is.
public struct IdleDecoder: CodeDecoder {
  public init() {}
  public mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {}
}
