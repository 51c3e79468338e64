import CLinux
import Glibc
import ScanCore
@testable import ScanPanelsLinux
import ScanLinux
import ScanTestSupport
import Testing

/// OpenSSL's AES with the peripheral's random bytes fixed to Annex E's RND.B (A0…A7).
struct AnnexECipher: OSDPCipher {
  let aes = OSDPLibcrypto()
  func encryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) { aes.encryptBlock(key: key, block: block) }
  func decryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) { aes.decryptBlock(key: key, block: block) }
  func fillRandom(_ bytes: UnsafeMutableRawPointer, count: Int) -> Bool {
    for i in 0..<count { bytes.storeBytes(of: UInt8(0xA0 + i), toByteOffset: i, as: UInt8.self) }
    return true
  }
}

/// Builds a command packet the way a control panel does (CRC by default).
func osdpCommand(
  address: UInt8 = 0, sequence: UInt8, command: UInt8, data: [UInt8] = [], securityBlock: [UInt8]? = nil, crc: Bool = true, mark: Bool = false
) -> [UInt8] {
  var p: [UInt8] = [0x53, address, 0, 0, sequence | (crc ? 0x04 : 0) | (securityBlock != nil ? 0x08 : 0)]
  if let securityBlock { p += securityBlock }
  p += [command] + data
  let total = p.count + (crc ? 2 : 1)
  p[2] = UInt8(total & 0xFF)
  p[3] = UInt8(total >> 8)
  if crc {
    let c = p.withUnsafeBytes { OSDP.crc16($0) }
    p += [UInt8(c & 0xFF), UInt8(c >> 8)]
  } else {
    p.append(p.withUnsafeBytes { OSDP.checksum($0) })
  }
  return (mark ? [0xFF] : []) + p
}

final class Collected {
  var replies: [[UInt8]] = []
}

func feed<C: OSDPCipher>(_ pd: OSDPPeripheral<C>, _ bytes: [UInt8], now: Int64 = 0, chunk: Int = 1 << 20) -> [[UInt8]] {
  let out = Collected()
  var i = 0
  while i < bytes.count {
    let end = min(bytes.count, i + chunk)
    Array(bytes[i..<end]).withUnsafeBytes { b in pd.receive(b, nowMilliseconds: now) { out.replies.append(Array($0)) } }
    i = end
  }
  return out.replies
}

@Suite struct OSDPTests {
  // MARK: Published vectors (SIA OSDP v2.2, Annex E, as quoted by libosdp's test-sc-sia-vectors.c)

  @Test("CRC-16 and checksum: the specification's examples")
  func checkCharacters() {
    let crc1: [UInt8] = [0x53, 0x7F, 0x0D, 0x00, 0x04, 0x6E, 0x00, 0x80, 0x25, 0x00, 0x00]
    let crc2: [UInt8] = [0x53, 0x00, 0x09, 0x00, 0x04, 0x61, 0x00]
    #expect(crc1.withUnsafeBytes { OSDP.crc16($0) } == 0x386E)  // sent 6E 38
    #expect(crc2.withUnsafeBytes { OSDP.crc16($0) } == 0x66C0)  // sent C0 66
    let sum1: [UInt8] = [0x53, 0x7F, 0x0C, 0x00, 0x00, 0x6E, 0x00, 0x80, 0x25, 0x00, 0x00]
    let sum2: [UInt8] = [0x53, 0x00, 0x08, 0x00, 0x00, 0x61, 0x00]
    #expect(sum1.withUnsafeBytes { OSDP.checksum($0) } == 0x0F)
    #expect(sum2.withUnsafeBytes { OSDP.checksum($0) } == 0x44)
  }

  static let rndA: [UInt8] = [0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7]
  static let sMac1: [UInt8] = [0x5E, 0x86, 0xC6, 0x76, 0x60, 0x3B, 0xDE, 0xE2, 0xD8, 0xBE, 0xAF, 0xE1, 0x78, 0x63, 0x73, 0x32]
  static let sMac2: [UInt8] = [0x6F, 0xDA, 0x86, 0xE8, 0x57, 0x77, 0x7E, 0x81, 0x13, 0x20, 0x35, 0x75, 0x82, 0x39, 0x17, 0x2E]
  static let sEnc: [UInt8] = [0xBF, 0x8D, 0xC2, 0xA8, 0x32, 0x9A, 0xCB, 0x8C, 0x67, 0xC6, 0xD0, 0xCD, 0x9A, 0x45, 0x16, 0x82]
  static let serverCryptogram: [UInt8] = [0x26, 0xD3, 0x35, 0x6E, 0x07, 0x76, 0x2D, 0x26, 0x28, 0x01, 0xFC, 0x8E, 0x66, 0x65, 0xA8, 0x91]
  static let clientCryptogram: [UInt8] = [0xFD, 0xE5, 0xD2, 0xF4, 0x28, 0xEC, 0x16, 0x31, 0x24, 0x71, 0xEA, 0x3C, 0x02, 0xBD, 0x77, 0x96]
  static let rmacI: [UInt8] = [0xB2, 0xA3, 0x00, 0x57, 0xEB, 0x98, 0xBA, 0x22, 0x29, 0xEC, 0x1F, 0x87, 0x56, 0x62, 0xB5, 0x24]

  @Test("SCBK-D session keys and cryptograms: the specification's example")
  func sessionKeys() {
    var sc = OSDPSecureChannel()
    let cipher = AnnexECipher()
    Self.rndA.withUnsafeBytes { sc.deriveSessionKeys(randomA: $0, useDefaultKey: true, cipher: cipher) }
    #expect(sc.value(.sEnc) == Self.sEnc)
    #expect(sc.value(.sMac1) == Self.sMac1)
    #expect(sc.value(.sMac2) == Self.sMac2)
    let rndB: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7]
    rndB.withUnsafeBytes { sc.computeClientCryptogram(randomB: $0, cipher: cipher) }
    #expect(sc.value(.clientCryptogram) == Self.clientCryptogram)
  }

  @Test("the peripheral answers CHLNG and SCRYPT with the specification's cryptogram and R-MAC-I (install mode)")
  func handshakeThroughThePeripheral() {
    var settings = OSDPPeripheralSettings()
    settings.installMode = true
    let pd = OSDPPeripheral(settings: settings, key: nil, cipher: AnnexECipher())
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    let ccrypt = feed(pd, osdpCommand(sequence: 1, command: 0x76, data: Self.rndA, securityBlock: [3, 0x11, 0]))
    #expect(ccrypt.count == 1)
    let r = ccrypt.first ?? []
    // header(5) SCB [3, 0x12, 0] reply 0x76, UID(8) RND.B(8) cryptogram(16), CRC(2)
    #expect(r.count == 5 + 3 + 1 + 32 + 2)
    if r.count == 43 {
      #expect(Array(r[5..<9]) == [3, 0x12, 0, 0x76])
      #expect(Array(r[17..<25]) == [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7])
      #expect(Array(r[25..<41]) == Self.clientCryptogram)
    }
    let rmac = feed(pd, osdpCommand(sequence: 2, command: 0x77, data: Self.serverCryptogram, securityBlock: [3, 0x13, 0]))
    let m = rmac.first ?? []
    #expect(m.count == 5 + 3 + 1 + 16 + 2)
    if m.count == 27 {
      #expect(Array(m[5..<9]) == [3, 0x14, 1, 0x78])
      #expect(Array(m[9..<25]) == Self.rmacI)
    }
    #expect(pd.secureChannelActive)
    #expect(pd.secureChannelUsesDefaultKey)
  }

  @Test("without install mode the default key is refused (NAK 5), and a wrong server cryptogram too")
  func defaultKeyRefused() {
    let key = [UInt8](repeating: 7, count: 16)
    let pd = key.withUnsafeBytes { OSDPPeripheral(settings: OSDPPeripheralSettings(), key: $0, cipher: AnnexECipher()) }
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    let nak = feed(pd, osdpCommand(sequence: 1, command: 0x76, data: Self.rndA, securityBlock: [3, 0x11, 0])).first ?? []
    #expect(Array(nak.dropFirst(5).prefix(2)) == [0x41, 5])
    _ = feed(pd, osdpCommand(sequence: 2, command: 0x76, data: Self.rndA, securityBlock: [3, 0x11, 1]))
    let bad = feed(pd, osdpCommand(sequence: 3, command: 0x77, data: Self.serverCryptogram, securityBlock: [3, 0x13, 1])).first ?? []
    #expect(Array(bad.dropFirst(5).prefix(2)) == [0x41, 5])
    #expect(!pd.secureChannelActive)
  }

  // MARK: Install mode ends once a key exists

  /// A panel's CHLNG with the default key (SCB data 0) or the reader's own (1).
  static func challenge(sequence: UInt8, defaultKey: Bool) -> [UInt8] {
    osdpCommand(sequence: sequence, command: 0x76, data: rndA, securityBlock: [3, 0x11, defaultKey ? 0 : 1])
  }

  /// Function 9 of osdp_PDCAP (communication security): its third byte (bit 0) says whether
  /// the default key is accepted.
  static func capDefaultKeyBit(_ pd: OSDPPeripheral<AnnexECipher>, sequence: UInt8) -> UInt8? {
    let r = feed(pd, osdpCommand(sequence: sequence, command: 0x62, data: [0])).first ?? []
    guard r.count > 6, r[5] == 0x46 else { return nil }
    var i = 6
    while i + 2 < r.count - 2 {
      if r[i] == 9 { return r[i + 2] }
      i += 3
    }
    return nil
  }

  @Test("install mode with a key given at start: the default key is refused (NAK 5), the key works, CAP and the flags say so")
  func installModeEndsWithAKeyAtStart() {
    var settings = OSDPPeripheralSettings()
    settings.installMode = true
    let key: [UInt8] = (0..<16).map { UInt8(0x40 + $0) }
    let pd = key.withUnsafeBytes { OSDPPeripheral(settings: settings, key: $0, cipher: AnnexECipher()) }
    #expect(!pd.installMode)
    #expect(pd.installModeIgnored)
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    #expect(Self.capDefaultKeyBit(pd, sequence: 1) == 0)
    // An impersonator that knows only SCBK-D: refused, no session.
    let nak = feed(pd, Self.challenge(sequence: 2, defaultKey: true)).first ?? []
    #expect(Array(nak.dropFirst(5).prefix(2)) == [0x41, 5])
    #expect(!pd.secureChannelActive)
    // The panel that holds the installed key gets its session.
    let panel = PanelSession(key: key, defaultKey: false)
    let ccrypt = feed(pd, Self.challenge(sequence: 3, defaultKey: false)).first ?? []
    #expect(ccrypt.count == 43 && Array(ccrypt[25..<41]) == panel.clientCryptogram)
    let rmac = feed(pd, osdpCommand(sequence: 1, command: 0x77, data: panel.serverCryptogram, securityBlock: [3, 0x13, 1])).first ?? []
    #expect(Array(rmac.dropFirst(5).prefix(4)) == [3, 0x14, 1, 0x78])
    #expect(pd.secureChannelActive && !pd.secureChannelUsesDefaultKey)
  }

  @Test("install mode without a key: the default key works until a KEYSET, which ends install mode at once")
  func keysetEndsInstallModeAtOnce() {
    var settings = OSDPPeripheralSettings()
    settings.installMode = true
    let pd = OSDPPeripheral(settings: settings, key: nil, cipher: AnnexECipher())
    #expect(pd.installMode && !pd.installModeIgnored)
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    #expect(Self.capDefaultKeyBit(pd, sequence: 1) == 1)
    var panel = PanelSession(key: OSDPSecureChannel.defaultKey, defaultKey: true)
    _ = feed(pd, Self.challenge(sequence: 2, defaultKey: true))
    _ = feed(pd, osdpCommand(sequence: 3, command: 0x77, data: panel.serverCryptogram, securityBlock: [3, 0x13, 0]))
    #expect(pd.secureChannelActive && pd.secureChannelUsesDefaultKey)
    let newKey: [UInt8] = (0..<16).map { UInt8(0x90 ^ $0) }
    let keyset = panel.command(sequence: 1, command: 0x75, data: [1, 16] + newKey)
    let ack = feed(pd, keyset).first ?? []
    #expect(panel.replyCode(ack) == 0x40)
    #expect(pd.takeAction() == .secureChannel(up: true))
    #expect(pd.takeAction() == .keyset)
    #expect(pd.withNewKey { Array($0) } == newKey)
    #expect(!pd.secureChannelActive)
    // At once: no restart, the same process. The default key is refused, the new key works.
    #expect(!pd.installMode && pd.installModeIgnored)
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    let nak = feed(pd, Self.challenge(sequence: 1, defaultKey: true)).first ?? []
    #expect(Array(nak.dropFirst(5).prefix(2)) == [0x41, 5])
    #expect(Self.capDefaultKeyBit(pd, sequence: 2) == 0)
    let next = PanelSession(key: newKey, defaultKey: false)
    _ = feed(pd, Self.challenge(sequence: 3, defaultKey: false))
    _ = feed(pd, osdpCommand(sequence: 1, command: 0x77, data: next.serverCryptogram, securityBlock: [3, 0x13, 1]))
    #expect(pd.secureChannelActive && !pd.secureChannelUsesDefaultKey)
  }

  @Test("the OSDP link: a key in scbk_file with install_mode on refuses the default key and says so on STATUS")
  func linkIgnoresInstallModeWithAKeyFile() throws {
    let dir = temporaryDirectory("osdp-install")
    defer { removeTree(dir) }
    let keyHex = "404142434445464748494a4b4c4d4e4f"
    let keyPath = dir + "/scbk"
    try SecretFile.create(keyPath, Array((keyHex + "\n").utf8))
    let pty = try PseudoTerminal()
    var settings = PanelSettings()
    settings.mode = .panel
    settings.osdpPort = pty.replicaPath
    settings.scbkFile = keyPath
    settings.installMode = true
    settings.osdpRS485 = false
    let link = try OSDPPanelLink(settings: settings, ring: nil, clock: SystemMonotonicClock(), wall: SystemWallClock())
    #expect(!link.peripheral.installMode)
    let status = link.statusLine(now: SystemMonotonicClock().now())
    #expect(status.contains("install_mode=\"ignored: a key is installed\""))
    #expect(!status.contains("install_mode=on"))
    _ = feed(link.peripheral, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    let nak = feed(link.peripheral, Self.challenge(sequence: 1, defaultKey: true)).first ?? []
    #expect(Array(nak.dropFirst(5).prefix(2)) == [0x41, 5])
    #expect(!link.peripheral.secureChannelActive)

    // No key file yet: install mode is on, and STATUS says that too.
    settings.scbkFile = dir + "/not-yet"
    let installing = try OSDPPanelLink(settings: settings, ring: nil, clock: SystemMonotonicClock(), wall: SystemWallClock())
    #expect(installing.peripheral.installMode)
    #expect(installing.statusLine(now: SystemMonotonicClock().now()).contains(" install_mode=on"))
  }

  @Test("a KEYSET's key is stored durably as a secret file (0600) replacing the old one")
  func keysetKeyStored() throws {
    let dir = temporaryDirectory("osdp-keyset")
    defer { removeTree(dir) }
    let path = dir + "/scbk"
    let first: [UInt8] = (0..<16).map { UInt8($0) }
    let second: [UInt8] = (0..<16).map { UInt8(0xF0 | $0) }
    try first.withUnsafeBytes { try OSDPPanelLink.storeKey($0, path: path) }
    try second.withUnsafeBytes { try OSDPPanelLink.storeKey($0, path: path) }
    #expect(try OSDPPanelLink.readKey(path) == second)
    var st = stat()
    #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
    #expect(!fileExists(path + ".next") && !fileExists(path + ".next.new"))
  }

  // MARK: Framing, sequence numbers, NAKs

  @Test("ID and CAP replies; the same at every chunk size and after noise", arguments: [1, 2, 3, 7, 64])
  func idAndCapAtEveryChunkSize(chunk: Int) {
    var settings = OSDPPeripheralSettings()
    settings.address = 5
    settings.vendorCode = 0x0A0B0C
    settings.serialNumber = 0x01020304
    let pd = OSDPPeripheral(settings: settings, key: nil, cipher: AnnexECipher())
    let stream: [UInt8] =
      [0x00, 0x53, 0x99, 0xFF] + osdpCommand(address: 5, sequence: 0, command: 0x61, data: [0], mark: true)
      + osdpCommand(address: 5, sequence: 1, command: 0x62, data: [0])
    let replies = feed(pd, stream, chunk: chunk)
    #expect(replies.count == 2)
    let id = replies.first ?? []
    #expect(id.first == 0xFF)  // mirrors the mark byte
    #expect(Array(id.dropFirst(1).prefix(2)) == [0x53, 0x85])
    #expect(Array(id.dropFirst(6).prefix(5)) == [0x45, 0x0C, 0x0B, 0x0A, 1])
    let cap = replies.last ?? []
    #expect(cap.dropFirst(5).first == 0x46)
    if let c = replies.last, c.count > 2 {
      let body = Array(c[0..<(c.count - 2)])
      let crc = body.withUnsafeBytes { OSDP.crc16($0) }
      #expect(c[c.count - 2] == UInt8(crc & 0xFF) && c[c.count - 1] == UInt8(crc >> 8))
    }
  }

  @Test("sequence: a repeat gets the same reply byte for byte, a skip gets NAK 4, 0 resets")
  func sequenceNumbers() throws {
    let pd = OSDPPeripheral(settings: OSDPPeripheralSettings(), key: nil, cipher: AnnexECipher())
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    pd.queueCard(try CardNumber(format: .h10301, facility: 0xD4, number: 0x1B81))
    let first = feed(pd, osdpCommand(sequence: 1, command: 0x60))
    let again = feed(pd, osdpCommand(sequence: 1, command: 0x60))
    #expect(first == again)
    #expect(pd.cardsSent == 1)
    // RAW: reader 0, format 1, 26 bits, the CN56 example packed.
    #expect(Array((first.first ?? []).dropFirst(5).prefix(9)) == [0x50, 0, 1, 26, 0, 0xEA, 0x0D, 0xC0, 0x80])
    let skip = feed(pd, osdpCommand(sequence: 3, command: 0x60)).first ?? []
    #expect(Array(skip.dropFirst(5).prefix(2)) == [0x41, 4])
    let reset = feed(pd, osdpCommand(sequence: 0, command: 0x60)).first ?? []
    #expect(reset.dropFirst(5).first == 0x40)
  }

  @Test("keys typed go to the panel as osdp_KEYPAD: reader 0, count, '0'-'9' in ASCII, 0x0D enter, 0x7F clear; a card goes first")
  func keypadReplies() throws {
    let pd = OSDPPeripheral(settings: OSDPPeripheralSettings(), key: nil, cipher: AnnexECipher())
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    for key in [KeypadKey.digit(2), .digit(4), .clear, .digit(6), .digit(8), .enter] { #expect(pd.queueKey(key.osdpByte, nowMilliseconds: 100)) }
    pd.queueCard(try CardNumber(format: .h10301, facility: 1, number: 2), nowMilliseconds: 100)
    let card = feed(pd, osdpCommand(sequence: 1, command: 0x60), now: 200).first ?? []
    #expect(card.dropFirst(5).first == 0x50, "the card first")
    let keys = feed(pd, osdpCommand(sequence: 2, command: 0x60), now: 300).first ?? []
    let data = Array(keys.dropFirst(5).prefix(9))
    #expect(data == [0x53, 0, 6, 0x32, 0x34, 0x7F, 0x36, 0x38, 0x0D])
    // A repeated poll (the panel missed the reply) gets the same keys again, byte for byte.
    #expect(feed(pd, osdpCommand(sequence: 2, command: 0x60), now: 350).first == keys)
    #expect((feed(pd, osdpCommand(sequence: 3, command: 0x60), now: 400).first ?? []).dropFirst(5).first == 0x40)
    #expect(pd.keysSent == 6)
    // Not a key: refused. A full queue: refused and counted. Keys nobody polled for in 5 s: dropped.
    #expect(!pd.queueKey(0x41))
    for _ in 0..<OSDPPeripheral<AnnexECipher>.keysMax { pd.queueKey(0x31, nowMilliseconds: 1_000) }
    #expect(!pd.queueKey(0x31, nowMilliseconds: 1_000))
    #expect((feed(pd, osdpCommand(sequence: 1, command: 0x60), now: 7_000).first ?? []).dropFirst(5).first == 0x40)
    #expect(pd.keysSent == 6 && pd.keysDropped == 2 + OSDPPeripheral<AnnexECipher>.keysMax)
  }

  @Test("bad CRC gets NAK 1, unknown command NAK 3, wrong length NAK 2; checksum packets answered with a checksum")
  func naks() {
    let pd = OSDPPeripheral(settings: OSDPPeripheralSettings(), key: nil, cipher: AnnexECipher())
    var broken = osdpCommand(sequence: 0, command: 0x61, data: [0])
    broken[broken.count - 1] ^= 0xFF
    #expect(Array((feed(pd, broken).first ?? []).dropFirst(5).prefix(2)) == [0x41, 1])
    #expect(Array((feed(pd, osdpCommand(sequence: 0, command: 0x01)).first ?? []).dropFirst(5).prefix(2)) == [0x41, 3])
    #expect(Array((feed(pd, osdpCommand(sequence: 0, command: 0x61)).first ?? []).dropFirst(5).prefix(2)) == [0x41, 2])
    let sum = feed(pd, osdpCommand(sequence: 0, command: 0x60, crc: false)).first ?? []
    #expect(sum.count == 7)
    #expect(sum.dropFirst(4).first.map { $0 & 0x04 } == 0)
    // Another address, and another reader's reply: silence.
    #expect(feed(pd, osdpCommand(address: 9, sequence: 0, command: 0x60)).isEmpty)
    #expect(feed(pd, osdpCommand(address: 0x80, sequence: 0, command: 0x40)).isEmpty)
  }

  @Test("enforce-secure: no card and no command in the clear (NAK 6), ID and CAP still answered")
  func enforceSecure() throws {
    var settings = OSDPPeripheralSettings()
    settings.enforceSecure = true
    let pd = OSDPPeripheral(settings: settings, key: nil, cipher: AnnexECipher())
    pd.queueCard(try CardNumber(format: .h10301, facility: 1, number: 2))
    #expect((feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0])).first ?? []).dropFirst(5).first == 0x45)
    for (seq, cmd, data) in [(UInt8(1), UInt8(0x60), [UInt8]()), (2, 0x69, [UInt8](repeating: 0, count: 14))] {
      let r = feed(pd, osdpCommand(sequence: seq, command: cmd, data: data)).first ?? []
      #expect(Array(r.dropFirst(5).prefix(2)) == [0x41, 6])
    }
    #expect(pd.cardsSent == 0)
    #expect(pd.takeAction() == nil)
  }

  @Test("LED, BUZ and OUT become actions; OUT is answered with the output status")
  func outputs() {
    let pd = OSDPPeripheral(settings: OSDPPeripheralSettings(), key: nil, cipher: AnnexECipher())
    _ = feed(pd, osdpCommand(sequence: 0, command: 0x61, data: [0]))
    let led: [UInt8] = [0, 0, 2, 5, 5, 2, 0, 30, 0, 1, 0, 0, 1, 0]
    #expect((feed(pd, osdpCommand(sequence: 1, command: 0x69, data: led)).first ?? []).dropFirst(5).first == 0x40)
    #expect(pd.takeAction() == .led(number: 0, color: 2, offColor: 0, onTenths: 5, offTenths: 5, temporary: true, timerTenths: 30))
    _ = feed(pd, osdpCommand(sequence: 2, command: 0x6A, data: [0, 2, 3, 1, 2]))
    #expect(pd.takeAction() == .buzzer(tone: 2, onTenths: 3, offTenths: 1, count: 2))
    let out = feed(pd, osdpCommand(sequence: 3, command: 0x68, data: [0, 2, 0, 0])).first ?? []
    #expect(Array(out.dropFirst(5).prefix(2)) == [0x4A, 1])
    #expect(pd.takeAction() == .output(number: 0, controlCode: 2, timerTenths: 0))
    #expect(pd.output(0))
    let bad = feed(pd, osdpCommand(sequence: 1, command: 0x68, data: [3, 2, 0, 0])).first ?? []
    #expect(Array(bad.dropFirst(5).prefix(2)) == [0x41, 9])
  }

  @Test("random bytes and truncated packets never crash the peripheral and never grow it")
  func noise() {
    let pd = OSDPPeripheral(settings: OSDPPeripheralSettings(), key: nil, cipher: AnnexECipher())
    var rng = UInt64(0x1234_5678)
    var bytes = [UInt8](repeating: 0, count: 20_000)
    for i in bytes.indices {
      rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      bytes[i] = i % 97 == 0 ? 0x53 : UInt8(truncatingIfNeeded: rng >> 33)
    }
    _ = feed(pd, bytes, chunk: 333)
    let whole = osdpCommand(sequence: 0, command: 0x61, data: [0])
    _ = feed(pd, Array(whole.prefix(6)))
    pd.tick(nowMilliseconds: 1_000)
    let after = feed(pd, whole, now: 1_000)
    #expect((after.last ?? []).dropFirst(5).first == 0x45)
  }
}

/// The panel's side of a Secure Channel session, built on the same `OSDPSecureChannel` (the
/// session keys, cryptograms and MAC chain are symmetric) with Annex E's fixed RND.B: enough to
/// send a MAC'd, encrypted command such as KEYSET.
struct PanelSession: ~Copyable {
  var channel: OSDPSecureChannel
  let cipher = AnnexECipher()
  let clientCryptogram: [UInt8]
  let serverCryptogram: [UInt8]

  init(key: [UInt8], defaultKey: Bool) {
    let cipher = AnnexECipher()
    var session = OSDPSecureChannel()
    if !defaultKey { key.withUnsafeBytes { session.setKey($0) } }
    var out = [UInt8](repeating: 0, count: 32)
    _ = out.withUnsafeMutableBytes { o in
      OSDPTests.rndA.withUnsafeBytes { session.challenge(randomA: $0, useDefaultKey: defaultKey, cipher: cipher, into: o.baseAddress!) }
    }
    // The server cryptogram: AES(S-ENC, RND.B ‖ RND.A).
    var server = Array(out[8..<16]) + OSDPTests.rndA
    let sEnc = session.value(.sEnc)
    sEnc.withUnsafeBytes { k in server.withUnsafeMutableBytes { cipher.encryptBlock(key: k.baseAddress!, block: $0.baseAddress!) } }
    var rmac = [UInt8](repeating: 0, count: 16)
    let verified = server.withUnsafeBytes { s in
      rmac.withUnsafeMutableBytes { session.verifyServerCryptogram(s, cipher: cipher, rmacInto: $0.baseAddress!) }
    }
    precondition(verified)
    clientCryptogram = Array(out[16..<32])
    serverCryptogram = server
    channel = session
  }

  /// A command with SCB 0x17: data encrypted (AES-CBC under S-ENC, IV = the complement of the
  /// last R-MAC, 0x80 padding), then the C-MAC's first 4 bytes and the CRC.
  mutating func command(sequence: UInt8, command: UInt8, data: [UInt8]) -> [UInt8] {
    var plain = data + [0x80]
    while plain.count % 16 != 0 { plain.append(0) }
    var previous = channel.value(.rMac).map { ~$0 }
    let sEnc = channel.value(.sEnc)
    var encrypted: [UInt8] = []
    for b in 0..<(plain.count / 16) {
      var block = (0..<16).map { plain[b * 16 + $0] ^ previous[$0] }
      sEnc.withUnsafeBytes { k in block.withUnsafeMutableBytes { cipher.encryptBlock(key: k.baseAddress!, block: $0.baseAddress!) } }
      encrypted += block
      previous = block
    }
    var p: [UInt8] = [0x53, 0, 0, 0, sequence | 0x04 | 0x08, 2, 0x17, command] + encrypted
    let total = p.count + 4 + 2
    p[2] = UInt8(total & 0xFF)
    p[3] = UInt8(total >> 8)
    let mac = p.withUnsafeBytes { Array(UnsafeRawBufferPointer(start: channel.mac($0, command: true, cipher: cipher), count: 4)) }
    p += mac
    let crc = p.withUnsafeBytes { OSDP.crc16($0) }
    return p + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
  }

  /// A reply's code after its MAC is checked (the R-MAC chain advances), or nil.
  mutating func replyCode(_ reply: [UInt8]) -> UInt8? {
    guard reply.count >= 14, reply[4] & 0x08 != 0 else { return nil }
    let macStart = reply.count - 2 - 4
    let mac = reply.withUnsafeBytes { r in
      Array(UnsafeRawBufferPointer(start: channel.mac(UnsafeRawBufferPointer(rebasing: r[0..<macStart]), command: false, cipher: cipher), count: 4))
    }
    guard Array(reply[macStart..<(macStart + 4)]) == mac else { return nil }
    return reply[5 + Int(reply[5])]
  }
}

/// A pseudo-terminal pair: the replica's path is a serial port the OSDP link can open.
final class PseudoTerminal {
  let controller: Int32
  let replicaPath: String

  init() throws(FileError) {
    var name = [CChar](repeating: 0, count: 128)
    controller = sg_open_pty(&name, name.count)
    guard controller >= 0 else { throw FileError(path: "/dev/ptmx", reason: "no pseudo-terminal") }
    replicaPath = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
  }

  deinit { close(controller) }
}
