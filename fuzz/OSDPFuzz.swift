// libFuzzer harness for the OSDP peripheral: the framer, the command decoder, the sequence
// and Secure Channel state machine, fed arbitrary bytes in arbitrary chunks. A toy block cipher
// (an invertible byte mix, not AES) stands in for libcrypto so the harness stays pure Swift;
// install mode is on so the handshake paths are reachable. Built by fuzz/run.
import ScanCore

struct ToyCipher: OSDPCipher {
  func encryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) {
    for i in 0..<16 {
      let b = block.load(fromByteOffset: i, as: UInt8.self) ^ key.load(fromByteOffset: i, as: UInt8.self)
      block.storeBytes(of: b &+ UInt8(i), toByteOffset: i, as: UInt8.self)
    }
  }
  func decryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) {
    for i in 0..<16 {
      let b = block.load(fromByteOffset: i, as: UInt8.self) &- UInt8(i)
      block.storeBytes(of: b ^ key.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
    }
  }
  func fillRandom(_ bytes: UnsafeMutableRawPointer, count: Int) -> Bool {
    bytes.initializeMemory(as: UInt8.self, repeating: 0x5A, count: count)
    return true
  }
}

nonisolated(unsafe) let peripheral: OSDPPeripheral<ToyCipher> = {
  var settings = OSDPPeripheralSettings()
  settings.installMode = true
  return OSDPPeripheral(settings: settings, key: nil, cipher: ToyCipher())
}()
nonisolated(unsafe) var now: Int64 = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  let chunk = size > 0 ? Int(bytes[0]) % 64 + 1 : 1
  var offset = 0
  while offset < size {
    let end = min(size, offset + chunk)
    peripheral.receive(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), nowMilliseconds: now) { reply in
      precondition(reply.count >= OSDP.packetBytesMin && reply.count <= OSDP.packetBytesMax + 1)
    }
    offset = end
    now += 1
  }
  if size > 0 && bytes[0] & 0x80 != 0 { _ = try? CardNumber(parsing: String(decoding: bytes, as: UTF8.self)) }
  if size > 0 && bytes[0] == 0x42, let card = try? CardNumber(format: .h10301, facility: 1, number: UInt64(size)) {
    peripheral.queueCard(card)
  }
  while peripheral.takeAction() != nil {}
  peripheral.tick(nowMilliseconds: now + 1_000)
  return 0
}
