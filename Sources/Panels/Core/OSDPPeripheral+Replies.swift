// MARK: Replies

extension OSDPPeripheral {
  func put(_ byte: UInt8) {
    tx[txCount] = byte
    txCount += 1
  }

  func replyEmpty(_ code: OSDP.Reply, _ incoming: Incoming) {
    begin(code, incoming)
    finish(incoming)
  }

  func replyOutputs(_ incoming: Incoming) {
    begin(.ostatr, incoming)
    for i in 0..<Self.outputsMax { put(outputOn[i] ? 1 : 0) }
    finish(incoming)
  }

  func reply(nak code: OSDP.NakCode, _ incoming: Incoming) {
    txCount = 0
    begin(.nak, incoming)
    put(code.rawValue)
    finish(incoming)
    naksSent += 1
    lastNak = code
  }

  func nakPlain(_ code: OSDP.NakCode, control: UInt8, mark: Bool) {
    let incoming = Incoming(
      control: control, crc: control & OSDP.controlCRC != 0, mark: mark, broadcast: false, sequence: Int(control & OSDP.controlSequenceMask))
    begin(.nak, incoming, plain: true)
    put(code.rawValue)
    finish(incoming)
    naksSent += 1
    lastNak = code
  }

  /// Writes the header, the security block and the reply code.
  func begin(_ code: OSDP.Reply, _ incoming: Incoming, handshake: (UInt8, UInt8)? = nil, plain: Bool = false) {
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
  func finish(_ incoming: Incoming, handshake: Bool = false) {
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
