import ScanCore

extension ConsoleRequest {
  /// PIN label=<label> <4-12 digits>|CLEAR: the label, then the digits, into `argument`
  /// (`labelCount` splits them); `flag` for CLEAR.
  static func parsePin(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError> {
    guard words == 3 else { return .failure(.badArgument) }
    guard let label = value(word(1), key: "label="), label.count <= LabelLimits.bytesMax, AllowListEdit.isShownLabel(label) else {
      return .failure(.badLabel)
    }
    var request = ConsoleRequest(verb: .pin)
    let pin = word(2)
    if equalsIgnoringCase(pin, "CLEAR") {
      request.flag = true
    } else {
      guard (PinEntry.digitsMin...PinEntry.digitsMax).contains(pin.count), pin.allSatisfy({ (0x30...0x39).contains($0) }) else {
        return .failure(.badArgument)
      }
    }
    argument.copyMemory(from: label)
    request.labelCount = label.count
    argumentCount = label.count
    if !request.flag {
      UnsafeMutableRawBufferPointer(rebasing: argument[label.count...]).copyMemory(from: pin)
      argumentCount += pin.count
    }
    return .success(request)
  }
}

extension ConsoleCommands {
  /// PIN (operator): the host sets or takes off the entry's `pin=`; the reply never holds the PIN.
  func setPin<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    let label = UnsafeRawBufferPointer(rebasing: argument[0..<request.labelCount])
    let pin = request.flag ? nil : UnsafeRawBufferPointer(rebasing: argument[request.labelCount...])
    let change = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      Self.writeWho(self[slot], into: &w)
      return host.setPin(label: label, pin: pin, who: w.written)
    }
    output.send(slot) { w in
      switch change {
      case .pinChanged(let set, let version, let sequence):
        w.write("OK #")
        w.write(sequence)
        w.write(set ? " pin set for " : " pin taken off ")
        w.write(bytes: label)
        w.write(" allow-list version ")
        w.write(version)
      case .refused(let code, let reason): ConsoleText.writeError(code, reason, into: &w)
      case .enrolled, .removed: w.write("ERR 500 not a PIN change")
      }
      w.newline()
    }
  }
}
