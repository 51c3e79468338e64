/// A clock that never moves: without a real clock the budget is never spent.
public struct StoppedClock: MonotonicClock {
  public init() {}
  public func now() -> Instant { Instant(nanoseconds: 0) }
}

/// The decode strategy: a list of attempts (view and engine options), run in order on one frame
/// or spread across the frames of a stream within a CPU budget per frame.
extension DecodePipeline where Decoder: ~Copyable {
  mutating func runStrategy<C: MonotonicClock>(
    _ frame: LumaFrame, into results: inout DecodeResults, clock: C, mode: VariantMode
  ) {
    let start = clock.now()
    var frameLog = StrategyFrame()
    defer {
      frameLog.microseconds = clock.now().microseconds(since: start)
      lastFrame = frameLog
    }
    scratchView = nil
    tracked.age()
    let g = frame.geometry
    let full =
      settings.region?.clipped(width: g.width, height: g.height)
      ?? Region(x: 0, y: 0, width: g.width, height: g.height)
    switch mode {
    case .retry:
      // Every attempt on this frame (a still image: nothing to track).
      for i in 0..<strategyCount where strategy[i].area != .tracked {
        for _ in 0..<(strategy[i].area == .tiles ? 4 : 1) {
          attempt(i, frame, full: full, into: &results, clock: clock)
          frameLog.attempts += 1
        }
      }
    case .upright:
      if let first = firstFullAttempt() {
        attempt(first, frame, full: full, into: &results, clock: clock)
        frameLog.attempts += 1
      }
    case .alternate:
      spread(frame, full: full, into: &results, clock: clock, start: start, log: &frameLog)
    }
    tracked.cover(results, from: 0, width: g.width, height: g.height)
  }

  func firstFullAttempt() -> Int? {
    for i in 0..<strategyCount where strategy[i].area == .full { return i }
    return nil
  }

  /// The reader's way: the tracked region's attempts while a code was seen lately, then the first
  /// full-frame attempt, then the next ones of the rotation while the budget lasts, until a code
  /// is found. A held code thus meets a different attempt every frame.
  mutating func spread<C: MonotonicClock>(
    _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C, start: Instant,
    log: inout StrategyFrame
  ) {
    let budget = UInt64(settings.budgetMicroseconds)
    func fits(_ i: Int, _ spent: UInt64) -> Bool {
      budget == 0 || log.attempts == 0 || spent + attemptCostMicroseconds[i] <= budget
    }
    if settings.quietAfterMicroseconds > 0 {
      let quietAfter = UInt64(settings.quietAfterMicroseconds)
      // While quiet, frames are compared with the last busy one (a slow change adds up).
      let wasQuiet = start.microseconds(since: lastBusy) >= quietAfter
      if change.changed(frame, region: full, keepingReference: wasQuiet) || tracked.region != nil { lastBusy = start }
      if start.microseconds(since: lastBusy) >= quietAfter {
        quietTurn(frame, full: full, into: &results, clock: clock, log: &log)
        if results.count > 0 { lastBusy = clock.now() }
        return
      }
    }
    if tracked.region != nil {
      for i in 0..<strategyCount where strategy[i].area == .tracked {
        guard fits(i, clock.now().microseconds(since: start)) else {
          log.budgetSpent = true
          return
        }
        attempt(i, frame, full: full, into: &results, clock: clock)
        log.attempts += 1
        if results.count > 0 { return }
      }
    }
    guard let first = firstFullAttempt() else { return }
    let startWithRotation = rotationFirst && log.attempts == 0
    rotationFirst = false
    if !startWithRotation && fits(first, clock.now().microseconds(since: start)) {
      attempt(first, frame, full: full, into: &results, clock: clock)
      log.attempts += 1
    }
    let attemptsBeforeRotation = log.attempts
    // The rotation: at most one round per frame.
    var visited = 0
    while results.count == 0 && visited < strategyCount {
      if cursor >= strategyCount { cursor = 0 }
      let i = cursor
      visited += 1
      if i == first || strategy[i].area == .tracked {
        cursor += 1
        continue
      }
      // One dearer than a frame may ever cost is passed over (its estimate decays, so it is
      // measured again now and then); one that does not fit beside this frame's attempts waits
      // for the next frame (it starts that frame's rotation).
      if tooDear(i, first: first) {
        cursor += 1
        continue
      }
      guard fits(i, clock.now().microseconds(since: start)) else {
        log.budgetSpent = true
        // Nothing of the rotation ran this frame: the next frame starts with it.
        if log.attempts == attemptsBeforeRotation { rotationFirst = true }
        return
      }
      cursor += 1
      attempt(i, frame, full: full, into: &results, clock: clock)
      log.attempts += 1
    }
  }

  /// Whether attempt `i` costs more than any frame may: twice the budget (an attempt that does
  /// not fit beside others gets a frame of its own, and may overrun the budget there by as much
  /// again), or, on a core where the first attempt alone fills the budget, half as much again as
  /// the first attempt, so the inverted and mirrored views still get frames there. Each time it
  /// says so, the attempt's estimate decays by 1/8, and the next run sets it anew: an attempt
  /// measured dear once (a cold cache, a busy moment) is measured again after some turns (one
  /// five times over, after about 12).
  /// On a quiet frame the ceiling is the first attempt's cost and half as much again, whatever
  /// the budget: a still, empty scene gets the cheap views in turn, the upscaled ones wait for a
  /// change.
  mutating func tooDear(_ i: Int, first: Int?, quiet: Bool = false) -> Bool {
    let budget = UInt64(settings.budgetMicroseconds)
    guard budget > 0 || quiet, i != first else { return false }
    let firstCost = first.map { attemptCostMicroseconds[$0] } ?? 0
    let ceiling = quiet ? max(1, firstCost + firstCost / 2) : max(2 * budget, firstCost + firstCost / 2)
    guard attemptCostMicroseconds[i] > ceiling else { return false }
    attemptCostMicroseconds[i] -= attemptCostMicroseconds[i] / 8
    remeasure[i] = true
    return true
  }

  /// A quiet frame (nothing changed, nothing read lately): every other one makes one attempt,
  /// taking turns through the order's attempts that cost no more than the first one and half as
  /// much again (`tooDear(quiet:)`: the 1:1 and downscaled views, in every variant), so a code held
  /// perfectly still meets them all; the others make none (the change test has looked at them).
  mutating func quietTurn<C: MonotonicClock>(
    _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C, log: inout StrategyFrame
  ) {
    log.quiet = true
    // The frame that wakes the reader starts with the first attempt, whatever the rotation did.
    rotationFirst = false
    quietFrames &+= 1
    if quietFrames & 1 == 0 { return }
    let first = firstFullAttempt()
    for _ in 0..<strategyCount {
      if quietCursor >= strategyCount { quietCursor = 0 }
      let i = quietCursor
      quietCursor += 1
      if strategy[i].area == .tracked || tooDear(i, first: first, quiet: true) { continue }
      attempt(i, frame, full: full, into: &results, clock: clock)
      log.attempts += 1
      return
    }
  }

  /// Runs attempt `i`: its view of the frame into the engine, the symbols' corners back into frame
  /// coordinates, repeats of earlier attempts dropped.
  mutating func attempt<C: MonotonicClock>(
    _ i: Int, _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C
  ) {
    let a = strategy[i]
    let region: Region
    if a.area == .tracked {
      guard let r = tracked.region?.clipped(width: full.x + full.width, height: full.y + full.height) else { return }
      region = r
    } else if a.area == .tiles {
      let k = Int(tileCursor[i] & 3)
      tileCursor[i] = UInt8((k + 1) & 3)
      region = AttemptArea.tile(k, of: full)
    } else {
      region = full
    }
    // The tracked region stays upscaled even around a large code: on the BoofCV photos at
    // 640×480 that reads 16 more codes in 30 frames than reading a large region at 1:1, for
    // about 3× the CPU (bench/decoder.sh).
    let scale = a.scale
    let w = scale.side(region.width), h = scale.side(region.height)
    guard Self.viewFits(width: w, height: h) || (scale == .full && w > 0 && h > 0), w * h <= scratchBytes else { return }
    let began = clock.now()
    let start = results.count
    results.beginAttempt()
    decodeCalls &+= 1
    attemptRuns[i] &+= 1
    let options = EngineOptions(binarizer: a.binarizer, engineDownscale: true)
    let g = frame.geometry
    if a.variant == .upright && scale == .full {
      let offset = region.y * g.rowStrideBytes + region.x * g.pixelStrideBytes
      let view = LumaFrame(
        bytes: UnsafeRawBufferPointer(rebasing: frame.bytes[offset...]),
        geometry: FrameGeometry(
          width: region.width, height: region.height,
          rowStrideBytes: g.rowStrideBytes, pixelStrideBytes: g.pixelStrideBytes),
        captured: frame.captured, sequence: frame.sequence)
      decoder.decode(view, formats: settings.formats, options: options, into: &results)
    } else {
      let key = (area: a.area, scale: scale, variant: a.variant, sequence: frame.sequence)
      if a.area != .full { scratchView = nil }  // a region's view is never reused
      if let held = scratchView, held.area == key.area, held.scale == key.scale, held.variant == key.variant,
        held.sequence == key.sequence
      {
        // The plane already holds this view (the previous attempt differed in its binarizer).
      } else {
        writeScaled(frame, region: region, scale: scale, variant: a.variant, width: w, height: h)
        scratchView = key
      }
      let view = LumaFrame(
        bytes: UnsafeRawBufferPointer(rebasing: scratch[0..<(w * h)]),
        geometry: .gray(width: w, height: h), captured: frame.captured, sequence: frame.sequence)
      decoder.decode(view, formats: settings.formats, options: options, into: &results)
      mapCorners(&results, from: start, scale: scale, variant: a.variant, width: w)
    }
    results.offsetCorners(from: start, dx: Int32(region.x), dy: Int32(region.y))
    results.dropRepeats(from: start)
    attemptHits[i] &+= UInt64(results.count - start)
    let cost = clock.now().microseconds(since: began)
    // A running average; an attempt measured again after being passed over takes the new cost.
    let old = attemptCostMicroseconds[i]
    attemptCostMicroseconds[i] = old == 0 || remeasure[i] ? cost : (old * 7 + cost) / 8
    remeasure[i] = false
  }

  /// View pixel coordinates back to the region's: mirror undone, scale undone (pixel centres).
  func mapCorners(_ results: inout DecodeResults, from start: Int, scale: ViewScale, variant: ImageVariant, width w: Int) {
    for i in start..<results.count {
      results.update(i) { symbol in
        symbol.variant = variant
        for k in 0..<4 {
          var x = symbol.corners[2 * k]
          var y = symbol.corners[2 * k + 1]
          if variant.isMirrored { x = Int32(w - 1) - x }
          if scale.up > 1 {
            x /= Int32(scale.up)
            y /= Int32(scale.up)
          } else if scale.down > 1 {
            x = x * Int32(scale.down) + Int32(scale.down - 1) / 2
            y = y * Int32(scale.down) + Int32(scale.down - 1) / 2
          }
          symbol.corners[2 * k] = x
          symbol.corners[2 * k + 1] = y
        }
      }
    }
  }

  /// Writes the region scaled (box average down, linear interpolation up by 2), inverted and/or
  /// mirrored, into the scratch plane.
  func writeScaled(_ frame: LumaFrame, region: Region, scale: ViewScale, variant: ImageVariant, width w: Int, height h: Int) {
    let g = frame.geometry
    let src = frame.bytes
    let row = g.rowStrideBytes, px = g.pixelStrideBytes
    let invert: UInt8 = variant.isInverted ? 0xFF : 0
    let mirror = variant.isMirrored
    let out = scratch.bindMemory(to: UInt8.self)
    if scale.up == 2 {
      let maxX = region.width - 1, maxY = region.height - 1
      for y in 0..<h {
        let sy0 = min(y >> 1, maxY), sy1 = min((y + 1) >> 1, maxY)
        let r0 = (region.y + sy0) * row + region.x * px, r1 = (region.y + sy1) * row + region.x * px
        for x in 0..<w {
          let sx0 = min(x >> 1, maxX), sx1 = min((x + 1) >> 1, maxX)
          let v = Int(src[r0 + sx0 * px]) + Int(src[r0 + sx1 * px]) + Int(src[r1 + sx0 * px]) + Int(src[r1 + sx1 * px])
          out[y * w + (mirror ? w - 1 - x : x)] = UInt8(truncatingIfNeeded: (v + 2) >> 2) ^ invert
        }
      }
      return
    }
    let d = scale.down
    guard let base = src.baseAddress, let dst = out.baseAddress else { return }
    if d == 1 || d == 2 {
      // The common views, without the general box loop (it cost as much as a decode at 640×480).
      for y in 0..<h {
        let r0 = base + (region.y + y * d) * row + region.x * px
        let r1 = r0 + (d == 2 ? row : 0)
        let o = dst + y * w
        if d == 1 {
          if mirror {
            for x in 0..<w { o[w - 1 - x] = r0.load(fromByteOffset: x * px, as: UInt8.self) ^ invert }
          } else if px == 1 {
            for x in 0..<w { o[x] = r0.load(fromByteOffset: x, as: UInt8.self) ^ invert }
          } else {
            for x in 0..<w { o[x] = r0.load(fromByteOffset: x * px, as: UInt8.self) ^ invert }
          }
        } else {
          for x in 0..<w {
            let a = 2 * x * px
            let v =
              Int(r0.load(fromByteOffset: a, as: UInt8.self)) + Int(r0.load(fromByteOffset: a + px, as: UInt8.self))
              + Int(r1.load(fromByteOffset: a, as: UInt8.self)) + Int(r1.load(fromByteOffset: a + px, as: UInt8.self))
            o[mirror ? w - 1 - x : x] = UInt8(truncatingIfNeeded: (v + 2) >> 2) ^ invert
          }
        }
      }
      return
    }
    let area = d * d
    for y in 0..<h {
      let base = (region.y + y * d) * row + region.x * px
      for x in 0..<w {
        var sum = 0
        var a = base + x * d * px
        for _ in 0..<d {
          var b = a
          for _ in 0..<d {
            sum += Int(src[b])
            b += px
          }
          a += row
        }
        out[y * w + (mirror ? w - 1 - x : x)] = UInt8(truncatingIfNeeded: (sum + area / 2) / area) ^ invert
      }
    }
  }
}
