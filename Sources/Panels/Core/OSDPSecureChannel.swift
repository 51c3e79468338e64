/// AES-128 as OSDP's Secure Channel needs it: one block at a time, plus random bytes. ScanLinux
/// implements it with OpenSSL's libcrypto; ScanCore stays pure.
public protocol OSDPCipher: ~Copyable {
  /// AES-128 ECB: encrypts the 16 bytes at `block` in place under the 16-byte `key`.
  func encryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer)
  /// AES-128 ECB: decrypts the 16 bytes at `block` in place under the 16-byte `key`.
  func decryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer)
  /// Fills `count` bytes from a cryptographic random source; false when it could not.
  func fillRandom(_ bytes: UnsafeMutableRawPointer, count: Int) -> Bool
}

/// The peripheral's side of OSDP Secure Channel (SIA OSDP v2.2 section 7 and Annex D): session
/// keys from the SCBK and the panel's random number, the client and server cryptograms, the
/// initial R-MAC, MAC chaining (AES-CBC-MAC, S-MAC1 for all blocks but the last, S-MAC2 for the
/// last, the previous MAC as IV, first 4 bytes sent) and the encrypted data blocks (AES-CBC
/// with S-ENC, IV = the complement of the last MAC of the other side, 0x80 then zero padding).
/// Keys live in one buffer allocated at start and are zeroed on teardown and at the end.
public struct OSDPSecureChannel: ~Copyable {
  /// Where the handshake stands.
  public enum State: Equatable, Sendable {
    case inactive
    case challenged
    case active
  }

  /// The install-mode key every OSDP device knows (SCBK-D: 0x30, 0x31, …, 0x3F).
  public static let defaultKey: [UInt8] = Array(0x30...0x3F)

  private enum Slot: Int, CaseIterable {
    case scbk, scbkDefault, sEnc, sMac1, sMac2, rndA, rndB, cMac, rMac, work, clientCryptogram, clientUID
  }
  private let arena: UnsafeMutableRawBufferPointer
  public private(set) var state = State.inactive
  /// True when this session was set up with the default key (install mode).
  public private(set) var usingDefaultKey = false
  public private(set) var hasKey = false

  public init() {
    arena = .allocate(byteCount: Slot.allCases.count * 16, alignment: 16)
    arena.initializeMemory(as: UInt8.self, repeating: 0)
    for i in 0..<16 { arena[Slot.scbkDefault.rawValue * 16 + i] = Self.defaultKey[i] }
  }

  deinit {
    for i in 0..<arena.count { arena[i] = 0 }
    arena.deallocate()
  }

  private func pointer(_ slot: Slot) -> UnsafeMutableRawPointer { arena.baseAddress! + slot.rawValue * 16 }

  /// The 16 bytes of a session value (for tests against published vectors).
  public func value(_ name: Value) -> [UInt8] {
    let slot: Slot =
      switch name {
      case .sEnc: .sEnc
      case .sMac1: .sMac1
      case .sMac2: .sMac2
      case .clientCryptogram: .clientCryptogram
      case .rMac: .rMac
      case .cMac: .cMac
      }
    return Array(UnsafeRawBufferPointer(start: pointer(slot), count: 16))
  }
  public enum Value { case sEnc, sMac1, sMac2, clientCryptogram, rMac, cMac }

  /// Sets the reader's SCBK (16 bytes), or clears it (`nil`); ends any session.
  public mutating func setKey(_ key: UnsafeRawBufferPointer?) {
    teardown()
    if let key {
      precondition(key.count == 16)
      pointer(.scbk).copyMemory(from: key.baseAddress!, byteCount: 16)
      hasKey = true
    } else {
      pointer(.scbk).initializeMemory(as: UInt8.self, repeating: 0, count: 16)
      hasKey = false
    }
  }

  /// Sets the 8-byte client UID sent in CCRYPT.
  public func setClientUID(_ uid: UnsafeRawBufferPointer) {
    precondition(uid.count == 8)
    pointer(.clientUID).copyMemory(from: uid.baseAddress!, byteCount: 8)
  }

  /// Ends the session and zeroes its keys and MACs (the SCBK stays).
  public mutating func teardown() {
    // sEnc … clientCryptogram are contiguous slots: every session value, not the keys or UID.
    for slot in Slot.sEnc.rawValue...Slot.clientCryptogram.rawValue {
      (arena.baseAddress! + slot * 16).initializeMemory(as: UInt8.self, repeating: 0, count: 16)
    }
    state = .inactive
    usingDefaultKey = false
  }

  /// Derives S-ENC, S-MAC1 and S-MAC2 from the key and the panel's 8 random bytes.
  public mutating func deriveSessionKeys(randomA: UnsafeRawBufferPointer, useDefaultKey: Bool, cipher: borrowing some OSDPCipher & ~Copyable) {
    precondition(randomA.count == 8)
    pointer(.rndA).copyMemory(from: randomA.baseAddress!, byteCount: 8)
    let key = UnsafeRawPointer(pointer(useDefaultKey ? .scbkDefault : .scbk))
    let derivations: InlineArray<3, (Slot, UInt8)> = [(.sEnc, 0x82), (.sMac1, 0x01), (.sMac2, 0x02)]
    for d in derivations.indices {
      let (slot, second) = derivations[d]
      let p = pointer(slot)
      p.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
      p.storeBytes(of: 0x01, as: UInt8.self)
      (p + 1).storeBytes(of: second, as: UInt8.self)
      (p + 2).copyMemory(from: randomA.baseAddress!, byteCount: 6)
      cipher.encryptBlock(key: key, block: p)
    }
    usingDefaultKey = useDefaultKey
  }

  /// Sets the peripheral's random bytes and computes the client cryptogram
  /// AES(S-ENC, RND.A ‖ RND.B). Call after `deriveSessionKeys`.
  public mutating func computeClientCryptogram(randomB: UnsafeRawBufferPointer, cipher: borrowing some OSDPCipher & ~Copyable) {
    precondition(randomB.count == 8)
    pointer(.rndB).copyMemory(from: randomB.baseAddress!, byteCount: 8)
    let c = pointer(.clientCryptogram)
    c.copyMemory(from: pointer(.rndA), byteCount: 8)
    (c + 8).copyMemory(from: pointer(.rndB), byteCount: 8)
    cipher.encryptBlock(key: pointer(.sEnc), block: c)
  }

  /// Answers a CHLNG: derives the session, draws RND.B and writes the CCRYPT data (client UID,
  /// RND.B, client cryptogram: 32 bytes) to `out`. False when no random bytes were available.
  public mutating func challenge(
    randomA: UnsafeRawBufferPointer, useDefaultKey: Bool, cipher: borrowing some OSDPCipher & ~Copyable, into out: UnsafeMutableRawPointer
  ) -> Bool {
    teardown()
    let work = pointer(.work)
    guard cipher.fillRandom(work, count: 8) else { return false }
    deriveSessionKeys(randomA: randomA, useDefaultKey: useDefaultKey, cipher: cipher)
    computeClientCryptogram(randomB: UnsafeRawBufferPointer(start: work, count: 8), cipher: cipher)
    out.copyMemory(from: pointer(.clientUID), byteCount: 8)
    (out + 8).copyMemory(from: pointer(.rndB), byteCount: 8)
    (out + 16).copyMemory(from: pointer(.clientCryptogram), byteCount: 16)
    state = .challenged
    return true
  }

  /// Checks the panel's server cryptogram AES(S-ENC, RND.B ‖ RND.A) in constant time; on
  /// success computes R-MAC-I = AES(S-MAC2, AES(S-MAC1, server cryptogram)) into `out` (16
  /// bytes), which starts the MAC chain, and the session is active.
  public mutating func verifyServerCryptogram(
    _ received: UnsafeRawBufferPointer, cipher: borrowing some OSDPCipher & ~Copyable, rmacInto out: UnsafeMutableRawPointer
  ) -> Bool {
    guard state == .challenged, received.count == 16 else {
      teardown()
      return false
    }
    let w = pointer(.work)
    w.copyMemory(from: pointer(.rndB), byteCount: 8)
    (w + 8).copyMemory(from: pointer(.rndA), byteCount: 8)
    cipher.encryptBlock(key: pointer(.sEnc), block: w)
    var difference: UInt8 = 0
    for i in 0..<16 { difference |= w.load(fromByteOffset: i, as: UInt8.self) ^ received[i] }
    guard difference == 0 else {
      teardown()
      return false
    }
    let r = pointer(.rMac)
    r.copyMemory(from: received.baseAddress!, byteCount: 16)
    cipher.encryptBlock(key: pointer(.sMac1), block: r)
    cipher.encryptBlock(key: pointer(.sMac2), block: r)
    out.copyMemory(from: r, byteCount: 16)
    state = .active
    return true
  }

  /// The MAC over `bytes` (from SOM to the byte before the MAC). A command's MAC chains from
  /// the last reply MAC and becomes the new C-MAC; a reply's chains from the C-MAC and becomes
  /// the new R-MAC. Returns a pointer to the full 16-byte MAC (the first 4 are sent).
  public func mac(_ bytes: UnsafeRawBufferPointer, command: Bool, cipher: borrowing some OSDPCipher & ~Copyable) -> UnsafeRawPointer {
    let iv = pointer(command ? .rMac : .cMac)
    let w = pointer(.work)
    w.copyMemory(from: iv, byteCount: 16)
    let blocks = max(1, (bytes.count + 15) / 16)
    for b in 0..<blocks {
      let start = b * 16
      let n = min(16, bytes.count - start)
      for i in 0..<16 {
        var v: UInt8 = 0
        if i < n { v = bytes[start + i] } else if i == n { v = 0x80 }
        let x = w.load(fromByteOffset: i, as: UInt8.self) ^ v
        w.storeBytes(of: x, toByteOffset: i, as: UInt8.self)
      }
      cipher.encryptBlock(key: pointer(b == blocks - 1 ? .sMac2 : .sMac1), block: w)
    }
    let out = pointer(command ? .cMac : .rMac)
    out.copyMemory(from: w, byteCount: 16)
    return UnsafeRawPointer(out)
  }

  /// Decrypts a command's data block in place (IV = complement of the last R-MAC) and strips
  /// the padding; returns the plain length, or nil when the block or its padding is bad.
  public func decryptCommandData(_ data: UnsafeMutableRawBufferPointer, cipher: borrowing some OSDPCipher & ~Copyable) -> Int? {
    guard data.count % 16 == 0 else { return nil }
    if data.count == 0 { return 0 }
    let previous = pointer(.work)
    for i in 0..<16 { previous.storeBytes(of: ~pointer(.rMac).load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self) }
    var saved = (UInt64(0), UInt64(0))
    for b in 0..<(data.count / 16) {
      let p = data.baseAddress! + b * 16
      withUnsafeMutableBytes(of: &saved) { $0.baseAddress!.copyMemory(from: p, byteCount: 16) }
      cipher.decryptBlock(key: pointer(.sEnc), block: p)
      for i in 0..<16 {
        p.storeBytes(of: p.load(fromByteOffset: i, as: UInt8.self) ^ previous.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
      }
      withUnsafeBytes(of: saved) { previous.copyMemory(from: $0.baseAddress!, byteCount: 16) }
    }
    var end = data.count - 1
    while end > 0 && data[end] == 0 && data.count - end <= 16 { end -= 1 }
    guard data[end] == 0x80, data.count - end <= 16 else { return nil }
    return end
  }

  /// Pads and encrypts a reply's `count` data bytes in place (IV = complement of the C-MAC);
  /// returns the encrypted length, or nil when `capacity` cannot hold the padding.
  public func encryptReplyData(_ data: UnsafeMutableRawPointer, count: Int, capacity: Int, cipher: borrowing some OSDPCipher & ~Copyable) -> Int? {
    let padded = (count / 16 + 1) * 16
    guard padded <= capacity else { return nil }
    data.storeBytes(of: 0x80, toByteOffset: count, as: UInt8.self)
    for i in (count + 1)..<padded { data.storeBytes(of: 0, toByteOffset: i, as: UInt8.self) }
    let previous = pointer(.work)
    for i in 0..<16 { previous.storeBytes(of: ~pointer(.cMac).load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self) }
    for b in 0..<(padded / 16) {
      let p = data + b * 16
      for i in 0..<16 {
        p.storeBytes(of: p.load(fromByteOffset: i, as: UInt8.self) ^ previous.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
      }
      cipher.encryptBlock(key: pointer(.sEnc), block: p)
      previous.copyMemory(from: p, byteCount: 16)
    }
    return padded
  }
}
