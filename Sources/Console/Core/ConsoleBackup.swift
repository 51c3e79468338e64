import ScanCore

/// BACKUP's key derivation limits, recorded in the archive's header for whoever opens it.
public struct BackupSealing: Equatable, Sendable {
  public var ops: UInt64
  public var mem: Int
  public init(ops: UInt64, mem: Int) {
    self.ops = ops
    self.mem = mem
  }
}

/// What became of a BACKUP.
public enum BackupStart: Equatable, Sendable {
  /// The archive is being sent (base64 lines, then `OK backup ...`) by the host.
  case started
  case refused(code: Int, reason: String)
}

extension ConsoleRequest {
  /// BACKUP <public key: 64 hex> <salt: 32 hex> <ops> <KiB>: the key and the salt into
  /// `argument` (48 bytes), the limits into `sealing`.
  static func parseBackup(
    words: Int, _ word: (Int) -> UnsafeRawBufferPointer, argument: UnsafeMutableRawBufferPointer, argumentCount: inout Int
  ) -> Result<ConsoleRequest, ConsoleError> {
    guard words == 5, word(1).count == 64, word(2).count == 32, let ops = parseNumber(word(3)), let mem = parseNumber(word(4))
    else { return .failure(.badArgument) }
    var n = 0
    for k in 1...2 {
      let hex = word(k)
      for i in stride(from: 0, to: hex.count, by: 2) {
        guard let hi = hexDigit(hex[i]), let lo = hexDigit(hex[i + 1]) else { return .failure(.badArgument) }
        argument[n] = hi << 4 | lo
        n += 1
      }
    }
    argumentCount = n
    var request = ConsoleRequest(verb: .backup)
    request.sealing = BackupSealing(ops: UInt64(ops), mem: mem * 1_024)
    return .success(request)
  }

  private static func hexDigit(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c - 0x30
    case 0x61...0x66: c - 0x61 + 10
    case 0x41...0x46: c - 0x41 + 10
    default: nil
    }
  }
}

extension ConsoleCommands {
  /// BACKUP (operator): the host seals and sends the archive, or says why not.
  func backup<Host: ConsoleHost & ~Copyable>(
    _ request: ConsoleRequest, argument: UnsafeRawBufferPointer, slot: Int, host: inout Host, output: some ConsoleOutput
  ) {
    let outcome = withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      Self.writeWho(self[slot], into: &w)
      return host.backup(
        publicKey: UnsafeRawBufferPointer(rebasing: argument[0..<32]), salt: UnsafeRawBufferPointer(rebasing: argument[32..<48]),
        sealing: request.sealing, session: ticket(slot), who: w.written)
    }
    if case .refused(let code, let reason) = outcome { output.send(slot) { ConsoleText.writeError(code, reason, into: &$0) } }
  }
}
