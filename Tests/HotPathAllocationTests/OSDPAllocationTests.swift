import CAllocCounter
import ScanCore
import ScanLinux
import ScanService
import Testing

/// libcrypto's AES with the peripheral's random bytes fixed to the specification's RND.B, so
/// the Annex E server cryptogram completes the handshake.
private struct FixedRandomCipher: OSDPCipher {
  let aes = OSDPLibcrypto()
  func encryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) { aes.encryptBlock(key: key, block: block) }
  func decryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) { aes.decryptBlock(key: key, block: block) }
  func fillRandom(_ bytes: UnsafeMutableRawPointer, count: Int) -> Bool {
    for i in 0..<count { bytes.storeBytes(of: UInt8(0xA0 + i), toByteOffset: i, as: UInt8.self) }
    return true
  }
}

private func packet(_ sequence: UInt8, _ command: UInt8, _ data: [UInt8] = [], block: [UInt8]? = nil) -> [UInt8] {
  var p: [UInt8] = [0x53, 0, 0, 0, sequence | 0x04 | (block != nil ? 0x08 : 0)] + (block ?? []) + [command] + data
  p[2] = UInt8(p.count + 2)
  let c = p.withUnsafeBytes { OSDP.crc16($0) }
  return p + [UInt8(c & 0xFF), UInt8(c >> 8)]
}

/// Counts reply bytes (a class: a captured `var` would be boxed, and the box counted).
private final class ReplyCounter { var bytes = 0 }

@Suite struct OSDPAllocationTests {
  @Test("the OSDP peripheral (handshake, polls, cards, keys, LED, noise) allocates nothing per packet")
  func peripheralDoesNotAllocate() throws {
    var settings = OSDPPeripheralSettings()
    settings.installMode = true
    let pd = OSDPPeripheral(settings: settings, key: nil, cipher: FixedRandomCipher())
    let rndA: [UInt8] = [0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7]
    let server: [UInt8] = [0x26, 0xD3, 0x35, 0x6E, 0x07, 0x76, 0x2D, 0x26, 0x28, 0x01, 0xFC, 0x8E, 0x66, 0x65, 0xA8, 0x91]
    let plain = packet(0, 0x61, [0]) + packet(1, 0x60) + packet(2, 0x69, [0, 0, 2, 5, 5, 2, 0, 30, 0, 1, 0, 0, 1, 0]) + packet(3, 0x60)
    let secure = packet(0, 0x76, rndA, block: [3, 0x11, 0]) + packet(1, 0x77, server, block: [3, 0x13, 0]) + packet(2, 0x60)
    var noise = [UInt8](repeating: 0x53, count: 64)
    for i in noise.indices where i % 3 != 0 { noise[i] = UInt8(truncatingIfNeeded: i &* 37) }
    let card = try CardNumber(format: .h10304, facility: 1234, number: 56_789)
    let streams = [plain, secure, noise]
    let replies = ReplyCounter()
    // One round: a card, the three streams, the actions drained. Written out in the loop (a
    // nested function's captures are boxed in a debug build, and the boxes counted).
    alloc_counter_reset()
    for r in 0...1_000 {
      if r == 1 { alloc_counter_reset() }  // round 0 warms up
      pd.queueCard(card)
      pd.queueKey(0x32)  // a PIN for the panel (osdp_KEYPAD), written out: an array literal allocates
      pd.queueKey(0x34)
      pd.queueKey(0x0D)
      for i in 0..<streams.count {
        streams[i].withUnsafeBytes { bytes in pd.receive(bytes, nowMilliseconds: 0) { replies.bytes &+= $0.count } }
      }
      while pd.takeAction() != nil {}
      pd.tick(nowMilliseconds: 0)
    }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0)
    #expect(replies.bytes > 0)
    #expect(pd.cardsSent >= 1_000)
    #expect(pd.keysSent >= 1_000)
  }
}
