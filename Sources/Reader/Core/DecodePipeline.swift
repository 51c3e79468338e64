import ScanBase

/// A rectangle of the frame, in pixels.
public struct Region: Equatable, Sendable {
  public var x: Int, y: Int, width: Int, height: Int
  public init(x: Int, y: Int, width: Int, height: Int) {
    self.x = x; self.y = y; self.width = width; self.height = height
  }
  /// This region clipped to a `width` × `height` frame; nil when nothing is left.
  public func clipped(width w: Int, height h: Int) -> Region? {
    let x0 = max(0, x), y0 = max(0, y)
    let x1 = min(w, x + width), y1 = min(h, y + height)
    return x1 > x0 && y1 > y0 ? Region(x: x0, y: y0, width: x1 - x0, height: y1 - y0) : nil
  }
  public func contains(x px: Int, y py: Int) -> Bool {
    px >= x && py >= y && px < x + width && py < y + height
  }
}

extension LumaFrame {
  /// Zero-copy: the view of `region` (inside this frame) with this frame's strides and times.
  func view(of region: Region) -> LumaFrame {
    let g = geometry
    let offset = region.y * g.rowStrideBytes + region.x * g.pixelStrideBytes
    return LumaFrame(
      bytes: UnsafeRawBufferPointer(rebasing: bytes[offset...]),
      geometry: FrameGeometry(
        width: region.width, height: region.height, rowStrideBytes: g.rowStrideBytes, pixelStrideBytes: g.pixelStrideBytes),
      captured: captured, sequence: sequence)
  }
}

/// How the pipeline covers codes the engine cannot read upright: light-on-dark (phones in dark
/// mode) and mirrored ones.
public enum VariantMode: String, Sendable, CaseIterable {
  /// Only the frame as captured.
  case upright
  /// Upright first; each further view only when the previous found nothing (same frame).
  case retry
  /// One view per frame, round-robin: flat cost per frame, up to N frames of extra latency.
  case alternate
}

/// Pipeline settings, fixed at startup.
public struct DecodeSettings: Equatable, Sendable {
  public var formats: BarcodeFormats = .qrCode
  public var region: Region? = nil
  /// 1 = full resolution, 2 = average 2×2 blocks before decoding.
  public var downscale = 1
  public var variantMode: VariantMode = .retry
  public var variants: [ImageVariant] = [.upright, .inverted, .mirrored]
  public var tryHarder = true
  /// The decode strategy: views and engine options, best first (empty: the variant views above
  /// only, as `variantMode` says). With a strategy, `variantMode` says how its attempts are
  /// spent: `retry` runs every attempt on each frame (`scangate decode`), `alternate` spreads them
  /// across frames within `budgetMicroseconds` per frame (the reader), `upright` runs the first.
  public var attempts: [DecodeAttempt] = []
  /// CPU the strategy may spend on one frame (0: no limit). An attempt starts only while its
  /// measured cost still fits; the first one of a frame always runs.
  public var budgetMicroseconds = 0
  /// `alternate` only: after this long with no change in the picture and no code read, every
  /// other frame gets one attempt of the order in turn instead of the budget, the others none (a
  /// still, empty doorway costs well under a decode a frame); a frame that differs, or a code
  /// read, gets the whole budget again. 0: every frame gets the budget.
  public var quietAfterMicroseconds = 0
  public init() {}
}

/// Region of interest, downscale and inverted/mirrored views in front of a `CodeDecoder`.
///
/// Owns one scratch plane sized at startup for the largest frame; a transformed view is written
/// there, the plain upright view is passed through without copying. Nothing allocates per frame.
public struct DecodePipeline<Decoder: CodeDecoder & ~Copyable>: ~Copyable {
  public var decoder: Decoder
  public let settings: DecodeSettings
  let scratch: UnsafeMutableRawBufferPointer
  private let variants: InlineArray<4, ImageVariant>
  private let variantCount: Int
  private var frameCounter = 0
  /// Decode calls made per view, for the cost figures.
  public internal(set) var decodeCalls: UInt64 = 0
  /// The strategy, copied into fixed storage at startup.
  var strategy = InlineArray<16, DecodeAttempt>(repeating: DecodeAttempt())
  public let strategyCount: Int
  /// Measured cost of each attempt (microseconds, running average), for the budget; `remeasure`:
  /// passed over as too dear, so its next run sets the cost anew.
  var attemptCostMicroseconds = InlineArray<16, UInt64>(repeating: 0)
  /// The view's pixels when each cost was measured (a tracked region changes size).
  var attemptCostPixels = InlineArray<16, UInt32>(repeating: 0)
  var remeasure = InlineArray<16, Bool>(repeating: false)
  /// Codes each attempt found, and how often it ran (STATS, and the measured ordering).
  public internal(set) var attemptHits = InlineArray<16, UInt64>(repeating: 0)
  public internal(set) var attemptRuns = InlineArray<16, UInt64>(repeating: 0)
  /// The next attempt of the rotation (attempts after the first), across frames.
  var cursor = 1
  /// Every attempt of the rotation had its turn since it last started from the beginning.
  var roundDone = true
  /// The rotation is in its round's second pass (the dear attempts; the cheap ones go first).
  var dearPass = false
  /// Set when the first attempt alone filled a frame's budget, so no attempt of the rotation
  /// ran: the next frame starts with the rotation instead of the first attempt, so on a slow core
  /// frames alternate between the two and every view (inverted for dark-mode phones, mirrored)
  /// is still reached.
  var rotationFirst = false
  /// Set when the rotation's next attempt did not fit beside a frame's first attempt: the next
  /// frame runs it after its first attempt even past the budget, so the rotation never stalls.
  var rotationOwed = false
  /// Quiet frames (`DecodeSettings.quietAfterMicroseconds`): the picture-change test, when the
  /// picture last changed or a code was last read, and the next attempt of the quiet turn.
  var change = PictureChange()
  var lastBusy = Instant(nanoseconds: 0)
  var quietCursor = 0
  var quietFrames: UInt64 = 0
  /// The next tile of each tiled attempt, across frames.
  var tileCursor = InlineArray<16, UInt8>(repeating: 0)
  /// Where recent codes were read.
  public internal(set) var tracked = TrackedRegion()
  /// The last frame's attempts and time.
  public internal(set) var lastFrame = StrategyFrame()
  /// Payload hashes of the codes the last frame read (up to 16): a code read again is not new.
  var lastCodes = InlineArray<16, UInt64>(repeating: 0)
  var lastCodeCount = 0
  /// The last frame's attempts, in order, with their costs.
  public internal(set) var lastTrace = AttemptTrace()
  /// Which view the scratch plane holds (to reuse it for the next attempt of the same view).
  var scratchView: (area: AttemptArea, scale: ViewScale, variant: ImageVariant, sequence: UInt64)? = nil
  let scratchBytes: Int

  public init(decoder: consuming Decoder, settings: DecodeSettings, maxWidth: Int, maxHeight: Int) {
    precondition(maxWidth > 0 && maxHeight > 0)
    precondition(settings.downscale == 1 || settings.downscale == 2, "downscale is 1 or 2")
    precondition(settings.attempts.count <= 16, "at most 16 attempts")
    self.decoder = decoder
    self.settings = settings
    var count = 0
    for attempt in settings.attempts.prefix(16) {
      strategy[count] = attempt
      count += 1
    }
    strategyCount = count
    scratchBytes = Self.bytes(maxWidth: maxWidth, maxHeight: maxHeight, attempts: settings.attempts)
    scratch = .allocate(byteCount: scratchBytes, alignment: 64)
    scratch.initializeMemory(as: UInt8.self, repeating: 0)
    var v = InlineArray<4, ImageVariant>(repeating: .upright)
    var n = 0
    for variant in settings.variants.prefix(4) { v[n] = variant; n += 1 }
    if n == 0 || settings.variantMode == .upright { v[0] = .upright; n = 1 }
    variants = v
    variantCount = n
  }

  deinit { scratch.deallocate() }

  /// Bytes the pipeline allocates for frames up to `maxWidth` × `maxHeight`: one plane for the
  /// largest view any attempt makes.
  public static func bytes(maxWidth: Int, maxHeight: Int, attempts: [DecodeAttempt] = []) -> Int {
    var largest = maxWidth * maxHeight
    for a in attempts {
      let tile = a.area == .tiles ? AttemptArea.tile(0, of: Region(x: 0, y: 0, width: maxWidth, height: maxHeight)) : nil
      let w = a.scale.side(tile?.width ?? maxWidth), h = a.scale.side(tile?.height ?? maxHeight)
      if Self.viewFits(width: w, height: h) { largest = max(largest, w * h) }
    }
    return largest
  }

  /// Views the strategy skips: too small to hold a code, or upscaled beyond what pays.
  static func viewFits(width w: Int, height h: Int) -> Bool {
    min(w, h) >= 96 && max(w, h) <= 4096
  }

  /// Decodes `frame` into `results` (cleared first). Corners come back in frame coordinates.
  /// `mode` overrides the configured variant mode for this frame (a snapshot wants every view).
  public mutating func decode(_ frame: LumaFrame, into results: inout DecodeResults, mode: VariantMode? = nil) {
    decode(frame, into: &results, clock: StoppedClock(), mode: mode)
  }

  /// Decodes `frame` into `results`, spending the strategy's budget measured on `clock`. `turn`: in
  /// `alternate` without a strategy, the view is `variants[turn % count]` (the service counts frames
  /// across its workers, so consecutive ones meet every view); nil: this pipeline's own count.
  public mutating func decode<C: MonotonicClock>(
    _ frame: LumaFrame, into results: inout DecodeResults, clock: C, mode: VariantMode? = nil, turn: UInt64? = nil
  ) {
    results.removeAll()
    if strategyCount > 0 {
      runStrategy(frame, into: &results, clock: clock, mode: mode ?? settings.variantMode)
      return
    }
    let g = frame.geometry
    let region = settings.region?.clipped(width: g.width, height: g.height) ?? Region(x: 0, y: 0, width: g.width, height: g.height)
    switch mode ?? settings.variantMode {
    case .upright:
      decodeView(frame, region: region, variant: .upright, into: &results)
    case .retry:
      for i in 0..<variantCount {
        decodeView(frame, region: region, variant: variants[i], into: &results)
        if results.count > 0 { break }
      }
    case .alternate:
      let variant = variants[turn.map { Int($0 % UInt64(variantCount)) } ?? frameCounter % variantCount]
      frameCounter &+= 1
      decodeView(frame, region: region, variant: variant, into: &results)
    }
  }

  private mutating func decodeView(
    _ frame: LumaFrame, region: Region, variant: ImageVariant, into results: inout DecodeResults
  ) {
    let scale = settings.downscale
    let start = results.count
    decodeCalls &+= 1
    if variant == .upright && scale == 1 {
      decoder.decode(frame.view(of: region), formats: settings.formats, into: &results)
    } else {
      let w = region.width / scale, h = region.height / scale
      guard w > 0, h > 0, w * h <= scratch.count else { return }
      writeTransformed(frame, region: region, variant: variant, scale: scale, width: w, height: h)
      let view = LumaFrame(
        bytes: UnsafeRawBufferPointer(rebasing: scratch[0..<(w * h)]),
        geometry: .gray(width: w, height: h), captured: frame.captured, sequence: frame.sequence)
      decoder.decode(view, formats: settings.formats, into: &results)
      for i in start..<results.count {
        results.update(i) { symbol in
          symbol.variant = variant
          for k in 0..<4 {
            var x = symbol.corners[2 * k]
            if variant.isMirrored { x = Int32(w - 1) - x }
            symbol.corners[2 * k] = x * Int32(scale)
            symbol.corners[2 * k + 1] = symbol.corners[2 * k + 1] * Int32(scale)
          }
        }
      }
    }
    results.offsetCorners(from: start, dx: Int32(region.x), dy: Int32(region.y))
  }

  /// Writes the region, downscaled, inverted and/or mirrored, into the scratch plane.
  private func writeTransformed(
    _ frame: LumaFrame, region: Region, variant: ImageVariant, scale: Int, width w: Int, height h: Int
  ) {
    let g = frame.geometry
    let src = frame.bytes
    let invert: UInt8 = variant.isInverted ? 0xFF : 0
    let mirror = variant.isMirrored
    for y in 0..<h {
      let dstRow = y * w
      for x in 0..<w {
        let sx = region.x + x * scale, sy = region.y + y * scale
        var value: Int
        if scale == 1 {
          value = Int(src[sy * g.rowStrideBytes + sx * g.pixelStrideBytes])
        } else {
          let a = sy * g.rowStrideBytes + sx * g.pixelStrideBytes
          let b = a + g.rowStrideBytes
          value =
            (Int(src[a]) + Int(src[a + g.pixelStrideBytes]) + Int(src[b])
              + Int(src[b + g.pixelStrideBytes]) + 2) >> 2
        }
        let dx = mirror ? w - 1 - x : x
        scratch[dstRow + dx] = UInt8(truncatingIfNeeded: value) ^ invert
      }
    }
  }
}
