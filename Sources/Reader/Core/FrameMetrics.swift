import ScanBase

/// Exposure figures of a frame, from a sparse sample (cheap enough for every few frames).
public struct ExposureMetrics: Equatable, Sendable {
  /// Mean luma, 0...255.
  public var meanBrightness = 0
  /// Per-mille of sampled pixels at 0–5 or 250–255 (crushed shadows or blown highlights).
  public var clippedPerMille = 0

  public init() {}

  /// Samples every `step`-th pixel of every `step`-th row.
  public init(_ frame: LumaFrame, step: Int = 8) {
    let g = frame.geometry
    var sum = 0, clipped = 0, n = 0
    var y = step / 2
    while y < g.height {
      var x = step / 2
      while x < g.width {
        let v = Int(frame.luma(x: x, y: y))
        sum += v
        if v <= 5 || v >= 250 { clipped += 1 }
        n += 1
        x += step
      }
      y += step
    }
    meanBrightness = n > 0 ? sum / n : 0
    clippedPerMille = n > 0 ? clipped * 1000 / n : 0
  }
}

/// How well a decoded code was seen: its size in pixels per module and how sharp its edges
/// are, so "move the camera closer" or "refocus" is a number. Computed from the frame along the
/// code's two middle lines (bounded work, no allocation).
public struct CodeGeometry: Equatable, Sendable {
  /// Estimated pixels per module, × 10 (ML Kit asks for at least 2 px per module).
  public var modulePixelsTimes10 = 0
  /// Edge sharpness in percent: the steepest step at each light/dark transition relative to the
  /// code's contrast (100: a full step from one pixel to the next; a blurred code is low).
  public var sharpnessPercent = 0
  /// Contrast between the code's light and dark modules, 0...255.
  public var contrast = 0

  public init() {}

  /// Measures the code whose corners (frame coordinates, x0 y0 ... x3 y3) are given.
  public init(_ frame: LumaFrame, corners: InlineArray<8, Int32>) {
    let g = frame.geometry
    var minX = Int.max, minY = Int.max, maxX = Int.min, maxY = Int.min
    for k in 0..<4 {
      minX = min(minX, Int(corners[2 * k])); maxX = max(maxX, Int(corners[2 * k]))
      minY = min(minY, Int(corners[2 * k + 1])); maxY = max(maxY, Int(corners[2 * k + 1]))
    }
    minX = max(0, minX); minY = max(0, minY)
    maxX = min(g.width - 1, maxX); maxY = min(g.height - 1, maxY)
    guard maxX - minX >= 8, maxY - minY >= 8 else { return }
    // Contrast and threshold from the bounding box (sparse).
    var low = 255, high = 0
    var y = minY
    while y <= maxY {
      var x = minX
      while x <= maxX {
        let v = Int(frame.luma(x: x, y: y))
        low = min(low, v)
        high = max(high, v)
        x += 2
      }
      y += 2
    }
    contrast = high - low
    guard contrast >= 16 else { return }
    let threshold = (low + high) / 2
    var runs = RunStatistics()
    var steepest = 0, transitions = 0
    // The middle row and the middle column.
    for pass in 0..<2 {
      let count = pass == 0 ? maxX - minX + 1 : maxY - minY + 1
      var previousDark = false, runLength = 0, first = true
      var previous = 0
      for i in 0..<count {
        let v = pass == 0 ? Int(frame.luma(x: minX + i, y: (minY + maxY) / 2)) : Int(frame.luma(x: (minX + maxX) / 2, y: minY + i))
        let dark = v < threshold
        if first {
          previousDark = dark
          first = false
        } else if dark != previousDark {
          // Skip the run touching the box edge (it may be cut off); count the inner ones.
          if runs.seenEdge { runs.add(runLength) } else { runs.seenEdge = true }
          runLength = 0
          previousDark = dark
          steepest += abs(v - previous)
          transitions += 1
        }
        runLength += 1
        previous = v
      }
      runs.seenEdge = false
    }
    modulePixelsTimes10 = runs.moduleEstimateTimes10
    sharpnessPercent = transitions > 0 ? min(100, steepest * 100 / transitions / contrast) : 0
  }
}

/// Run lengths of alternating light/dark along a line, for the module size estimate.
struct RunStatistics {
  var histogram = InlineArray<64, UInt16>(repeating: 0)
  var count = 0
  var seenEdge = false

  mutating func add(_ length: Int) {
    histogram[min(63, max(1, length))] &+= 1
    count += 1
  }

  /// Module runs are the shortest common runs: the 25th percentile of run lengths, refined by
  /// averaging the runs no longer than 1.5 times it.
  var moduleEstimateTimes10: Int {
    guard count >= 4 else { return 0 }
    var seen = 0
    var quartile = 1
    for length in 1..<64 {
      seen += Int(histogram[length])
      if seen * 4 >= count { quartile = length; break }
    }
    var sum = 0, n = 0
    for length in 1..<64 where length * 2 <= quartile * 3 {
      sum += length * Int(histogram[length])
      n += Int(histogram[length])
    }
    return n > 0 ? sum * 10 / n : quartile * 10
  }
}
