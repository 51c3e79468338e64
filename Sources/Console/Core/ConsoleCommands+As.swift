import ScanCore

extension ConsoleCommands {
  /// AS <name> viewer|operator: a client on this host's Unix socket, or a TLS client with a
  /// certificate the client CA signed (the web admin page, here or on another host), names
  /// the person it acts for, once per connection, so that records say `web:<name> (uid N)`; the
  /// session's role becomes the one named, never more than it had (a viewer cannot become an
  /// operator this way). Anywhere else, or a second time, it is refused.
  func nameSession<Host: ConsoleHost & ~Copyable>(
    _ name: UnsafeRawBufferPointer, asOperator: Bool, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    guard (sessions[slot].peer.localUID != nil && sessions[slot].transport == .tcp) || sessions[slot].certified else {
      output.send(slot) { $0.write("ERR 403 AS is for the Unix socket and certified TLS clients\n") }
      return
    }
    guard sessions[slot].actorCount == 0 else {
      output.send(slot) { $0.write("ERR 409 this session is named already\n") }
      return
    }
    guard !asOperator || sessions[slot].isOperator else {
      output.send(slot) { $0.write("ERR 401 AS cannot raise a role: this session is a viewer\n") }
      return
    }
    let wasOperator = sessions[slot].isOperator
    sessions[slot].isOperator = asOperator
    withUnsafeMutableBytes(of: &sessions[slot].actor) { $0.copyMemory(from: name) }
    sessions[slot].actorCount = name.count
    if wasOperator {
      withUnsafeTemporaryAllocation(byteCount: 96, alignment: 1) { buffer in
        var w = ByteWriter(buffer)
        w.write(asOperator ? "AS operator " : "AS viewer ")
        Self.writeWho(sessions[slot], into: &w)
        _ = host.record(.command, code: UInt16(ConsoleVerb.as.rawValue), text: w.written)
      }
    }
    output.send(slot) { w in
      w.write("OK as web:")
      w.write(bytes: name)
      w.write(asOperator ? " operator" : " viewer")
      w.newline()
    }
  }
}
