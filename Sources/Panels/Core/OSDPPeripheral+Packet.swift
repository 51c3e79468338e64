// MARK: One packet

extension OSDPPeripheral {
  /// Answers one whole packet (its check already verified) into `tx`, or leaves `txCount` 0.
  func handle(_ p: UnsafeMutableRawBufferPointer, byteCount length: Int, mark: Bool, now: Int64) {
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
    guard acceptSequence(incoming, command: command) else { return }
    var dataStart = position + 1
    guard let dataEnd = commandDataEnd(p, blockType: blockType, commandAt: position, checkEnd: checkEnd, incoming) else { return }
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

  /// Sequence numbers: true when the command is to be handled; false when it is answered
  /// already (a retransmit of the last reply, or a NAK).
  private func acceptSequence(_ incoming: Incoming, command: UInt8) -> Bool {
    if incoming.sequence == 0 {
      lastSequence = -1
      lastReplyCount = 0
      endSecureSession()
    } else if incoming.sequence == lastSequence && lastReplyCount > 0 && command == lastCommand {
      retransmits += 1
      txCount = lastReplyCount
      return false
    }
    let expected = incoming.sequence == lastSequence ? lastSequence : (lastSequence < 0 ? 0 : lastSequence % 3 + 1)
    guard incoming.sequence == expected else {
      reply(nak: .sequenceNumber, incoming)
      return false
    }
    lastSequence = incoming.sequence
    lastCommand = command
    lastReplyCount = 0
    return true
  }

  // MARK: Commands

  /// Hands a command to its group.
  private func dispatch(_ command: UInt8, data: UnsafeRawBufferPointer, blockType: UInt8, blockData: UInt8, _ incoming: Incoming, now: Int64) {
    guard let known = OSDP.Command(rawValue: command) else { return reply(nak: .unknownCommand, incoming) }
    switch known {
    case .poll: handlePoll(data, incoming, now: now)
    case .id, .cap, .lstat, .istat, .ostat: handleIdentification(known, data, incoming)
    case .out, .led, .buz: handleOutputs(known, data, incoming)
    case .comset, .acurxsize, .keepactive: handleLink(known, data, incoming)
    case .chlng, .scrypt: handleHandshake(known, data, blockType: blockType, blockData: blockData, incoming)
    case .keyset: handleKeyset(data, incoming)
    case .rstat, .text: reply(nak: .unknownCommand, incoming)
    }
  }
}
