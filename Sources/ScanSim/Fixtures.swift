import ScanCore

/// A decoder for simulations: the frame's first pixel names the payload (0 = no code).
///
/// Payloads are copied in at init; decoding copies one into the result slot and allocates nothing.
public struct FixtureDecoder: CodeDecoder {
  private let payloads: [[UInt8]]
  public private(set) var calls = 0

  /// `payloads[0]` is named by pixel value 1, and so on.
  public init(payloads: [[UInt8]]) {
    precondition(payloads.count < 255)
    self.payloads = payloads
  }

  public mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {
    calls += 1
    let index = Int(view.luma(x: 0, y: 0))
    guard index > 0 && index <= payloads.count, results.count < results.capacity else { return }
    let storage = results.payloadStorage(results.count)
    let n = min(storage.count, payloads[index - 1].count)
    payloads[index - 1].withUnsafeBytes { storage.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    var symbol = DecodedSymbol()
    symbol.format = .qrCode
    symbol.byteCount = n
    symbol.truncated = n < payloads[index - 1].count
    symbol.corners = [10, 10, 50, 10, 50, 50, 10, 50]
    results.commit(symbol)
  }

  /// A gray frame whose first pixel names payload `index` (1-based; 0 = no code).
  public static func frame(width: Int, height: Int, naming index: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 200, count: width * height)
    pixels[0] = UInt8(index)
    return pixels
  }
}

/// A stand-in digest for pure-Swift tests (FNV-1a in four lanes): deterministic and
/// collision-free enough for fixtures, NOT a cryptographic hash. The service uses SHA-256.
public struct FixtureDigester: PayloadDigester {
  public init() {}
  public func sha256(_ bytes: UnsafeRawBufferPointer) -> Digest {
    func lane(_ seed: UInt64) -> UInt64 {
      var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
      for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
      return h ^ UInt64(bytes.count)
    }
    return Digest(words: (lane(1), lane(2), lane(3), lane(4)))
  }
  public func digest(_ text: String) -> Digest { Array(text.utf8).withUnsafeBytes { sha256($0) } }
  /// The digest as 64 hex digits, as an allow-list `sha256:` entry wants it.
  public func hex(_ text: String) -> String {
    Hex.string(digest(text))
  }
}
