/// OSDP v2.2 (IEC 60839-11-5) wire format, written here because no OSDP library is packaged in
/// Debian (docs/panels.md): the packet layout, the check characters and a bounded framer.
///
/// A packet is `[0xFF mark] SOM(0x53) ADDR LEN_LSB LEN_MSB CTRL [SCB] CMD/REPLY [DATA] [MAC(4)]
/// CRC_LSB CRC_MSB` (or one checksum byte); `LEN` counts from SOM to the last check byte, the
/// optional mark excluded. `CTRL`: bits 0–1 the sequence number, bit 2 CRC-16 (else checksum),
/// bit 3 a security control block follows. A PD's replies carry its address with bit 7 set.
public enum OSDP {
  public static let som: UInt8 = 0x53
  public static let mark: UInt8 = 0xFF
  public static let broadcastAddress: UInt8 = 0x7F
  public static let controlSequenceMask: UInt8 = 0x03
  public static let controlCRC: UInt8 = 0x04
  public static let controlSCB: UInt8 = 0x08
  /// The shortest packet: header (5), command (1), checksum (1).
  public static let packetBytesMin = 7
  /// The longest packet this reader accepts or sends (what it reports as its receive buffer).
  public static let packetBytesMax = 512

  /// Commands a control panel sends.
  public enum Command: UInt8, Sendable {
    case poll = 0x60, id = 0x61, cap = 0x62, lstat = 0x64, istat = 0x65, ostat = 0x66, rstat = 0x67
    case out = 0x68, led = 0x69, buz = 0x6A, text = 0x6B, comset = 0x6E, keyset = 0x75
    case chlng = 0x76, scrypt = 0x77, acurxsize = 0x7B, keepactive = 0xA7
  }

  /// Replies a peripheral sends.
  public enum Reply: UInt8, Sendable {
    case ack = 0x40, nak = 0x41, pdid = 0x45, pdcap = 0x46, lstatr = 0x48, istatr = 0x49, ostatr = 0x4A
    case rstatr = 0x4B, raw = 0x50, keypad = 0x53, com = 0x54, ccrypt = 0x76, rmacI = 0x78
  }

  /// NAK error codes (the byte after the NAK reply code).
  public enum NakCode: UInt8, Sendable {
    case checkCharacter = 1
    case commandLength = 2
    case unknownCommand = 3
    case sequenceNumber = 4
    case securityUnsupported = 5
    case encryptionRequired = 6
    case unableToProcess = 9
  }

  /// Security block types.
  public enum SecurityBlock: UInt8, Sendable {
    case challenge = 0x11, clientCryptogram = 0x12, serverCryptogram = 0x13, initialRMAC = 0x14
    case commandMAC = 0x15, replyMAC = 0x16, commandEncrypted = 0x17, replyEncrypted = 0x18
  }

  /// CRC-16 as OSDP defines it: polynomial 0x1021, initial value 0x1D0F, not reflected (the
  /// CRC-16/AUG-CCITT parameters), sent least significant byte first.
  public static func crc16(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
    var crc: UInt16 = 0x1D0F
    for byte in bytes {
      crc ^= UInt16(byte) << 8
      for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
    }
    return crc
  }

  /// The one-byte checksum: the two's complement of the byte sum.
  public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt8 {
    var sum: UInt8 = 0
    for byte in bytes { sum &+= byte }
    return 0 &- sum
  }
}

/// Splits a byte stream into OSDP packets, bounded: bytes are kept in a fixed buffer; a header
/// with an impossible length or a packet whose check characters fail is dropped and the stream
/// rescanned from the next start byte; a packet left unfinished for `staleMilliseconds` is
/// dropped the same way.
public struct OSDPFramer: ~Copyable {
  /// What one call to `next()` found.
  public enum Outcome: Equatable, Sendable {
    /// Nothing complete yet.
    case needMore
    /// A packet of `byteCount` bytes at the buffer's start (from SOM; the mark, if any, is gone)
    /// whose check characters are good. Call `consume()` after handling it.
    case packet(byteCount: Int, hadMark: Bool)
    /// A complete packet whose check characters failed: its address and control bytes, for a NAK.
    case badCheck(address: UInt8, control: UInt8)
  }

  public static let capacity = 2 * OSDP.packetBytesMax
  private let buffer: UnsafeMutableRawBufferPointer
  public private(set) var count = 0
  private var markBeforeStart = false
  private var lastByteMilliseconds: Int64 = 0
  private var pendingPacketBytes = 0
  /// Bytes dropped while looking for a packet start (noise, rejected headers, overflow).
  public private(set) var bytesDiscarded = 0
  /// Packets whose check characters failed.
  public private(set) var badChecks = 0
  public let staleMilliseconds: Int64

  public init(staleMilliseconds: Int64 = 200) {
    buffer = .allocate(byteCount: Self.capacity, alignment: 16)
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    self.staleMilliseconds = staleMilliseconds
  }

  deinit { buffer.deallocate() }

  /// Appends bytes received at `nowMilliseconds`; bytes beyond the buffer are dropped (and
  /// counted): the framer rescans, so a flood cannot grow it.
  public mutating func append(_ bytes: UnsafeRawBufferPointer, nowMilliseconds: Int64) {
    precondition(pendingPacketBytes == 0, "consume() the last packet first")
    let room = Self.capacity - count
    let n = min(room, bytes.count)
    if n > 0 {
      UnsafeMutableRawBufferPointer(rebasing: buffer[count..<(count + n)]).copyMemory(
        from: UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
      count += n
    }
    bytesDiscarded += bytes.count - n
    if bytes.count > 0 { lastByteMilliseconds = nowMilliseconds }
  }

  /// Drops a packet left unfinished too long (the sender gave up or it was noise): every
  /// buffered byte is older than the timeout then.
  public mutating func expire(nowMilliseconds: Int64) {
    guard pendingPacketBytes == 0, count > 0, nowMilliseconds - lastByteMilliseconds >= staleMilliseconds else { return }
    bytesDiscarded += count
    count = 0
    markBeforeStart = false
  }

  /// The packet bytes of the outcome `.packet`, writable (decryption happens in place).
  public var packet: UnsafeMutableRawBufferPointer {
    UnsafeMutableRawBufferPointer(rebasing: buffer[0..<pendingPacketBytes])
  }

  /// Removes the packet `next()` returned.
  public mutating func consume() {
    let n = pendingPacketBytes
    pendingPacketBytes = 0
    drop(n)
    markBeforeStart = false
  }

  /// Finds the next packet in the buffered bytes.
  public mutating func next() -> Outcome {
    precondition(pendingPacketBytes == 0, "consume() the last packet first")
    while count > 0 {
      // Skip to a start byte, remembering whether a mark byte came right before it.
      var start = 0
      while start < count && buffer[start] != OSDP.som { start += 1 }
      if start > 0 {
        markBeforeStart = buffer[start - 1] == OSDP.mark
        var noise = 0
        for i in 0..<start where buffer[i] != OSDP.mark { noise += 1 }
        bytesDiscarded += noise
        drop(start)
      }
      guard count >= 5 else { return .needMore }
      let length = Int(buffer[2]) | Int(buffer[3]) << 8
      let control = buffer[4]
      let checkBytes = control & OSDP.controlCRC != 0 ? 2 : 1
      if length < 5 + 1 + checkBytes || length > OSDP.packetBytesMax || control & 0x70 != 0 {
        bytesDiscarded += 1
        drop(1)
        markBeforeStart = false
        continue
      }
      guard count >= length else { return .needMore }
      let body = UnsafeRawBufferPointer(rebasing: buffer[0..<(length - checkBytes)])
      let good: Bool
      if checkBytes == 2 {
        good = OSDP.crc16(body) == UInt16(buffer[length - 2]) | UInt16(buffer[length - 1]) << 8
      } else {
        good = OSDP.checksum(body) == buffer[length - 1]
      }
      if !good {
        badChecks += 1
        let address = buffer[1]
        bytesDiscarded += 1
        drop(1)
        markBeforeStart = false
        return .badCheck(address: address, control: control)
      }
      pendingPacketBytes = length
      return .packet(byteCount: length, hadMark: markBeforeStart)
    }
    return .needMore
  }

  private mutating func drop(_ n: Int) {
    precondition(n <= count)
    if n < count {
      buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + n, byteCount: count - n)
    }
    count -= n
  }
}
