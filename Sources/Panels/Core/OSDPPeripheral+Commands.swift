// MARK: Identification, capabilities and the link

extension OSDPPeripheral {
  /// osdp_ID, osdp_CAP, osdp_LSTAT, osdp_ISTAT and osdp_OSTAT: what the reader is and its state.
  func handleIdentification(_ command: OSDP.Command, _ data: UnsafeRawBufferPointer, _ incoming: Incoming) {
    switch command {
    case .id:
      guard data.count == 1 else { return reply(nak: .commandLength, incoming) }
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
      guard data.count == 1 else { return reply(nak: .commandLength, incoming) }
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
      guard data.count == 0 else { return reply(nak: .commandLength, incoming) }
      begin(.lstatr, incoming)
      put(0)  // tamper: normal
      put(0)  // power: normal
      finish(incoming)
    case .istat:
      guard data.count == 0 else { return reply(nak: .commandLength, incoming) }
      replyEmpty(.istatr, incoming)
    case .ostat:
      guard data.count == 0 else { return reply(nak: .commandLength, incoming) }
      replyOutputs(incoming)
    default:
      reply(nak: .unknownCommand, incoming)  // not in this group (never sent here)
    }
  }

  /// osdp_COMSET (a new address and baud rate, taken once the reply is sent), osdp_ACURXSIZE
  /// and osdp_KEEPACTIVE.
  func handleLink(_ command: OSDP.Command, _ data: UnsafeRawBufferPointer, _ incoming: Incoming) {
    switch command {
    case .comset:
      guard data.count == 5 else { return reply(nak: .commandLength, incoming) }
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
    case .acurxsize, .keepactive:
      guard data.count == 2 else { return reply(nak: .commandLength, incoming) }
      replyEmpty(.ack, incoming)
    default:
      reply(nak: .unknownCommand, incoming)  // not in this group (never sent here)
    }
  }
}

// MARK: LED, buzzer and outputs

extension OSDPPeripheral {
  /// osdp_OUT, osdp_LED and osdp_BUZ: each record becomes an `OSDPAction` for the owner.
  func handleOutputs(_ command: OSDP.Command, _ data: UnsafeRawBufferPointer, _ incoming: Incoming) {
    switch command {
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
    default:
      reply(nak: .unknownCommand, incoming)  // not in this group (never sent here)
    }
  }
}
