import ScanBase

/// The engine's classification of the payload bytes.
public enum ContentType: UInt8, Sendable {
  case text = 0, binary, mixed, gs1, iso15434, unknownECI
}

/// A decoded symbol's metadata; its payload bytes live in the owning `DecodeResults`.
public struct DecodedSymbol: Sendable {
  public var format: BarcodeFormats = []
  public var contentType: ContentType = .text
  /// x0 y0 x1 y1 x2 y2 x3 y3 in frame pixels: top-left, top-right, bottom-right, bottom-left.
  public var corners: InlineArray<8, Int32> = .init(repeating: 0)
  public var orientationDegrees: Int32 = 0
  public var variant: ImageVariant = .upright
  /// The symbol itself was mirrored (reported by the engine).
  public var engineMirrored = false
  public var byteCount = 0
  /// Bytes of the payload's UTF-8 text form (character sets applied by the engine).
  public var textByteCount = 0
  /// The payload was longer than the slot; `byteCount` bytes were kept.
  public var truncated = false
  public init() {}

  /// The mean of the four corners.
  public var center: (x: Int32, y: Int32) {
    var x: Int64 = 0, y: Int64 = 0
    for k in 0..<4 {
      x += Int64(corners[2 * k])
      y += Int64(corners[2 * k + 1])
    }
    return (Int32(truncatingIfNeeded: x / 4), Int32(truncatingIfNeeded: y / 4))
  }

  /// Whether (x, y) lies inside the corners' bounding box.
  public func boxContains(x: Int32, y: Int32) -> Bool {
    var x0 = Int32.max, y0 = Int32.max, x1 = Int32.min, y1 = Int32.min
    for k in 0..<4 {
      x0 = min(x0, corners[2 * k]); x1 = max(x1, corners[2 * k])
      y0 = min(y0, corners[2 * k + 1]); y1 = max(y1, corners[2 * k + 1])
    }
    return x >= x0 && x <= x1 && y >= y0 && y <= y1
  }
}

/// Fixed-capacity storage for one frame's decoded symbols, allocated once.
///
/// Capacity and per-symbol payload size are fixed at startup; decoding writes into these slots
/// and never allocates.
public struct DecodeResults: ~Copyable {
  public let capacity: Int
  public let payloadBytesMax: Int
  public private(set) var count = 0
  /// Where the current decode call's symbols start: `commit` compares only against these (the
  /// earlier ones may be in other coordinates until the pipeline maps them; see `dropRepeats`).
  private var attemptStart = 0
  private let symbols: UnsafeMutableBufferPointer<DecodedSymbol>
  private let payloads: UnsafeMutableRawBufferPointer
  private let texts: UnsafeMutableRawBufferPointer

  /// Bytes the slots allocate (the memory budget asks).
  public static func bytes(capacity: Int, payloadBytesMax: Int) -> Int {
    capacity * (MemoryLayout<DecodedSymbol>.stride + 2 * payloadBytesMax)
  }

  public init(capacity: Int, payloadBytesMax: Int) {
    // 255: what one zxing-cpp call can report (`scangate decode` keeps room for all of it).
    precondition(capacity > 0 && capacity <= 255, "result slots out of range")
    precondition(payloadBytesMax > 0 && payloadBytesMax <= 8192, "payload size out of range")
    self.capacity = capacity
    self.payloadBytesMax = payloadBytesMax
    symbols = .allocate(capacity: capacity)
    symbols.initialize(repeating: DecodedSymbol())
    payloads = .allocate(byteCount: capacity * payloadBytesMax, alignment: 16)
    payloads.initializeMemory(as: UInt8.self, repeating: 0)
    texts = .allocate(byteCount: capacity * payloadBytesMax, alignment: 16)
    texts.initializeMemory(as: UInt8.self, repeating: 0)
  }

  deinit {
    symbols.deallocate()
    payloads.deallocate()
    texts.deallocate()
  }

  public mutating func removeAll() {
    count = 0
    attemptStart = 0
  }

  /// Starts a decode call's symbols (see `commit`).
  public mutating func beginAttempt() { attemptStart = count }

  public subscript(index: Int) -> DecodedSymbol {
    precondition(index < count)
    return symbols[index]
  }

  /// The payload bytes of symbol `index`.
  public func payload(_ index: Int) -> UnsafeRawBufferPointer {
    precondition(index < count)
    return UnsafeRawBufferPointer(rebasing: payloads[(index * payloadBytesMax)..<(index * payloadBytesMax + symbols[index].byteCount)])
  }

  /// The payload of symbol `index` as UTF-8 text (for display and ground-truth comparison).
  public func text(_ index: Int) -> UnsafeRawBufferPointer {
    precondition(index < count)
    return UnsafeRawBufferPointer(rebasing: texts[(index * payloadBytesMax)..<(index * payloadBytesMax + symbols[index].textByteCount)])
  }

  /// Raw storage of slot `index`'s text form, for a decoder adapter to write into.
  public func textStorage(_ index: Int) -> UnsafeMutableRawBufferPointer {
    precondition(index < capacity)
    return UnsafeMutableRawBufferPointer(rebasing: texts[(index * payloadBytesMax)..<((index + 1) * payloadBytesMax)])
  }

  /// Raw storage of slot `index`'s payload, for a decoder adapter to write into.
  public func payloadStorage(_ index: Int) -> UnsafeMutableRawBufferPointer {
    precondition(index < capacity)
    return UnsafeMutableRawBufferPointer(rebasing: payloads[(index * payloadBytesMax)..<((index + 1) * payloadBytesMax)])
  }

  /// Commits slot `count` (whose payload was written through `payloadStorage`), unless the
  /// same symbol is already present: the same payload in the same format at the same place
  /// (its centre inside the other's outline). Two codes with one payload at two places are
  /// both kept. Returns whether it was added.
  @discardableResult
  public mutating func commit(_ symbol: DecodedSymbol) -> Bool {
    guard count < capacity else { return false }
    let new = UnsafeRawBufferPointer(rebasing: payloads[(count * payloadBytesMax)..<(count * payloadBytesMax + symbol.byteCount)])
    if isRepeat(symbol, payload: new, among: attemptStart..<count) { return false }
    symbols[count] = symbol
    count += 1
    return true
  }

  /// Whether `symbol` (with `bytes`) repeats one of `range`: same format and payload, centre
  /// inside its bounding box.
  private func isRepeat(_ symbol: DecodedSymbol, payload bytes: UnsafeRawBufferPointer, among range: Range<Int>) -> Bool {
    let (cx, cy) = symbol.center
    for i in range where symbols[i].format == symbol.format && symbols[i].byteCount == symbol.byteCount {
      if symbols[i].boxContains(x: cx, y: cy) && bytesEqual(payload(i), bytes) { return true }
    }
    return false
  }

  /// Whether symbol `index` carries the same payload in the same format as an earlier one
  /// (another code with the same payload, or the same code): a payload is decided once.
  public func repeatsEarlierPayload(_ index: Int) -> Bool {
    let symbol = self[index]
    let bytes = payload(index)
    for i in 0..<index where symbols[i].format == symbol.format && symbols[i].byteCount == symbol.byteCount {
      if bytesEqual(payload(i), bytes) { return true }
    }
    return false
  }

  /// Removes the symbols from `start` on that repeat one before `start` (after a further view
  /// of the same frame, once its corners are in frame coordinates); keeps the order.
  public mutating func dropRepeats(from start: Int) {
    var kept = start
    for i in start..<count {
      if isRepeat(symbols[i], payload: payload(i), among: 0..<start) { continue }
      if kept != i { move(i, to: kept) }
      kept += 1
    }
    count = kept
    attemptStart = min(attemptStart, count)
  }

  private mutating func move(_ from: Int, to: Int) {
    symbols[to] = symbols[from]
    payloadStorage(to).copyMemory(from: UnsafeRawBufferPointer(payloadStorage(from)))
    textStorage(to).copyMemory(from: UnsafeRawBufferPointer(textStorage(from)))
  }

  /// Moves every symbol's corners by (dx, dy) from index `from` on (after decoding a region).
  public mutating func offsetCorners(from start: Int, dx: Int32, dy: Int32) {
    for i in start..<count {
      for k in 0..<4 {
        symbols[i].corners[2 * k] += dx
        symbols[i].corners[2 * k + 1] += dy
      }
    }
  }

  /// Rewrites symbol `index`'s corners and variant (the pipeline maps mirrored views back).
  public mutating func update(_ index: Int, _ body: (inout DecodedSymbol) -> Void) {
    precondition(index < count)
    body(&symbols[index])
  }
}

/// Byte-wise equality of two buffers.
@inline(__always)
public func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
  guard a.count == b.count else { return false }
  for i in 0..<a.count where a[i] != b[i] { return false }
  return true
}
