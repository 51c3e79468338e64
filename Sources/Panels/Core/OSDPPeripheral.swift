import ScanAccess

/// What this reader tells a panel about itself (osdp_ID) and how it answers on the bus.
public struct OSDPPeripheralSettings: Equatable, Sendable {
  /// The bus address, 0–126 (127 is broadcast).
  public var address: UInt8 = 0
  /// The line's baud rate (what a refused osdp_COMSET's reply names as kept).
  public var baud: UInt32 = 9_600
  /// Accept a Secure Channel set up with the default key (SCBK-D) so a panel can install this
  /// reader's key with KEYSET. Off unless configured, and only while the reader has no key: a
  /// key given at start ends it before the first packet, a KEYSET ends it at once.
  public var installMode = false
  /// Answer nothing but ID, CAP and the Secure Channel handshake until a secure session is up:
  /// no card data, and no command acted on, in the clear.
  public var enforceSecure = false
  /// IEEE OUI-style vendor code (24 bits), model, version, serial number and firmware version
  /// (major, minor, build) reported in osdp_PDID.
  public var vendorCode: UInt32 = 0
  public var model: UInt8 = 1
  public var version: UInt8 = 1
  public var serialNumber: UInt32 = 0
  public var firmware: (UInt8, UInt8, UInt8) = (0, 0, 0)

  public init() {}

  public static func == (a: Self, b: Self) -> Bool {
    a.address == b.address && a.baud == b.baud && a.installMode == b.installMode && a.enforceSecure == b.enforceSecure && a.vendorCode == b.vendorCode
      && a.model == b.model && a.version == b.version && a.serialNumber == b.serialNumber && a.firmware == b.firmware
  }
}

/// Something the panel asked the reader to do, for the owner of the outputs to act on.
public enum OSDPAction: Equatable, Sendable {
  /// Reader LED `number`: `color` (OSDP colors: 0 black/off, 1 red, 2 green, 3 amber, 4 blue…)
  /// for `onTenths`, `offTenths` for the off phase (0: steady); `temporary` with its timer.
  case led(number: UInt8, color: UInt8, offColor: UInt8, onTenths: UInt8, offTenths: UInt8, temporary: Bool, timerTenths: UInt16)
  /// Buzzer: `tone` 0 none, 1 off, 2 on (default tone); on/off times in 100 ms units; `count` 0 = until told.
  case buzzer(tone: UInt8, onTenths: UInt8, offTenths: UInt8, count: UInt8)
  /// Output `number`: OSDP control code 0–6 and timer in 100 ms units.
  case output(number: UInt8, controlCode: UInt8, timerTenths: UInt16)
  /// New address and baud rate (after the COM reply went out).
  case comset(address: UInt8, baud: UInt32)
  /// A new SCBK arrived over Secure Channel; read it with `withNewKey` and store it.
  case keyset
  /// The secure session came up (`true`) or ended.
  case secureChannel(up: Bool)
}

/// The peripheral (PD) side of OSDP v2.2 as a pure state machine: bytes in, replies out through
/// a closure, actions and cards through fixed queues. Everything it holds is allocated in
/// `init`; handling a packet allocates nothing.
///
/// Sequence numbers: 0 resets the link (and ends a secure session); then 1, 2, 3, 1…; the same
/// number with the same command again makes the reader resend its last reply byte for byte
/// (the MAC chain is not advanced twice); any other number is NAKed (code 4).
public final class OSDPPeripheral<Cipher: OSDPCipher> {
  public private(set) var settings: OSDPPeripheralSettings
  public let cipher: Cipher
  private var framer: OSDPFramer
  private var secure = OSDPSecureChannel()
  private let tx: UnsafeMutableRawBufferPointer
  private var txCount = 0
  private var lastReplyCount = 0
  private var lastCommand: UInt8 = 0
  private var lastSequence = -1
  private let newKey: UnsafeMutableRawBufferPointer
  private var keysetPending = false
  private var comsetPending: (UInt8, UInt32)? = nil

  // Fixed queues in buffers allocated once (an InlineArray stored in a class is reached through
  // an accessor that allocated a coroutine frame per call in a debug build).
  private let actions: UnsafeMutableBufferPointer<OSDPAction?>
  private var actionHead = 0
  private var actionCount = 0
  private let cards: UnsafeMutableBufferPointer<CardNumber?>
  private let cardTimes: UnsafeMutableBufferPointer<Int64>
  /// A card not polled within this long is dropped: a panel must never open a door for a pass
  /// shown long ago (the link was down, Secure Channel not up yet).
  public static var cardMaxAgeMilliseconds: Int64 { 5_000 }
  public private(set) var cardsExpired = 0
  private var cardHead = 0
  private var cardCount = 0
  private let outputOn: UnsafeMutableBufferPointer<Bool>

  // Link status, for the console and the event log.
  public private(set) var lastPollMilliseconds: Int64? = nil
  public private(set) var polls = 0
  public private(set) var packets = 0
  public private(set) var naksSent = 0
  public private(set) var lastNak: OSDP.NakCode? = nil
  public private(set) var retransmits = 0
  public private(set) var cardsSent = 0
  public private(set) var cardsDropped = 0
  public private(set) var actionsDropped = 0
  public private(set) var lastCardSent: CardNumber? = nil
  public var secureChannelActive: Bool { secure.state == .active }
  public var secureChannelUsesDefaultKey: Bool { secure.usingDefaultKey }
  public var hasKey: Bool { secure.hasKey }
  public var badChecks: Int { framer.badChecks }
  public var bytesDiscarded: Int { framer.bytesDiscarded }
  /// Whether the default key (SCBK-D) is accepted now: install mode is configured and no key is
  /// installed. Once the reader has a key (given at start, or by a panel's KEYSET) the default
  /// key is refused whatever the settings say.
  public var installMode: Bool { settings.installMode && !secure.hasKey }
  /// Install mode is configured but has no effect because a key is installed (for STATUS and
  /// check-config: "install mode ignored: a key is installed").
  public var installModeIgnored: Bool { settings.installMode && secure.hasKey }

  /// Cards waiting for a POLL.
  public static var cardsMax: Int { 4 }
  public static var outputsMax: Int { 1 }

  public init(settings: OSDPPeripheralSettings, key: UnsafeRawBufferPointer?, cipher: Cipher) {
    precondition(settings.address < OSDP.broadcastAddress)
    self.settings = settings
    self.cipher = cipher
    framer = OSDPFramer()
    tx = .allocate(byteCount: OSDP.packetBytesMax + 32, alignment: 16)
    tx.initializeMemory(as: UInt8.self, repeating: 0)
    newKey = .allocate(byteCount: 16, alignment: 16)
    newKey.initializeMemory(as: UInt8.self, repeating: 0)
    actions = .allocate(capacity: 8)
    actions.initialize(repeating: nil)
    cards = .allocate(capacity: Self.cardsMax)
    cards.initialize(repeating: nil)
    cardTimes = .allocate(capacity: Self.cardsMax)
    cardTimes.initialize(repeating: 0)
    outputOn = .allocate(capacity: Self.outputsMax)
    outputOn.initialize(repeating: false)
    secure.setKey(key)
    var uid = (UInt64(0))
    // Client UID: vendor code (2 bytes), model, version, serial number (4 bytes), as libosdp and
    // commercial readers build it.
    withUnsafeMutableBytes(of: &uid) { u in
      u[0] = UInt8(truncatingIfNeeded: settings.vendorCode)
      u[1] = UInt8(truncatingIfNeeded: settings.vendorCode >> 8)
      u[2] = settings.model
      u[3] = settings.version
      for i in 0..<4 { u[4 + i] = UInt8(truncatingIfNeeded: settings.serialNumber >> (8 * i)) }
      secure.setClientUID(UnsafeRawBufferPointer(u))
    }
  }

  deinit {
    for i in 0..<newKey.count { newKey[i] = 0 }
    newKey.deallocate()
    tx.deallocate()
    actions.deallocate()
    cards.deallocate()
    cardTimes.deallocate()
    outputOn.deallocate()
  }

  // MARK: Owner's side

  /// Queues a card for the next POLL; false (and counted) when the queue is full.
  @discardableResult
  public func queueCard(_ card: CardNumber, nowMilliseconds: Int64 = 0) -> Bool {
    guard cardCount < Self.cardsMax else {
      cardsDropped += 1
      return false
    }
    cards[(cardHead + cardCount) % Self.cardsMax] = card
    cardTimes[(cardHead + cardCount) % Self.cardsMax] = nowMilliseconds
    cardCount += 1
    return true
  }

  /// The oldest action the panel asked for, if any.
  public func takeAction() -> OSDPAction? {
    guard actionCount > 0 else { return nil }
    let a = actions[actionHead]
    actions[actionHead] = nil
    actionHead = (actionHead + 1) % 8
    actionCount -= 1
    return a
  }

  /// Lends the SCBK a KEYSET delivered (16 bytes) to `body`.
  public func withNewKey<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { body(UnsafeRawBufferPointer(newKey)) }

  /// Whether output `number` is on (as the panel last set it).
  public func output(_ number: Int) -> Bool { number < Self.outputsMax ? outputOn[number] : false }

  /// Drops a half-received packet the panel gave up on.
  public func tick(nowMilliseconds: Int64) { framer.expire(nowMilliseconds: nowMilliseconds) }

  /// Feeds received bytes; every reply goes to `send` (whole packets, in order).
  public func receive(_ bytes: UnsafeRawBufferPointer, nowMilliseconds: Int64, send: (UnsafeRawBufferPointer) -> Void) {
    var offset = 0
    repeat {
      let n = min(bytes.count - offset, OSDPFramer.capacity - framer.count)
      framer.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]), nowMilliseconds: nowMilliseconds)
      offset += n
      drain(nowMilliseconds: nowMilliseconds, send: send)
    } while offset < bytes.count
  }

  private func drain(nowMilliseconds: Int64, send: (UnsafeRawBufferPointer) -> Void) {
    for _ in 0..<OSDPFramer.capacity {
      switch framer.next() {
      case .needMore: return
      case .badCheck(let address, let control):
        // Only a packet that names this reader exactly gets a NAK; sent in the clear, since
        // its MAC (if any) was never checked.
        if address == settings.address {
          txCount = 0
          nakPlain(.checkCharacter, control: control, mark: false)
          send(UnsafeRawBufferPointer(rebasing: tx[0..<txCount]))
        }
      case .packet(let byteCount, let hadMark):
        packets += 1
        txCount = 0
        handle(framer.packet, byteCount: byteCount, mark: hadMark, now: nowMilliseconds)
        framer.consume()
        if txCount > 0 {
          send(UnsafeRawBufferPointer(rebasing: tx[0..<txCount]))
          afterReplySent()
        }
      }
    }
  }

  /// The line could not be moved to a COMSET's baud rate: the reader keeps `baud` (what a
  /// later refused COMSET reports).
  public func lineStayed(at baud: UInt32) { settings.baud = baud }

  private func afterReplySent() {
    if keysetPending {
      keysetPending = false
      secure.setKey(UnsafeRawBufferPointer(newKey))  // from here on `installMode` is false
      push(.keyset)
      push(.secureChannel(up: false))
    }
    if let (address, baud) = comsetPending {
      comsetPending = nil
      settings.address = address
      settings.baud = baud
      push(.comset(address: address, baud: baud))
    }
  }

  private func push(_ action: OSDPAction) {
    if actionCount == 8 {
      actionsDropped += 1
      actionHead = (actionHead + 1) % 8
      actionCount -= 1
    }
    actions[(actionHead + actionCount) % 8] = action
    actionCount += 1
  }

  // MARK: One packet

  private struct Incoming {
    var control: UInt8
    var crc: Bool
    var mark: Bool
    var broadcast: Bool
    var sequence: Int
  }

  private func handle(_ p: UnsafeMutableRawBufferPointer, byteCount length: Int, mark: Bool, now: Int64) {
    let address = p[1]
    if address & 0x80 != 0 { return }  // another reader's reply on a shared bus
    let target = address & 0x7F
    guard target == settings.address || target == OSDP.broadcastAddress else { return }
    let control = p[4]
    let incoming = Incoming(
      control: control, crc: control & OSDP.controlCRC != 0, mark: mark, broadcast: target == OSDP.broadcastAddress,
      sequence: Int(control & OSDP.controlSequenceMask))
    let checkEnd = length - (incoming.crc ? 2 : 1)
    var position = 5
    var blockType: UInt8 = 0
    var blockData: UInt8 = 0
    if control & OSDP.controlSCB != 0 {
      guard checkEnd > 7 else { return reply(nak: .commandLength, incoming) }
      let blockLength = Int(p[5])
      guard blockLength >= 2, position + blockLength < checkEnd else { return reply(nak: .commandLength, incoming) }
      blockType = p[6]
      blockData = blockLength >= 3 ? p[7] : 0
      position += blockLength
    }
    guard position < checkEnd else { return reply(nak: .commandLength, incoming) }
    let command = p[position]

    // Sequence numbers.
    if incoming.sequence == 0 {
      lastSequence = -1
      lastReplyCount = 0
      endSecureSession()
    } else if incoming.sequence == lastSequence && lastReplyCount > 0 && command == lastCommand {
      retransmits += 1
      txCount = lastReplyCount
      return
    }
    let expected = incoming.sequence == lastSequence ? lastSequence : (lastSequence < 0 ? 0 : lastSequence % 3 + 1)
    guard incoming.sequence == expected else { return reply(nak: .sequenceNumber, incoming) }
    lastSequence = incoming.sequence
    lastCommand = command
    lastReplyCount = 0

    // Security block.
    var dataStart = position + 1
    var dataEnd = checkEnd
    if blockType != 0 {
      guard blockType >= OSDP.SecurityBlock.challenge.rawValue && blockType <= OSDP.SecurityBlock.replyEncrypted.rawValue else {
        return reply(nak: .securityUnsupported, incoming)
      }
      if blockType >= OSDP.SecurityBlock.commandMAC.rawValue {
        guard secure.state == .active,
          blockType == OSDP.SecurityBlock.commandMAC.rawValue || blockType == OSDP.SecurityBlock.commandEncrypted.rawValue
        else { return reply(nak: .securityUnsupported, incoming) }
        let macStart = checkEnd - 4
        guard macStart > position else { return reply(nak: .commandLength, incoming) }
        let mac = secure.mac(UnsafeRawBufferPointer(rebasing: p[0..<macStart]), command: true, cipher: cipher)
        var difference: UInt8 = 0
        for i in 0..<4 { difference |= mac.load(fromByteOffset: i, as: UInt8.self) ^ p[macStart + i] }
        guard difference == 0 else {
          endSecureSession()
          return reply(nak: .securityUnsupported, incoming)
        }
        dataEnd = macStart
        if blockType == OSDP.SecurityBlock.commandEncrypted.rawValue {
          let block = UnsafeMutableRawBufferPointer(rebasing: p[dataStart..<dataEnd])
          guard let plain = secure.decryptCommandData(block, cipher: cipher) else {
            endSecureSession()
            return reply(nak: .securityUnsupported, incoming)
          }
          dataEnd = dataStart + plain
        }
      }
    } else if secure.state == .active {
      // A plain command during a secure session: refused, the session stays.
      return reply(nak: .securityUnsupported, incoming)
    }
    let isHandshake = command == OSDP.Command.chlng.rawValue || command == OSDP.Command.scrypt.rawValue
    if settings.enforceSecure && secure.state != .active && !isHandshake && command != OSDP.Command.id.rawValue
      && command != OSDP.Command.cap.rawValue
    {
      return reply(nak: .encryptionRequired, incoming)
    }
    if dataStart > dataEnd { dataStart = dataEnd }
    let data = UnsafeRawBufferPointer(rebasing: p[dataStart..<dataEnd])
    dispatch(command, data: data, blockType: blockType, blockData: blockData, incoming, now: now)
  }

  private func endSecureSession() {
    let wasActive = secure.state == .active
    secure.teardown()
    if wasActive { push(.secureChannel(up: false)) }
  }

  // MARK: Commands

  private func dispatch(_ command: UInt8, data: UnsafeRawBufferPointer, blockType: UInt8, blockData: UInt8, _ incoming: Incoming, now: Int64) {
    guard let known = OSDP.Command(rawValue: command) else { return reply(nak: .unknownCommand, incoming) }
    func length(_ n: Int) -> Bool { data.count == n }
    switch known {
    case .poll:
      guard length(0) else { return reply(nak: .commandLength, incoming) }
      polls += 1
      lastPollMilliseconds = now
      while cardCount > 0 && now - cardTimes[cardHead] > Self.cardMaxAgeMilliseconds {
        cards[cardHead] = nil
        cardHead = (cardHead + 1) % Self.cardsMax
        cardCount -= 1
        cardsExpired += 1
      }
      if cardCount > 0, let card = cards[cardHead] {
        cards[cardHead] = nil
        cardHead = (cardHead + 1) % Self.cardsMax
        cardCount -= 1
        begin(.raw, incoming)
        put(0)  // reader 0
        put(card.format == .raw ? 0 : 1)  // 0: raw bits, 1: Wiegand (parity bits included)
        put(UInt8(card.bitCount & 0xFF))
        put(UInt8(card.bitCount >> 8))
        let n = card.encodePacked(into: UnsafeMutableRawBufferPointer(rebasing: tx[txCount..<(txCount + 8)]))
        txCount += n
        lastCardSent = card
        cardsSent += 1
        finish(incoming)
      } else {
        replyEmpty(.ack, incoming)
      }
    case .id:
      guard length(1) else { return reply(nak: .commandLength, incoming) }
      begin(.pdid, incoming)
      for i in 0..<3 { put(UInt8(truncatingIfNeeded: settings.vendorCode >> (8 * i))) }
      put(settings.model)
      put(settings.version)
      for i in 0..<4 { put(UInt8(truncatingIfNeeded: settings.serialNumber >> (8 * i))) }
      put(settings.firmware.0)
      put(settings.firmware.1)
      put(settings.firmware.2)
      finish(incoming)
    case .cap:
      guard length(1) else { return reply(nak: .commandLength, incoming) }
      begin(.pdcap, incoming)
      let size = OSDP.packetBytesMax
      // function, compliance, items: inputs none; one output (on/off); binary card data;
      // one LED; one buzzer; CRC-16; AES-128 Secure Channel (items bit 0: default key accepted);
      // receive buffer and largest combined message, LSB then MSB.
      let table: InlineArray<27, UInt8> = [
        1, 0, 0, 2, 1, 1, 3, 1, 0, 4, 1, 1, 5, 1, 1, 8, 1, 0, 9, 1, installMode ? 1 : 0,
        10, UInt8(size & 0xFF), UInt8(size >> 8), 11, UInt8(size & 0xFF), UInt8(size >> 8),
      ]
      for i in table.indices { put(table[i]) }
      finish(incoming)
    case .lstat:
      guard length(0) else { return reply(nak: .commandLength, incoming) }
      begin(.lstatr, incoming)
      put(0)  // tamper: normal
      put(0)  // power: normal
      finish(incoming)
    case .istat:
      guard length(0) else { return reply(nak: .commandLength, incoming) }
      replyEmpty(.istatr, incoming)
    case .ostat:
      guard length(0) else { return reply(nak: .commandLength, incoming) }
      replyOutputs(incoming)
    case .out:
      guard data.count > 0 && data.count % 4 == 0 else { return reply(nak: .commandLength, incoming) }
      for r in 0..<(data.count / 4) where Int(data[r * 4]) >= Self.outputsMax || data[r * 4 + 1] > 6 {
        return reply(nak: .unableToProcess, incoming)
      }
      for r in 0..<(data.count / 4) {
        let number = data[r * 4], code = data[r * 4 + 1]
        let timer = UInt16(data[r * 4 + 2]) | UInt16(data[r * 4 + 3]) << 8
        switch code {
        case 1, 3, 6: outputOn[Int(number)] = false
        case 2, 4, 5: outputOn[Int(number)] = true
        default: break
        }
        push(.output(number: number, controlCode: code, timerTenths: timer))
      }
      replyOutputs(incoming)
    case .led:
      guard data.count > 0 && data.count % 14 == 0 else { return reply(nak: .commandLength, incoming) }
      for r in 0..<(data.count / 14) {
        let b = r * 14
        let temporary = data[b + 2] == 2
        if temporary {
          push(
            .led(
              number: data[b + 1], color: data[b + 5], offColor: data[b + 6], onTenths: data[b + 3], offTenths: data[b + 4],
              temporary: true, timerTenths: UInt16(data[b + 7]) | UInt16(data[b + 8]) << 8))
        } else if data[b + 9] == 1 {
          push(
            .led(
              number: data[b + 1], color: data[b + 12], offColor: data[b + 13], onTenths: data[b + 10], offTenths: data[b + 11],
              temporary: false, timerTenths: 0))
        }
      }
      replyEmpty(.ack, incoming)
    case .buz:
      guard data.count > 0 && data.count % 5 == 0 else { return reply(nak: .commandLength, incoming) }
      for r in 0..<(data.count / 5) {
        let b = r * 5
        push(.buzzer(tone: data[b + 1], onTenths: data[b + 2], offTenths: data[b + 3], count: data[b + 4]))
      }
      replyEmpty(.ack, incoming)
    case .comset:
      guard length(5) else { return reply(nak: .commandLength, incoming) }
      var address = data[0]
      var baud = UInt32(data[1]) | UInt32(data[2]) << 8 | UInt32(data[3]) << 16 | UInt32(data[4]) << 24
      let bauds: InlineArray<6, UInt32> = [9_600, 19_200, 38_400, 57_600, 115_200, 230_400]
      var known = false
      for i in bauds.indices where bauds[i] == baud { known = true }
      if address >= OSDP.broadcastAddress || !known {
        // The reply names the settings the reader keeps using.
        address = settings.address
        baud = settings.baud
      } else {
        comsetPending = (address, baud)
      }
      begin(.com, incoming)
      put(address)
      for i in 0..<4 { put(UInt8(truncatingIfNeeded: baud >> (8 * i))) }
      finish(incoming)
    case .keyset:
      guard length(18) else { return reply(nak: .commandLength, incoming) }
      guard secure.state == .active, data[0] == 1, data[1] == 16 else { return reply(nak: .securityUnsupported, incoming) }
      newKey.copyMemory(from: UnsafeRawBufferPointer(rebasing: data[2..<18]))
      keysetPending = true
      replyEmpty(.ack, incoming)
    case .chlng:
      guard length(8) else { return reply(nak: .commandLength, incoming) }
      guard blockType == OSDP.SecurityBlock.challenge.rawValue else { return reply(nak: .securityUnsupported, incoming) }
      let useDefault = blockData == 0
      endSecureSession()
      // The default key only in install mode, and never once a key is installed.
      guard useDefault ? installMode : secure.hasKey else { return reply(nak: .securityUnsupported, incoming) }
      begin(.ccrypt, incoming, handshake: (OSDP.SecurityBlock.clientCryptogram.rawValue, useDefault ? 0 : 1))
      guard secure.challenge(randomA: data, useDefaultKey: useDefault, cipher: cipher, into: tx.baseAddress! + txCount) else {
        txCount = 0
        return reply(nak: .unableToProcess, incoming)
      }
      txCount += 32
      finish(incoming)
    case .scrypt:
      guard length(16) else { return reply(nak: .commandLength, incoming) }
      guard blockType == OSDP.SecurityBlock.serverCryptogram.rawValue, secure.state == .challenged else {
        secure.teardown()
        return reply(nak: .securityUnsupported, incoming)
      }
      begin(.rmacI, incoming, handshake: (OSDP.SecurityBlock.initialRMAC.rawValue, 1))
      guard secure.verifyServerCryptogram(data, cipher: cipher, rmacInto: tx.baseAddress! + txCount) else {
        txCount = 0
        return reply(nak: .securityUnsupported, incoming)
      }
      txCount += 16
      finish(incoming, handshake: true)
      push(.secureChannel(up: true))
    case .acurxsize, .keepactive:
      guard length(2) else { return reply(nak: .commandLength, incoming) }
      replyEmpty(.ack, incoming)
    case .rstat, .text:
      reply(nak: .unknownCommand, incoming)
    }
  }

  // MARK: Replies

  private var replyBlockStart = 0
  private var replyCodeIndex = 0
  private var replyUsesSecureBlock = false

  private func put(_ byte: UInt8) {
    tx[txCount] = byte
    txCount += 1
  }

  private func replyEmpty(_ code: OSDP.Reply, _ incoming: Incoming) {
    begin(code, incoming)
    finish(incoming)
  }

  private func replyOutputs(_ incoming: Incoming) {
    begin(.ostatr, incoming)
    for i in 0..<Self.outputsMax { put(outputOn[i] ? 1 : 0) }
    finish(incoming)
  }

  private func reply(nak code: OSDP.NakCode, _ incoming: Incoming) {
    txCount = 0
    begin(.nak, incoming)
    put(code.rawValue)
    finish(incoming)
    naksSent += 1
    lastNak = code
  }

  private func nakPlain(_ code: OSDP.NakCode, control: UInt8, mark: Bool) {
    let incoming = Incoming(
      control: control, crc: control & OSDP.controlCRC != 0, mark: mark, broadcast: false, sequence: Int(control & OSDP.controlSequenceMask))
    begin(.nak, incoming, plain: true)
    put(code.rawValue)
    finish(incoming)
    naksSent += 1
    lastNak = code
  }

  /// Writes the header, the security block and the reply code.
  private func begin(_ code: OSDP.Reply, _ incoming: Incoming, handshake: (UInt8, UInt8)? = nil, plain: Bool = false) {
    txCount = 0
    if incoming.mark { put(OSDP.mark) }
    replyBlockStart = txCount
    put(OSDP.som)
    put((incoming.broadcast ? OSDP.broadcastAddress : settings.address) | 0x80)
    put(0)
    put(0)
    let secureBlock = handshake != nil || (!plain && secure.state == .active)
    put(UInt8(incoming.sequence) | (incoming.crc ? OSDP.controlCRC : 0) | (secureBlock ? OSDP.controlSCB : 0))
    replyUsesSecureBlock = secureBlock && handshake == nil
    if let (type, value) = handshake {
      put(3)
      put(type)
      put(value)
    } else if replyUsesSecureBlock {
      put(2)
      put(OSDP.SecurityBlock.replyMAC.rawValue)
    }
    replyCodeIndex = txCount
    put(code.rawValue)
  }

  /// Encrypts and MACs the reply in a secure session, fills the length and the check bytes,
  /// and keeps a copy for a retransmit.
  private func finish(_ incoming: Incoming, handshake: Bool = false) {
    let start = replyBlockStart
    if replyUsesSecureBlock && !handshake {
      let dataStart = replyCodeIndex + 1
      let dataCount = txCount - dataStart
      if dataCount > 0 {
        tx[replyCodeIndex - 1] = OSDP.SecurityBlock.replyEncrypted.rawValue
        guard
          let padded = secure.encryptReplyData(
            tx.baseAddress! + dataStart, count: dataCount, capacity: tx.count - dataStart - 6, cipher: cipher)
        else {
          preconditionFailure("reply larger than the transmit buffer")
        }
        txCount = dataStart + padded
      }
      let packetLength = txCount - start + 4 + (incoming.crc ? 2 : 1)
      tx[start + 2] = UInt8(packetLength & 0xFF)
      tx[start + 3] = UInt8(packetLength >> 8)
      let mac = secure.mac(UnsafeRawBufferPointer(rebasing: tx[start..<txCount]), command: false, cipher: cipher)
      for i in 0..<4 { put(mac.load(fromByteOffset: i, as: UInt8.self)) }
    } else {
      let packetLength = txCount - start + (incoming.crc ? 2 : 1)
      tx[start + 2] = UInt8(packetLength & 0xFF)
      tx[start + 3] = UInt8(packetLength >> 8)
    }
    let body = UnsafeRawBufferPointer(rebasing: tx[start..<txCount])
    if incoming.crc {
      let crc = OSDP.crc16(body)
      put(UInt8(crc & 0xFF))
      put(UInt8(crc >> 8))
    } else {
      put(OSDP.checksum(body))
    }
    lastReplyCount = txCount
  }
}
