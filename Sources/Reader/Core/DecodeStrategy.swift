import ScanBase

/// How the engine turns gray into black and white (the engine's own alternatives; the raw
/// values are the shim's `SG_BINARIZER_*`).
public enum Binarizer: UInt8, Sendable, CaseIterable {
  /// Threshold from the average of the neighbourhood (zxing-cpp's hybrid binarizer).
  case localAverage = 0
  /// Threshold at the valley of the histogram, one for the whole image.
  case globalHistogram = 1
  /// Threshold 127.
  case fixedThreshold = 2

  public var name: String {
    switch self {
    case .localAverage: "local"
    case .globalHistogram: "histogram"
    case .fixedThreshold: "fixed"
    }
  }
}

/// Engine options of one decode call.
public struct EngineOptions: Equatable, Sendable {
  public var binarizer = Binarizer.localAverage
  /// Let the engine add its own downscaled layers (large views).
  public var engineDownscale = true
  public init(binarizer: Binarizer = .localAverage, engineDownscale: Bool = true) {
    self.binarizer = binarizer
    self.engineDownscale = engineDownscale
  }
}

/// The scale a view is brought to before the engine sees it: `up` / `down`.
public struct ViewScale: Equatable, Sendable {
  public var up: Int
  public var down: Int
  public static let full = ViewScale(up: 1, down: 1)
  public static let double = ViewScale(up: 2, down: 1)
  public static func divided(by d: Int) -> ViewScale { ViewScale(up: 1, down: d) }
  public init(up: Int, down: Int) {
    precondition(up == 1 || (up == 2 && down == 1), "upscaling is by 2 only")
    precondition(down >= 1 && down <= 8, "downscaling is by 1 to 8")
    self.up = up
    self.down = down
  }
  public var name: String { up > 1 ? "x\(up)" : down == 1 ? "x1" : "/\(down)" }
  /// The view's side for a source side of `n` pixels.
  func side(_ n: Int) -> Int { n * up / down }
}

/// Which part of the frame an attempt looks at.
public enum AttemptArea: UInt8, Sendable {
  /// The whole frame (or the configured region of interest).
  case full = 0
  /// Where a code was read in a recent frame, grown by half its size on every side.
  case tracked = 1
  /// The frame in four overlapping tiles (each 5/8 of the width and height), for upscaling
  /// small codes at the cost of a quarter frame: the next tile each time the attempt runs in a
  /// stream (the first again when the rotation starts over), all four on a still image.
  case tiles = 2

  /// Tile `index` (0...3) of a region.
  static func tile(_ index: Int, of r: Region) -> Region {
    let w = r.width * 5 / 8, h = r.height * 5 / 8
    let x = index & 1 == 0 ? r.x : r.x + r.width - w
    let y = index & 2 == 0 ? r.y : r.y + r.height - h
    return Region(x: x, y: y, width: w, height: h)
  }
}

/// One way of looking at a frame: a view (area, scale, variant) and the engine's binarizer.
public struct DecodeAttempt: Equatable, Sendable {
  public var area: AttemptArea
  public var scale: ViewScale
  public var variant: ImageVariant
  public var binarizer: Binarizer
  public init(
    _ area: AttemptArea = .full, scale: ViewScale = .full, variant: ImageVariant = .upright,
    binarizer: Binarizer = .localAverage
  ) {
    self.area = area
    self.scale = scale
    self.variant = variant
    self.binarizer = binarizer
  }

  public var name: String {
    (area == .tracked ? "tracked " : area == .tiles ? "tiles " : "") + "\(scale.name) \(variant.name) \(binarizer.name)"
  }

  /// Parses "x2", "/3", "x1" (scale), a variant name, a binarizer name and "tracked", in any
  /// order separated by spaces; nil on anything else.
  public init?(parsing text: String) {
    self.init()
    for word in text.split(separator: " ") {
      let w = String(word)
      if w == "tracked" {
        area = .tracked
      } else if w == "tiles" {
        area = .tiles
      } else if w == "x1" {
        scale = .full
      } else if w == "x2" {
        scale = .double
      } else if w.hasPrefix("/"), let d = Int(w.dropFirst()), d >= 1, d <= 8 {
        scale = .divided(by: d)
      } else if let v = ImageVariant.allCases.first(where: { $0.name == w }) {
        variant = v
      } else if let b = Binarizer.allCases.first(where: { $0.name == w }) {
        binarizer = b
      } else {
        return nil
      }
    }
  }

  /// The strategy a reader starts with: ordered by codes found per millisecond on the BoofCV
  /// development half fitted to 640×480 and at original size (docs/decoder.md, "Strategy").
  public static let readerDefault: [DecodeAttempt] = [
    DecodeAttempt(.full, scale: .full),
    DecodeAttempt(.tracked, scale: .double),
    DecodeAttempt(.full, scale: .full, binarizer: .fixedThreshold),
    DecodeAttempt(.tiles, scale: .double),
    DecodeAttempt(.full, scale: .full, variant: .inverted),
    DecodeAttempt(.full, scale: .divided(by: 2)),
    DecodeAttempt(.full, scale: .full, variant: .mirrored),
    DecodeAttempt(.full, scale: .divided(by: 4)),
    DecodeAttempt(.full, scale: .divided(by: 3)),
    DecodeAttempt(.full, scale: .full, binarizer: .globalHistogram),
    // Phone screens on zxing-cpp 1.4 (which reads neither light-on-dark nor most mirrored codes
    // itself): the other binarizer and the upscaled view in those views too (the 162 QR photos
    // inverted: 138 → 148 of 162 at 640×480; mirrored at original size 148 → 149).
    DecodeAttempt(.full, scale: .full, variant: .inverted, binarizer: .globalHistogram),
    DecodeAttempt(.full, scale: .divided(by: 2), binarizer: .globalHistogram),
    DecodeAttempt(.full, scale: .full, variant: .mirrored, binarizer: .globalHistogram),
    // The whole frame upscaled: most codes of all at camera size, but several times a 1:1
    // decode, so it gets a frame of its own when the rotation comes to it (or is passed over
    // when it cannot fit even there); `scangate decode` (every attempt) always gets it.
    DecodeAttempt(.full, scale: .double),
    DecodeAttempt(.full, scale: .double, variant: .inverted),
  ]

  /// The order for a large camera mode (1280×720, 1920×1080: `camera.width` × `camera.height` at
  /// least 1280×720, chosen by the config): the whole frame brought down to about 640 pixels wide
  /// as the first attempt (what a 640×480 reader sees, at its cost); the tracked region (right
  /// after it while a code is held) at full resolution; in the rotation one full-resolution tile
  /// per round (5/8 of the frame: a small or distant code gets the sensor's pixels), the other
  /// binarizers and views on the downscaled frame, a coarser view for a code held close, and the
  /// whole frame at full resolution last (it fits a budget only on a fast core).
  public static func readerLarge(width: Int) -> [DecodeAttempt] {
    let d = min(8, max(2, (width + 320) / 640))
    return [
      DecodeAttempt(.full, scale: .divided(by: d)),
      DecodeAttempt(.tracked, scale: .full),
      DecodeAttempt(.tiles, scale: .full),
      DecodeAttempt(.full, scale: .divided(by: d), binarizer: .fixedThreshold),
      DecodeAttempt(.full, scale: .divided(by: d), variant: .inverted),
      DecodeAttempt(.tiles, scale: .full, binarizer: .fixedThreshold),
      DecodeAttempt(.full, scale: .divided(by: d), variant: .mirrored),
      DecodeAttempt(.full, scale: .divided(by: min(8, d * 2))),
      DecodeAttempt(.full, scale: .divided(by: d), binarizer: .globalHistogram),
      DecodeAttempt(.full, scale: .full),
    ]
  }
}

extension DecodeAttempt {
  /// The same attempt on the inverted view (light on dark: a phone in dark mode).
  var invertedTwin: DecodeAttempt {
    var a = self
    a.variant = .inverted
    return a
  }
}

/// Where recent codes were read, in frame pixels, and in which view: the tracked attempt looks
/// there. Kept for `keptMilliseconds` after the last code read there (a time, so the reader
/// behaves alike at 5 and at 60 frames a second), and for at most `framesKept` frames (a bound
/// for a clock that does not move).
public struct TrackedRegion: Sendable {
  public var region: Region? = nil
  /// When the region is forgotten.
  public var until = Instant(nanoseconds: 0)
  /// Frames left before the region is forgotten, whatever the clock says (`framesKept`: a
  /// second at 60 fps).
  public var framesLeft = 0
  public static let keptMilliseconds = 1_000
  public static let framesKept = 60
  /// A code was read in the previous frame: the region is held, and the tracked attempt runs
  /// right after the first attempt (otherwise it waits for its turn in the rotation).
  public private(set) var held = false
  var readThisFrame = false
  /// The view the last codes were read in (a dark-mode phone stays inverted).
  public var variant = ImageVariant.upright
  public init() {}

  /// Grows to cover symbols `start..<results.count` (frame coordinates), each grown by half its
  /// size on every side, and keeps the region until `keptMilliseconds` after `now`.
  public mutating func cover(_ results: borrowing DecodeResults, from start: Int, width: Int, height: Int, now: Instant) {
    guard start < results.count else { return }
    var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min
    for i in start..<results.count {
      let (a, b, p, q) = cornerBounds(results[i].corners)
      let gx = max(8, (p - a) / 2), gy = max(8, (q - b) / 2)
      x0 = min(x0, a - gx); y0 = min(y0, b - gy); x1 = max(x1, p + gx); y1 = max(y1, q + gy)
    }
    if let r = region, framesLeft > 0 {
      x0 = min(x0, r.x); y0 = min(y0, r.y); x1 = max(x1, r.x + r.width); y1 = max(y1, r.y + r.height)
    }
    region = Region(x: x0, y: y0, width: x1 - x0, height: y1 - y0).clipped(width: width, height: height)
    framesLeft = region == nil ? 0 : Self.framesKept
    until = now.adding(milliseconds: Self.keptMilliseconds)
    variant = results[results.count - 1].variant
    readThisFrame = region != nil
  }

  /// One frame passed (at `now`): the region ages, and is held when a code was read in the
  /// frame before.
  public mutating func age(now: Instant) {
    held = readThisFrame
    readThisFrame = false
    if framesLeft > 0 { framesLeft -= 1 }
    if framesLeft == 0 || now >= until { forget() }
  }

  /// Nothing is tracked any more.
  public mutating func forget() {
    region = nil
    framesLeft = 0
    held = false
    readThisFrame = false
  }
}

/// What the strategy did in one frame, for STATUS/STATS and the benchmarks.
public struct StrategyFrame: Equatable, Sendable {
  public var attempts = 0
  public var microseconds: UInt64 = 0
  /// The budget ran out before the strategy's turn for this frame was over.
  public var budgetSpent = false
  /// A quiet frame: the picture had not changed and no code was read lately (one attempt ran,
  /// or, every other such frame, none).
  public var quiet = false
  public init() {}
}

/// The attempts one frame ran, in order, with what each cost: for tests and the benchmarks
/// (fixed storage; a frame's attempts past `capacity` are counted, not kept).
public struct AttemptTrace: Sendable {
  public static let capacity = 24
  /// Attempts run (may exceed `capacity`).
  public private(set) var count = 0
  var indices = InlineArray<24, UInt8>(repeating: 0)
  var costs = InlineArray<24, UInt32>(repeating: 0)
  var found = InlineArray<24, UInt8>(repeating: 0)
  /// The attempt of the rotation that did not fit what was left of the budget (-1: none).
  public internal(set) var waiting = -1
  /// Its estimated cost then.
  public internal(set) var waitingEstimate: UInt64 = 0
  public init() {}

  mutating func append(_ attempt: Int, microseconds: UInt64, found codes: Int) {
    if count < Self.capacity {
      indices[count] = UInt8(truncatingIfNeeded: attempt)
      costs[count] = UInt32(clamping: microseconds)
      found[count] = UInt8(clamping: codes)
    }
    count += 1
  }

  /// Entry `i` (below `min(count, capacity)`): the attempt's index in the order, its cost and
  /// the new codes it found.
  public subscript(i: Int) -> (attempt: Int, microseconds: UInt32, found: Int) {
    (Int(indices[i]), costs[i], Int(found[i]))
  }
}

/// Whether the picture changed since the last frame it was shown: 64 × 48 samples (each the
/// average of 2 × 2 pixels) of the region, compared with the last frame's. A sample changed when
/// it moved by more than `threshold` levels; the picture, when more than `minimumChanged` of the
/// 3,072 samples did (0.4 %: a code held up, with the hand and phone around it, moves far more;
/// sensor noise of a still scene, far fewer). A few thousand reads a frame, fixed storage.
public struct PictureChange: Sendable {
  static let columns = 64, rows = 48
  public static let threshold = 24
  public static let minimumChanged = 12
  var samples = InlineArray<3072, UInt8>(repeating: 0)
  var primed = false
  var geometry = (width: 0, height: 0)
  public init() {}

  /// Samples `region` of `frame` and says whether they moved from the reference (the first
  /// frame, and a change of size, count as a change). The samples become the reference, unless
  /// `keepingReference` (a quiet reader compares every frame with its last busy one, so a change
  /// made slowly, a few levels a frame, still adds up to one) and nothing changed.
  public mutating func changed(_ frame: LumaFrame, region: Region, keepingReference: Bool = false) -> Bool {
    let g = frame.geometry
    let row = g.rowStrideBytes, px = g.pixelStrideBytes
    guard region.width >= 2, region.height >= 2, let base = frame.bytes.baseAddress else { return true }
    let fresh = !primed || geometry != (region.width, region.height)
    primed = true
    geometry = (region.width, region.height)
    var moved = 0
    var now = InlineArray<3072, UInt8>(repeating: 0)
    for r in 0..<Self.rows {
      let y = region.y + min(region.height - 2, (2 * r + 1) * region.height / (2 * Self.rows))
      for c in 0..<Self.columns {
        let x = region.x + min(region.width - 2, (2 * c + 1) * region.width / (2 * Self.columns))
        let p = y * row + x * px
        let sum =
          Int(base.load(fromByteOffset: p, as: UInt8.self)) + Int(base.load(fromByteOffset: p + px, as: UInt8.self))
          + Int(base.load(fromByteOffset: p + row, as: UInt8.self)) + Int(base.load(fromByteOffset: p + row + px, as: UInt8.self))
        let v = UInt8(truncatingIfNeeded: (sum + 2) >> 2)
        let k = r * Self.columns + c
        if abs(Int(v) - Int(samples[k])) > Self.threshold { moved += 1 }
        now[k] = v
      }
    }
    let changed = fresh || moved > Self.minimumChanged
    if changed || !keepingReference { samples = now }
    return changed
  }
}

/// The bounding box of a code's four corners (x, y pairs): min x, min y, max x, max y.
@inline(__always) public func cornerBounds(_ c: InlineArray<8, Int32>) -> (minX: Int, minY: Int, maxX: Int, maxY: Int) {
  var a = Int.max, b = Int.max, p = Int.min, q = Int.min
  for k in 0..<4 {
    a = min(a, Int(c[2 * k])); p = max(p, Int(c[2 * k]))
    b = min(b, Int(c[2 * k + 1])); q = max(q, Int(c[2 * k + 1]))
  }
  return (a, b, p, q)
}
