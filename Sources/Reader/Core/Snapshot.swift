import ScanBase

/// A code as the snapshot shows it.
public struct SnapshotSymbol: Sendable {
  public var format: BarcodeFormats = []
  public var corners: InlineArray<8, Int32> = .init(repeating: 0)
  public var verdict: Verdict = .deniedUnknown
  public var variant: ImageVariant = .upright
  public var geometry = CodeGeometry()
  public var payloadCount = 0
  /// How much of a payload a snapshot keeps (the size of `payload`; checked in SnapshotBuffer.init).
  public static let payloadBytesMax = 48
  public typealias PayloadStorage = InlineArray<48, UInt8>
  public var payload: PayloadStorage = .init(repeating: 0)
  public init() {}
  public func withPayload<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
    withUnsafeBytes(of: payload) { body(UnsafeRawBufferPointer(rebasing: $0[0..<payloadCount])) }
  }
}

/// One frame kept for the aiming aid, with what was found in it. Allocated once at startup;
/// the loop copies a frame into it only when a snapshot was asked for (no allocation), and the
/// renderers read it afterwards.
public final class SnapshotBuffer: @unchecked Sendable {
  public static let symbolsMax = 16
  public let capacityPixels: Int
  public let pixels: UnsafeMutableRawBufferPointer
  public private(set) var width = 0
  public private(set) var height = 0
  public var region: Region? = nil
  public var wallNanoseconds: Int64 = 0
  public var exposure = ExposureMetrics()
  public var framesPerSecondTimes100 = 0
  public var lastDecision: Verdict? = nil
  public var lastLabel: LabelLimits.Storage = .init(repeating: 0)
  public var lastLabelCount = 0
  public private(set) var symbolCount = 0
  private let symbols: UnsafeMutableBufferPointer<SnapshotSymbol>

  public init(maxWidth: Int, maxHeight: Int) {
    LabelLimits.checkStorage()
    precondition(SnapshotSymbol.PayloadStorage.count == SnapshotSymbol.payloadBytesMax, "SnapshotSymbol's payload storage and payloadBytesMax disagree")
    capacityPixels = maxWidth * maxHeight
    pixels = .allocate(byteCount: capacityPixels, alignment: 64)
    pixels.initializeMemory(as: UInt8.self, repeating: 0)
    symbols = .allocate(capacity: Self.symbolsMax)
    symbols.initialize(repeating: SnapshotSymbol())
  }

  deinit {
    pixels.deallocate()
    symbols.deallocate()
  }

  /// Copies a frame's luma (any strides) into the buffer.
  public func copy(_ frame: LumaFrame) {
    let g = frame.geometry
    guard g.width * g.height <= capacityPixels else { return }
    width = g.width
    height = g.height
    for y in 0..<g.height {
      let row = y * g.width
      if g.pixelStrideBytes == 1 {
        (pixels.baseAddress! + row).copyMemory(from: frame.bytes.baseAddress! + y * g.rowStrideBytes, byteCount: g.width)
      } else {
        for x in 0..<g.width { pixels[row + x] = frame.luma(x: x, y: y) }
      }
    }
    symbolCount = 0
  }

  /// Copies another snapshot whole: pixels, facts and codes (no allocation). False (and nothing
  /// copied) when its frame does not fit.
  @discardableResult
  public func copy(from other: SnapshotBuffer) -> Bool {
    guard other.width * other.height <= capacityPixels else { return false }
    width = other.width
    height = other.height
    (pixels.baseAddress!).copyMemory(from: other.pixels.baseAddress!, byteCount: width * height)
    region = other.region
    wallNanoseconds = other.wallNanoseconds
    exposure = other.exposure
    framesPerSecondTimes100 = other.framesPerSecondTimes100
    lastDecision = other.lastDecision
    lastLabel = other.lastLabel
    lastLabelCount = other.lastLabelCount
    symbolCount = other.symbolCount
    for i in 0..<symbolCount { symbols[i] = other.symbols[i] }
    return true
  }

  /// Takes the credentials out: every located code's box (see `blank`) is filled with
  /// mid-grey, and every payload is dropped. The boxes, formats and verdicts stay, so the
  /// picture still shows where a code was held and how it was judged. A code the reader did not
  /// locate is not blanked here: the fleet decodes the result again and blanks or withholds
  /// (FleetSnapshot).
  public func redact() {
    for i in 0..<symbolCount {
      var s = symbols[i]
      blank(s.corners)
      s.payload = .init(repeating: 0)
      s.payloadCount = 0
      symbols[i] = s
    }
  }

  /// Fills a code's box with mid-grey: its corners' bounding box, grown by an eighth of its
  /// larger side (at least 4 pixels) for the quiet zone and any corner error.
  public func blank(_ corners: InlineArray<8, Int32>) {
    let (minX, minY, maxX, maxY) = cornerBounds(corners)
    let margin = max(4, max(maxX - minX, maxY - minY) / 8)
    let x0 = max(0, minX - margin), x1 = min(width - 1, maxX + margin)
    let y0 = max(0, minY - margin), y1 = min(height - 1, maxY + margin)
    guard x0 <= x1 && y0 <= y1 else { return }
    for y in y0...y1 { (pixels.baseAddress! + y * width + x0).initializeMemory(as: UInt8.self, repeating: 128, count: x1 - x0 + 1) }
  }

  public func append(_ symbol: SnapshotSymbol) {
    guard symbolCount < Self.symbolsMax else { return }
    symbols[symbolCount] = symbol
    symbolCount += 1
  }

  public subscript(index: Int) -> SnapshotSymbol {
    precondition(index < symbolCount)
    return symbols[index]
  }

  @inline(__always) public func luma(x: Int, y: Int) -> UInt8 { pixels[y * width + x] }

  /// The region of interest clipped to the frame (the whole frame when none is set).
  public var effectiveRegion: Region {
    region?.clipped(width: width, height: height) ?? Region(x: 0, y: 0, width: width, height: height)
  }

  /// Writes the header facts (time, size, fps, exposure, last decision) on one line.
  public func writeHeader(into w: inout ByteWriter) {
    w.write(RFC3339.format(wallNanoseconds / 1_000_000_000))
    w.write(" ")
    w.write(width)
    w.write("x")
    w.write(height)
    w.write(" fps ")
    w.writeFixed(UInt64(framesPerSecondTimes100), scale: 100, decimals: 1)
    w.write(" brightness ")
    w.write(exposure.meanBrightness)
    w.write(" clipped ")
    w.writeFixed(UInt64(exposure.clippedPerMille), scale: 10, decimals: 1)
    w.write("% last ")
    if let last = lastDecision {
      w.write(last.name)
      if lastLabelCount > 0 {
        w.write(" label=")
        withUnsafeBytes(of: lastLabel) { w.write(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<lastLabelCount])) }
      }
    } else {
      w.write("none")
    }
  }

  /// Writes one code's facts: index, format, verdict, escaped payload, size and sharpness.
  public func writeSymbol(_ i: Int, into w: inout ByteWriter) {
    let s = self[i]
    w.write("code ")
    w.write(i + 1)
    w.write(" ")
    w.write(s.format.name)
    w.write(" ")
    w.write(s.verdict.name)
    if s.variant != .upright {
      w.write(" [")
      w.write(s.variant.name)
      w.write("]")
    }
    w.write(" payload=")
    s.withPayload { w.writeEscaped($0) }
    w.write(" ")
    w.writeFixed(UInt64(s.geometry.modulePixelsTimes10), scale: 10, decimals: 1)
    w.write(" px/module sharpness ")
    w.write(s.geometry.sharpnessPercent)
    w.write("%")
  }
}

/// The snapshot as printable ASCII, for a serial console: brightness as a character ramp, the
/// region of interest framed with `|` and `_`, each code's outline drawn with `o` and its corners
/// marked with its number. Written straight into the console's output buffer.
public enum SnapshotText {
  /// Dark to light.
  public static let ramp: StaticString = " .:-=+*#%@"

  /// 78 columns: with its `| ` a row fills an 80-column terminal.
  public static func write(_ s: SnapshotBuffer, columns: Int = 78, rows: Int = 40, into w: inout ByteWriter) -> Int {
    var lines = 0
    w.write("| snapshot ")
    s.writeHeader(into: &w)
    w.newline()
    w.write("| legend: brightness \" .:-=+*#%@\" dark to light; region of interest |_; code outline o, corners 1-9\n")
    lines += 2
    for i in 0..<s.symbolCount {
      w.write("| ")
      s.writeSymbol(i, into: &w)
      w.newline()
      lines += 1
    }
    guard s.width > 0, s.height > 0 else { return lines }
    // Rounded up, so the whole frame is shown (640 wide: 9 pixels a cell, 72 of the 78 columns).
    let cellW = max(1, (s.width + columns - 1) / columns), cellH = max(1, (s.height + rows - 1) / rows)
    let region = s.effectiveRegion
    for row in 0..<rows {
      w.write("| ")
      for column in 0..<columns {
        w.byte(cell(s, column: column, row: row, cellWidth: cellW, cellHeight: cellH, region: region))
      }
      w.newline()
      lines += 1
    }
    return lines
  }

  /// The character for one cell: a code corner, outline, region border, or brightness.
  static func cell(_ s: SnapshotBuffer, column: Int, row: Int, cellWidth: Int, cellHeight: Int, region: Region) -> UInt8 {
    let x0 = column * cellWidth, y0 = row * cellHeight
    let x1 = x0 + cellWidth, y1 = y0 + cellHeight
    func inCell(_ x: Int, _ y: Int) -> Bool { x >= x0 && x < x1 && y >= y0 && y < y1 }
    for i in (0..<s.symbolCount).reversed() {
      let c = s[i].corners
      for k in 0..<4 where inCell(Int(c[2 * k]), Int(c[2 * k + 1])) { return UInt8(ascii: "1") + UInt8(min(i, 8)) }
    }
    for i in 0..<s.symbolCount {
      let c = s[i].corners
      for k in 0..<4 {
        let ax = Int(c[2 * k]), ay = Int(c[2 * k + 1])
        let bx = Int(c[(2 * k + 2) % 8]), by = Int(c[(2 * k + 3) % 8])
        if segmentCrosses(ax, ay, bx, by, x0, y0, x1, y1) { return UInt8(ascii: "o") }
      }
    }
    if region.width < s.width || region.height < s.height {
      let insideX = x1 > region.x && x0 < region.x + region.width
      let insideY = y1 > region.y && y0 < region.y + region.height
      if insideY && (inRange(region.x, x0, x1) || inRange(region.x + region.width - 1, x0, x1)) { return UInt8(ascii: "|") }
      if insideX && (inRange(region.y, y0, y1) || inRange(region.y + region.height - 1, y0, y1)) { return UInt8(ascii: "_") }
    }
    var sum = 0, n = 0
    var y = y0
    while y < min(y1, s.height) {
      var x = x0
      while x < min(x1, s.width) {
        sum += Int(s.luma(x: x, y: y))
        n += 1
        x += max(1, cellWidth / 4)
      }
      y += max(1, cellHeight / 4)
    }
    let mean = n > 0 ? sum / n : 0
    return ramp.utf8Start[min(9, mean * 10 / 256)]
  }

  static func inRange(_ v: Int, _ lo: Int, _ hi: Int) -> Bool { v >= lo && v < hi }

  /// Whether the segment from a to b passes through the cell [x0, x1) × [y0, y1).
  static func segmentCrosses(_ ax: Int, _ ay: Int, _ bx: Int, _ by: Int, _ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> Bool {
    let steps = max(abs(bx - ax), abs(by - ay), 1)
    let stride = max(1, min(x1 - x0, y1 - y0) / 2)
    var t = 0
    while t <= steps {
      let x = ax + (bx - ax) * t / steps, y = ay + (by - ay) * t / steps
      if x >= x0 && x < x1 && y >= y0 && y < y1 { return true }
      t += stride
    }
    return false
  }
}
