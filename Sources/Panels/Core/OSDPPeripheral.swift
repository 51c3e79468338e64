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
  var secure = OSDPSecureChannel()
  let tx: UnsafeMutableRawBufferPointer
  var txCount = 0
  var lastReplyCount = 0
  var lastCommand: UInt8 = 0
  var lastSequence = -1
  let newKey: UnsafeMutableRawBufferPointer
  var keysetPending = false
  var comsetPending: (UInt8, UInt32)? = nil

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
  /// Keys waiting (OSDP's keypad bytes: '0'–'9', 0x0D enter, 0x7F clear) and when the first came.
  var keys: UnsafeMutablePointer<UInt8>
  var keyCount = 0
  var keysSince: Int64 = 0
  public private(set) var keysSent = 0
  /// Keys refused (the queue full) or dropped unsent (older than a card may be).
  public private(set) var keysDropped = 0
  private var cardHead = 0
  private var cardCount = 0
  let outputOn: UnsafeMutableBufferPointer<Bool>

  // Link status, for the console and the event log.
  public private(set) var lastPollMilliseconds: Int64? = nil
  public private(set) var polls = 0
  public private(set) var packets = 0
  public internal(set) var naksSent = 0
  public internal(set) var lastNak: OSDP.NakCode? = nil
  public internal(set) var retransmits = 0
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
  /// Keys typed on the reader's keypad waiting for a POLL (one osdp_KEYPAD carries them all).
  public static var keysMax: Int { 16 }
  public static var outputsMax: Int { 1 }

  // The reply being written (see `begin` and `finish`).
  var replyBlockStart = 0
  var replyCodeIndex = 0
  var replyUsesSecureBlock = false

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
    keys = .allocate(capacity: Self.keysMax)
    keys.initialize(repeating: 0, count: Self.keysMax)
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
    for i in 0..<Self.keysMax { keys[i] = 0 }  // a PIN typed for the panel
    keys.deallocate()
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

  /// Queues a key for the next POLL's osdp_KEYPAD: `byte` in OSDP's keypad encoding ('0'–'9',
  /// 0x0D for enter/'#', 0x7F for clear/'*'); false (and counted) when the queue is full or the
  /// byte is not a key.
  @discardableResult
  public func queueKey(_ byte: UInt8, nowMilliseconds: Int64 = 0) -> Bool {
    guard (0x30...0x39).contains(byte) || byte == 0x0D || byte == 0x7F, keyCount < Self.keysMax else {
      keysDropped += 1
      return false
    }
    if keyCount == 0 { keysSince = nowMilliseconds }
    keys[keyCount] = byte
    keyCount += 1
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

  func push(_ action: OSDPAction) {
    if actionCount == 8 {
      actionsDropped += 1
      actionHead = (actionHead + 1) % 8
      actionCount -= 1
    }
    actions[(actionHead + actionCount) % 8] = action
    actionCount += 1
  }

  /// The packet being answered, as its control byte and address name it.
  struct Incoming {
    var control: UInt8
    var crc: Bool
    var mark: Bool
    var broadcast: Bool
    var sequence: Int
  }
}

// MARK: Polling

extension OSDPPeripheral {
  /// osdp_POLL: the oldest card not yet too old (osdp_RAW), else the keys typed (osdp_KEYPAD), else an ACK.
  func handlePoll(_ data: UnsafeRawBufferPointer, _ incoming: Incoming, now: Int64) {
    guard data.count == 0 else { return reply(nak: .commandLength, incoming) }
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
    } else if keyCount > 0 && now - keysSince > Self.cardMaxAgeMilliseconds {
      // Keys no panel polled for in time (a PIN typed while the link was down): dropped.
      keysDropped += keyCount
      clearKeys()
      replyEmpty(.ack, incoming)
    } else if keyCount > 0 {
      // osdp_KEYPAD: reader 0, the digit count, the keys in the order typed.
      begin(.keypad, incoming)
      put(0)
      put(UInt8(keyCount))
      for i in 0..<keyCount { put(keys[i]) }
      keysSent += keyCount
      clearKeys()
      finish(incoming)
    } else {
      replyEmpty(.ack, incoming)
    }
  }

  private func clearKeys() {
    for i in 0..<keyCount { keys[i] = 0 }
    keyCount = 0
  }
}
