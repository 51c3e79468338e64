import CZXing
import ScanCore
import ScanPlatform

/// The barcode engine: Debian's zxing-cpp behind the CZXing shim.
///
/// Owns the engine's allocation arena and a fixed array of C result records, both allocated
/// at init; `decode` allocates nothing in Swift, and the engine's C++ allocations land in the arena.
public struct ZXingDecoder: CodeDecoder, ~Copyable {
  private let handle: OpaquePointer
  private let records: UnsafeMutableBufferPointer<sg_zx_result>
  public let tryHarder: Bool
  /// Decode calls the engine failed (a C++ exception caught in the shim).
  public private(set) var engineErrors: UInt64 = 0

  /// - Parameters:
  ///   - arenaBytes: the C++ allocation arena; 0 lets the engine use malloc.
  ///   - capacity: result records; must not exceed the `DecodeResults` it fills.
  public init(arenaBytes: Int, capacity: Int, tryHarder: Bool = true) throws(SystemError) {
    guard let handle = sg_zx_create(arenaBytes) else {
      throw SystemError(.noMemory, operation: "allocate the decoder arena (\(arenaBytes) bytes)")
    }
    self.handle = handle
    self.tryHarder = tryHarder
    records = .allocate(capacity: capacity)
    records.initialize(repeating: sg_zx_result())
  }

  deinit {
    sg_zx_destroy(handle)
    records.deallocate()
  }

  public mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {
    decode(view, formats: formats, options: EngineOptions(), into: &results)
  }

  public mutating func decode(
    _ view: LumaFrame, formats: BarcodeFormats, options: EngineOptions, into results: inout DecodeResults
  ) {
    let base = results.count
    let capacity = min(records.count, results.capacity - base)
    guard capacity > 0, let origin = view.bytes.baseAddress else { return }
    for i in 0..<capacity {
      let storage = results.payloadStorage(base + i)
      records[i].bytes = storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
      records[i].bytes_capacity = UInt32(storage.count)
      let text = results.textStorage(base + i)
      records[i].text = text.baseAddress!.assumingMemoryBound(to: CChar.self)
      records[i].text_capacity = UInt32(text.count)
    }
    let g = view.geometry
    let image = sg_zx_image(
      origin: origin.assumingMemoryBound(to: UInt8.self), width: Int32(g.width), height: Int32(g.height),
      row_stride: Int32(g.rowStrideBytes), pixel_stride: Int32(g.pixelStrideBytes))
    let engine = sg_zx_options(
      binarizer: Int32(options.binarizer.rawValue), try_harder: tryHarder ? 1 : 0,
      try_downscale: options.engineDownscale ? 1 : 0, try_invert: 1, reserved: 0)
    let n = sg_zx_decode_with(handle, image, formats.rawValue, engine, records.baseAddress, Int32(capacity))
    if n < 0 { engineErrors &+= 1; return }
    for i in 0..<Int(n) {
      let r = records[i]
      var symbol = DecodedSymbol()
      symbol.format = BarcodeFormats(rawValue: r.format)
      symbol.contentType = ContentType(rawValue: UInt8(truncatingIfNeeded: r.content_type)) ?? .unknownECI
      withUnsafeBytes(of: r.corners) { raw in
        let c = raw.bindMemory(to: Int32.self)
        for k in 0..<8 { symbol.corners[k] = c[k] }
      }
      symbol.orientationDegrees = r.orientation
      symbol.engineMirrored = r.mirrored != 0
      symbol.byteCount = Int(r.bytes_count)
      symbol.truncated = r.truncated != 0
      symbol.textByteCount = Int(r.text_count)
      if i != results.count - base {
        // An earlier record was a duplicate: move this payload down to the next free slot.
        let from = results.payloadStorage(base + i), to = results.payloadStorage(results.count)
        to.copyMemory(from: UnsafeRawBufferPointer(rebasing: from[0..<symbol.byteCount]))
        let fromText = results.textStorage(base + i), toText = results.textStorage(results.count)
        toText.copyMemory(from: UnsafeRawBufferPointer(rebasing: fromText[0..<symbol.textByteCount]))
      }
      results.commit(symbol)
    }
  }

  public var engineStats: DecoderStats? { stats }

  /// Engine and arena counters.
  public var stats: DecoderStats {
    var s = sg_zx_stats()
    sg_zx_get_stats(handle, &s)
    return DecoderStats(
      decodes: s.decodes, arenaAllocations: s.arena_allocations, arenaOverflows: s.arena_overflows,
      arenaHighWaterBytes: Int(s.arena_high_water), arenaPinnedBytes: Int(s.arena_pinned),
      arenaCapacityBytes: Int(s.arena_capacity), engineErrors: s.engine_errors)
  }

  /// Whether the engine itself reads light-on-dark codes (zxing-cpp 2.x on Debian 13).
  public static var readsInvertedNatively: Bool { sg_zx_engine_reads_inverted() != 0 }

  /// The engine's name and version.
  public static var engineVersion: String { String(cString: sg_zx_engine_version()) }
}
