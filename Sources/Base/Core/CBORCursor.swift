/// The CBOR seam: a decoder of one item head at a time (libcbor's streaming decoder behind it,
/// in ScanAccessLinux), and an encoder of heads. Credentials, revocation lists and signed bundles are
/// read through `CBORCursor`, which accepts only definite lengths, integers, strings, arrays,
/// maps, tags and booleans, and bounds every count.
public enum CBORType: Int32, Sendable {
  case unsigned = 0, negative, bytes, text, array, map, tag, falseValue, trueValue, null, other
}

public struct CBORItem: Sendable {
  public var type: CBORType
  /// The head's argument: the value, the string length, the element or pair count, the tag.
  public var argument: UInt64
  /// For strings: where the bytes are in the buffer.
  public var start: Int
  /// Bytes the item takes (head and, for strings, the content).
  public var size: Int
  public init(type: CBORType, argument: UInt64, start: Int, size: Int) {
    self.type = type
    self.argument = argument
    self.start = start
    self.size = size
  }
}

public protocol CBORCodec: AnyObject {
  /// The item whose head starts at `offset`, or nil when it is malformed or truncated.
  func item(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> CBORItem?
  /// Writes the shortest head of `type` (unsigned...tag) with `argument` at `offset`; returns
  /// its size, or nil when it does not fit.
  func writeHead(_ type: CBORType, _ argument: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int?
}

/// Why a CBOR structure was refused.
public enum CBORProblem: Error, Equatable, Sendable {
  case malformed  // not CBOR, truncated, or an item type never accepted (floats, indefinite lengths)
  case unexpected  // valid CBOR, not the structure expected here
  case oversized  // a count or length over its bound
  case trailing  // bytes after the item
}

/// Reads a buffer item by item, in order; every read names the type it expects.
public struct CBORCursor {
  public let buffer: UnsafeRawBufferPointer
  public var offset: Int
  private let codec: any CBORCodec

  public init(_ buffer: UnsafeRawBufferPointer, codec: any CBORCodec, offset: Int = 0) {
    self.buffer = buffer
    self.codec = codec
    self.offset = offset
  }

  public var atEnd: Bool { offset >= buffer.count }

  public mutating func next() throws(CBORProblem) -> CBORItem {
    guard offset < buffer.count, let item = codec.item(buffer, at: offset), item.size > 0,
      item.size <= buffer.count - offset
    else { throw .malformed }
    if item.type == .other { throw .malformed }
    offset += item.size
    return item
  }

  /// The next item's type, without consuming it.
  public func peekType() throws(CBORProblem) -> CBORType {
    guard offset < buffer.count, let item = codec.item(buffer, at: offset) else { throw .malformed }
    return item.type
  }

  public mutating func unsigned(max: UInt64 = .max) throws(CBORProblem) -> UInt64 {
    let item = try next()
    guard item.type == .unsigned else { throw .unexpected }
    guard item.argument <= max else { throw .oversized }
    return item.argument
  }

  /// An integer (major type 0 or 1) that fits an Int64.
  public mutating func integer() throws(CBORProblem) -> Int64 {
    let item = try next()
    switch item.type {
    case .unsigned:
      guard item.argument <= UInt64(Int64.max) else { throw .oversized }
      return Int64(item.argument)
    case .negative:
      guard item.argument <= UInt64(Int64.max) else { throw .oversized }
      return -1 - Int64(item.argument)
    default: throw .unexpected
    }
  }

  /// A byte string of at most `max` bytes: where it is in the buffer.
  public mutating func bytes(max: Int) throws(CBORProblem) -> Range<Int> {
    let item = try next()
    guard item.type == .bytes else { throw .unexpected }
    guard item.argument <= UInt64(max) else { throw .oversized }
    return item.start..<(item.start + Int(item.argument))
  }

  /// A text string of at most `max` bytes: where it is in the buffer.
  public mutating func text(max: Int) throws(CBORProblem) -> Range<Int> {
    let item = try next()
    guard item.type == .text else { throw .unexpected }
    guard item.argument <= UInt64(max) else { throw .oversized }
    return item.start..<(item.start + Int(item.argument))
  }

  public mutating func array(max: Int) throws(CBORProblem) -> Int {
    let item = try next()
    guard item.type == .array else { throw .unexpected }
    guard item.argument <= UInt64(max) else { throw .oversized }
    return Int(item.argument)
  }

  public mutating func map(max: Int) throws(CBORProblem) -> Int {
    let item = try next()
    guard item.type == .map else { throw .unexpected }
    guard item.argument <= UInt64(max) else { throw .oversized }
    return Int(item.argument)
  }

  public mutating func boolean() throws(CBORProblem) -> Bool {
    let item = try next()
    switch item.type {
    case .trueValue: return true
    case .falseValue: return false
    default: throw .unexpected
    }
  }

  public func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[range]) }
}

/// Writes CBOR into a fixed buffer through the codec (tools and the signature structure).
public struct CBORWriter {
  public let buffer: UnsafeMutableRawBufferPointer
  public private(set) var count = 0
  public private(set) var overflowed = false
  private let codec: any CBORCodec

  public init(_ buffer: UnsafeMutableRawBufferPointer, codec: any CBORCodec) {
    self.buffer = buffer
    self.codec = codec
  }

  public mutating func head(_ type: CBORType, _ argument: UInt64) {
    guard !overflowed, let n = codec.writeHead(type, argument, into: buffer, at: count) else {
      overflowed = true
      return
    }
    count += n
  }

  public mutating func raw(_ bytes: UnsafeRawBufferPointer) {
    guard !overflowed, bytes.count <= buffer.count - count else {
      overflowed = true
      return
    }
    if bytes.count > 0 { (buffer.baseAddress! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    count += bytes.count
  }

  public mutating func integer(_ value: Int64) {
    if value >= 0 { head(.unsigned, UInt64(value)) } else { head(.negative, UInt64(-1 - value)) }
  }
  public mutating func bytes(_ value: UnsafeRawBufferPointer) {
    head(.bytes, UInt64(value.count))
    raw(value)
  }
  public mutating func text(_ value: UnsafeRawBufferPointer) {
    head(.text, UInt64(value.count))
    raw(value)
  }
  public mutating func boolean(_ value: Bool) {
    // Simple values 20/21 are major type 7: written as raw bytes 0xf4/0xf5.
    withUnsafeBytes(of: value ? UInt8(0xF5) : UInt8(0xF4)) { raw($0) }
  }

  public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<count]) }
}
