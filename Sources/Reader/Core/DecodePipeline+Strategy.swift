import ScanBase

/// A clock that never moves: without a real clock the budget is never spent.
public struct StoppedClock: MonotonicClock {
  public init() {}
  public func now() -> Instant { Instant(nanoseconds: 0) }
}

/// The decode strategy: a list of attempts (view and engine options), run in order on one frame
/// or spread across the frames of a stream within a CPU budget per frame, measured on the `clock`
/// given (the worker's: its CPU time); what ages goes by the frames' capture times.
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
    lastTrace = AttemptTrace()
    let g = frame.geometry
    let full =
      settings.region?.clipped(width: g.width, height: g.height)
      ?? Region(x: 0, y: 0, width: g.width, height: g.height)
    switch mode {
    case .retry:
      // Every attempt on this frame (a still image, or a snapshot of a stream's frame: nothing
      // to track, and the stream's tracked region is left as it is).
      for i in 0..<strategyCount where strategy[i].area != .tracked {
        for _ in 0..<(strategy[i].area == .tiles ? 4 : 1) where attempt(i, frame, full: full, into: &results, clock: clock) {
          frameLog.attempts += 1
        }
      }
    case .upright:
      if let first = firstFullAttempt(), attempt(first, frame, full: full, into: &results, clock: clock) {
        frameLog.attempts += 1
      }
    case .alternate:
      tracked.age(now: frame.captured)
      spread(frame, full: full, into: &results, clock: clock, start: start, log: &frameLog)
      tracked.cover(results, from: 0, width: g.width, height: g.height, now: frame.captured)
      rememberCodes(results)
    }
  }

  func firstFullAttempt() -> Int? {
    for i in 0..<strategyCount where strategy[i].area == .full { return i }
    return nil
  }

  /// The reader's way (docs/decoder.md, "The decode strategy"). The first full-frame attempt runs
  /// first on every frame, and a new code read ends the frame; then, while a code read in the last
  /// frame is held, its tracked region; on a picture that changed, the first attempt's inverted
  /// twin; then the rotation while the budget lasts, until a code is found. An attempt starts
  /// only while its estimated cost fits what is left of the budget (the first always runs); one
  /// of the rotation that did not fit is owed to the next frame, after its first attempt. On a
  /// core where the first attempt alone fills the budget, the next frame starts with the rotation.
  mutating func spread<C: MonotonicClock>(
    _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C, start: Instant,
    log: inout StrategyFrame
  ) {
    var pictureChanged = false
    if settings.quietAfterMicroseconds > 0 {
      let quietAfter = UInt64(settings.quietAfterMicroseconds)
      // While quiet, frames are compared with the last busy one (a slow change adds up).
      let wasQuiet = frame.captured.microseconds(since: lastBusy) >= quietAfter
      pictureChanged = change.changed(frame, region: full, keepingReference: wasQuiet)
      if pictureChanged || tracked.region != nil { lastBusy = frame.captured }
      if frame.captured.microseconds(since: lastBusy) >= quietAfter {
        quietTurn(frame, full: full, into: &results, clock: clock, log: &log)
        if results.count > 0 { lastBusy = frame.captured }
        return
      }
    }
    guard let first = firstFullAttempt() else { return }
    let slowTurn = rotationFirst
    rotationFirst = false
    var trackedRan = false
    if !slowTurn {
      if attempt(first, frame, full: full, into: &results, clock: clock) { log.attempts += 1 }
      // A new code read: the frame is done, so its decision comes at the first attempt's cost.
      // Codes the last frame read already are decided: the frame goes on to their region, where
      // a code the first attempt misses (a small one beside them) may be.
      if results.count > 0 && !readLastFrame(results) { return }
      if tracked.held { trackedRan = runTracked(frame, full: full, into: &results, clock: clock, start: start, log: &log) }
      if results.count > 0 { return }
      // Something new in view the first attempt did not read: a phone in dark mode, most likely.
      for twin in 0..<strategyCount where pictureChanged && strategy[twin] == strategy[first].invertedTwin {
        if attempt(twin, frame, full: full, into: &results, clock: clock) { log.attempts += 1 }
        if results.count > 0 { return }
      }
    }
    if pictureChanged && roundDone { restartRotation() }
    rotate(first: first, frame, full: full, into: &results, clock: clock, start: start, log: &log, slowTurn: slowTurn, trackedRan: trackedRan)
  }

  /// Whether attempt `i` fits in what is left of this frame's budget (the frame's first attempt
  /// always does).
  @inline(__always)
  private func fits<C: MonotonicClock>(_ i: Int, full: Region, clock: C, start: Instant, attempts: Int) -> Bool {
    let budget = UInt64(settings.budgetMicroseconds)
    return budget == 0 || attempts == 0 || clock.now().microseconds(since: start) + estimate(i, full: full) <= budget
  }

  /// The tracked region's attempts (a code read in the last frame is held), while they fit;
  /// true when one was started.
  private mutating func runTracked<C: MonotonicClock>(
    _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C, start: Instant,
    log: inout StrategyFrame
  ) -> Bool {
    var ran = false
    for i in 0..<strategyCount where strategy[i].area == .tracked {
      guard fits(i, full: full, clock: clock, start: start, attempts: log.attempts) else { break }
      if attempt(i, frame, full: full, into: &results, clock: clock) { log.attempts += 1 }
      ran = true
    }
    return ran
  }

  /// Something came into view (or left): the rotation starts again from the order's best
  /// attempts, so what a new code meets in its first frames does not depend on where the
  /// rotation stood (nor on the frame rate). Only once every attempt had its turn since the
  /// last start, so a picture that changes every frame still gets the whole order.
  private mutating func restartRotation() {
    cursor = 0
    dearPass = false
    roundDone = false
    rotationOwed = false
    for k in 0..<strategyCount { tileCursor[k] = 0 }
  }

  /// The rotation: at most one round per frame. A round takes the order's cheap attempts
  /// first (those costing no more than the first attempt and half as much again: the 1:1 and
  /// downscaled views, in every view and binarizer), then the dear ones (upscaled), each pass
  /// in the order's order: a code one of the cheap views reads is not kept waiting behind an
  /// upscaled attempt that costs a frame's budget.
  private mutating func rotate<C: MonotonicClock>(
    first: Int, _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C, start: Instant,
    log: inout StrategyFrame, slowTurn: Bool, trackedRan: Bool
  ) {
    let budget = UInt64(settings.budgetMicroseconds)
    let beforeRotation = clock.now().microseconds(since: start)
    let attemptsBeforeRotation = log.attempts
    var owed = rotationOwed
    rotationOwed = false
    let cheapCeiling = max(1, attemptCostMicroseconds[first] + attemptCostMicroseconds[first] / 2)
    var visited = 0
    while results.count == 0 && visited < 2 * strategyCount {
      if cursor >= strategyCount {
        cursor = 0
        if dearPass { roundDone = true }
        dearPass.toggle()
      }
      let i = cursor
      visited += 1
      if i == first || (strategy[i].area == .tracked && (tracked.region == nil || trackedRan))
        || (estimate(i, full: full) > cheapCeiling) != dearPass
      {
        cursor += 1
        continue
      }
      // One dearer than a frame may ever cost is passed over (its estimate decays, so it is
      // measured again now and then).
      if tooDear(i, first: first, full: full) {
        cursor += 1
        continue
      }
      if !fits(i, full: full, clock: clock, start: start, attempts: log.attempts) {
        // Owed since the last frame, and this frame is still within its budget: it runs now.
        let runsAnyway = owed && budget > 0 && clock.now().microseconds(since: start) <= budget
        if !runsAnyway {
          log.budgetSpent = true
          lastTrace.waiting = i
          lastTrace.waitingEstimate = estimate(i, full: full)
          // When the first attempt alone filled the budget (a slow core) and nothing of the
          // rotation ran, the next frame starts with the rotation; otherwise this attempt is
          // owed to the next frame, after its first attempt.
          if !slowTurn && beforeRotation > budget && log.attempts == attemptsBeforeRotation {
            rotationFirst = true
          } else {
            rotationOwed = true
          }
          return
        }
      }
      owed = false
      cursor += 1
      if attempt(i, frame, full: full, into: &results, clock: clock) { log.attempts += 1 }
    }
  }

  /// A code's payload as a 64-bit FNV-1a hash (to tell a code read again from a new one).
  static func payloadHash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
    return h
  }

  /// Whether every code in `results` was read in the last frame too (none is new).
  func readLastFrame(_ results: borrowing DecodeResults) -> Bool {
    for i in 0..<results.count {
      let h = Self.payloadHash(results.payload(i))
      var seen = false
      for k in 0..<lastCodeCount where lastCodes[k] == h { seen = true }
      if !seen { return false }
    }
    return true
  }

  /// Keeps the payload hashes of what this frame read (up to 16), for the next frame.
  mutating func rememberCodes(_ results: borrowing DecodeResults) {
    lastCodeCount = min(results.count, 16)
    for i in 0..<lastCodeCount { lastCodes[i] = Self.payloadHash(results.payload(i)) }
  }

  /// The pixels attempt `i` hands the engine on this frame (0: it would not run).
  func viewPixels(_ i: Int, full: Region) -> Int {
    let a = strategy[i]
    let region: Region
    switch a.area {
    case .full: region = full
    case .tiles: region = AttemptArea.tile(0, of: full)
    case .tracked:
      guard let r = tracked.region?.clipped(width: full.x + full.width, height: full.y + full.height) else { return 0 }
      region = r
    }
    return a.scale.side(region.width) * a.scale.side(region.height)
  }

  /// What attempt `i` should cost on this frame: its measured cost, scaled by the pixels of its
  /// view now against when it was measured (a tracked region grows and shrinks with the code).
  func estimate(_ i: Int, full: Region) -> UInt64 {
    let cost = attemptCostMicroseconds[i], measured = attemptCostPixels[i]
    guard measured > 0 else { return cost }
    let now = UInt64(viewPixels(i, full: full))
    return now == UInt64(measured) ? cost : cost * now / UInt64(measured)
  }

  /// Whether attempt `i` costs more than any frame may: twice the budget (an attempt that does
  /// not fit beside others is owed to the next frame, and may overrun the budget there by as much
  /// again), or, on a core where the first attempt alone fills the budget, half as much again as
  /// the first attempt, so the inverted and mirrored views still get frames there. Each time it
  /// says so, the attempt's estimate decays by 1/8, and the next run sets it anew: an attempt
  /// measured dear once (a cold cache, a busy moment) is measured again after some turns (one
  /// five times over, after about 12).
  /// On a quiet frame the ceiling is the first attempt's cost and half as much again, whatever
  /// the budget: a still, empty scene gets the cheap views in turn, the upscaled ones wait for a
  /// change.
  mutating func tooDear(_ i: Int, first: Int?, full: Region, quiet: Bool = false) -> Bool {
    let budget = UInt64(settings.budgetMicroseconds)
    guard budget > 0 || quiet, i != first else { return false }
    let firstCost = first.map { attemptCostMicroseconds[$0] } ?? 0
    let ceiling = quiet ? max(1, firstCost + firstCost / 2) : max(2 * budget, firstCost + firstCost / 2)
    guard estimate(i, full: full) > ceiling else { return false }
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
      if strategy[i].area == .tracked || tooDear(i, first: first, full: full, quiet: true) { continue }
      guard attempt(i, frame, full: full, into: &results, clock: clock) else { continue }
      log.attempts += 1
      return
    }
  }

  /// Runs attempt `i`: its view of the frame into the engine, the symbols' corners back into frame
  /// coordinates, repeats of earlier attempts dropped. False when the view has nothing to show
  /// the engine (no tracked region, a view too small or too large): nothing ran.
  @discardableResult
  mutating func attempt<C: MonotonicClock>(
    _ i: Int, _ frame: LumaFrame, full: Region, into results: inout DecodeResults, clock: C
  ) -> Bool {
    var a = strategy[i]
    guard let region = attemptRegion(i, &a, full: full) else { return false }
    // The tracked region stays upscaled even around a large code: on the BoofCV photos at
    // 640×480 that reads 16 more codes in 30 frames than reading a large region at 1:1, for
    // about 3× the CPU (bench/decoder.sh).
    let scale = a.scale
    let w = scale.side(region.width), h = scale.side(region.height)
    guard Self.viewFits(width: w, height: h) || (scale == .full && w > 0 && h > 0), w * h <= scratchBytes else { return false }
    let began = clock.now()
    let start = results.count
    results.beginAttempt()
    decodeCalls &+= 1
    attemptRuns[i] &+= 1
    let options = EngineOptions(binarizer: a.binarizer, engineDownscale: true)
    if a.variant == .upright && scale == .full {
      decoder.decode(frame.view(of: region), formats: settings.formats, options: options, into: &results)
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
    recordCost(i, microseconds: cost, pixels: UInt32(clamping: w * h))
    lastTrace.append(i, microseconds: cost, found: results.count - start)
    return true
  }

  /// The region attempt `i` (`a`) looks at on this frame: the whole frame, its next tile (the
  /// tile cursor moves on), or the tracked region, in the view its code was read in (a dark-mode
  /// phone stays inverted). Nil when there is no tracked region.
  @inline(__always)
  private mutating func attemptRegion(_ i: Int, _ a: inout DecodeAttempt, full: Region) -> Region? {
    if a.area == .tracked {
      guard let r = tracked.region?.clipped(width: full.x + full.width, height: full.y + full.height) else { return nil }
      if a.variant == .upright { a.variant = tracked.variant }
      return r
    } else if a.area == .tiles {
      let k = Int(tileCursor[i] & 3)
      tileCursor[i] = UInt8((k + 1) & 3)
      return AttemptArea.tile(k, of: full)
    }
    return full
  }

  /// Folds a run of attempt `i` (`cost` µs on a view of `pixels`) into its estimate: a running
  /// average; an attempt measured again after being passed over takes the new cost.
  @inline(__always)
  private mutating func recordCost(_ i: Int, microseconds cost: UInt64, pixels: UInt32) {
    let old = attemptCostMicroseconds[i]
    // Costs are kept for the view's size now: a region measured small and now large is
    // estimated at its new size (per pixel), and the average carries on at that size.
    let previous = attemptCostPixels[i] > 0 && attemptCostPixels[i] != pixels ? old * UInt64(pixels) / UInt64(attemptCostPixels[i]) : old
    // Down fast, up slowly: a run the scheduler cut into (the core shared with other work) lifts
    // the estimate by an eighth of the spike, where a lasting rise takes a few runs.
    attemptCostMicroseconds[i] =
      previous == 0 || remeasure[i] ? cost : cost < previous ? (previous + 3 * cost) / 4 : (previous * 7 + cost) / 8
    attemptCostPixels[i] = pixels
    remeasure[i] = false
  }
}
