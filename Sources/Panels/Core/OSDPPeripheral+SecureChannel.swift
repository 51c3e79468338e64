// MARK: Secure Channel

extension OSDPPeripheral {
  /// Checks the security block of the command at `position` (its MAC, and decrypts its data in
  /// place): the end of its data, or nil when it was refused (the NAK written).
  func commandDataEnd(
    _ p: UnsafeMutableRawBufferPointer, blockType: UInt8, commandAt position: Int, checkEnd: Int, _ incoming: Incoming
  ) -> Int? {
    let dataStart = position + 1
    var dataEnd = checkEnd
    if blockType != 0 {
      guard blockType >= OSDP.SecurityBlock.challenge.rawValue && blockType <= OSDP.SecurityBlock.replyEncrypted.rawValue else {
        reply(nak: .securityUnsupported, incoming)
        return nil
      }
      if blockType >= OSDP.SecurityBlock.commandMAC.rawValue {
        guard secure.state == .active,
          blockType == OSDP.SecurityBlock.commandMAC.rawValue || blockType == OSDP.SecurityBlock.commandEncrypted.rawValue
        else {
          reply(nak: .securityUnsupported, incoming)
          return nil
        }
        let macStart = checkEnd - 4
        guard macStart > position else {
          reply(nak: .commandLength, incoming)
          return nil
        }
        let mac = secure.mac(UnsafeRawBufferPointer(rebasing: p[0..<macStart]), command: true, cipher: cipher)
        var difference: UInt8 = 0
        for i in 0..<4 { difference |= mac.load(fromByteOffset: i, as: UInt8.self) ^ p[macStart + i] }
        guard difference == 0 else {
          endSecureSession()
          reply(nak: .securityUnsupported, incoming)
          return nil
        }
        dataEnd = macStart
        if blockType == OSDP.SecurityBlock.commandEncrypted.rawValue {
          let block = UnsafeMutableRawBufferPointer(rebasing: p[dataStart..<dataEnd])
          guard let plain = secure.decryptCommandData(block, cipher: cipher) else {
            endSecureSession()
            reply(nak: .securityUnsupported, incoming)
            return nil
          }
          dataEnd = dataStart + plain
        }
      }
    } else if secure.state == .active {
      // A plain command during a secure session: refused, the session stays.
      reply(nak: .securityUnsupported, incoming)
      return nil
    }
    return dataEnd
  }

  func endSecureSession() {
    let wasActive = secure.state == .active
    secure.teardown()
    if wasActive { push(.secureChannel(up: false)) }
  }

  /// osdp_CHLNG and osdp_SCRYPT: the two steps that set up a secure session.
  func handleHandshake(_ command: OSDP.Command, _ data: UnsafeRawBufferPointer, blockType: UInt8, blockData: UInt8, _ incoming: Incoming) {
    switch command {
    case .chlng:
      guard data.count == 8 else { return reply(nak: .commandLength, incoming) }
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
      guard data.count == 16 else { return reply(nak: .commandLength, incoming) }
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
    default:
      reply(nak: .unknownCommand, incoming)  // not a handshake command (never sent here)
    }
  }

  /// osdp_KEYSET: a new SCBK, only inside a secure session; installed once the ACK is sent.
  func handleKeyset(_ data: UnsafeRawBufferPointer, _ incoming: Incoming) {
    guard data.count == 18 else { return reply(nak: .commandLength, incoming) }
    guard secure.state == .active, data[0] == 1, data[1] == 16 else { return reply(nak: .securityUnsupported, incoming) }
    newKey.copyMemory(from: UnsafeRawBufferPointer(rebasing: data[2..<18]))
    keysetPending = true
    replyEmpty(.ack, incoming)
  }
}
