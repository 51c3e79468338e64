import ScanConsole
import ScanCore
import ScanLinux

/// The console's BACKUP (docs/backup.md, "From the web page"): the files the configuration names,
/// secrets left out, read and sealed to the caller's public key (crypto_box_seal: no key
/// derivation here, so the loop never spends Argon2id's memory or time), then streamed to the
/// session as a bulk reply like a snapshot, and recorded with who. The loop is held while the
/// files are read and sealed: measured in docs/backup.md.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  public mutating func backup(
    publicKey: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, sealing: BackupSealing, session: SessionTicket,
    who: UnsafeRawBufferPointer
  ) -> BackupStart {
    guard let console, let gather = helpers.backupFiles else {
      return .refused(code: 503, reason: "this reader was started without its configuration's path: no backup")
    }
    guard !console.bulkActive, snapshotting.phase == .idle else { return .refused(code: 503, reason: "a snapshot or backup is being sent; try again") }
    let derivation = BackupArchive.Derivation(salt: Array(salt), ops: sealing.ops, mem: sealing.mem)
    let sealed: [UInt8], files: Int
    do throws(BackupArchive.Refusal) {
      let archive = try gather()
      guard derivation.ops >= 1, derivation.ops <= BackupArchive.Derivation.opsMax, derivation.mem <= BackupArchive.Derivation.memMax else {
        throw BackupArchive.Refusal("the key derivation's limits are out of range")
      }
      sealed = try archive.sealed(to: Array(publicKey), derivation)
      files = archive.files.count
    } catch {
      return .refused(code: 503, reason: "no backup: \(error)")
    }
    var e = ScanEvent(.command, code: UInt16(ConsoleVerb.backup.rawValue), at: engine.clock.now(), wall: engine.wall.unixNanoseconds())
    withUnsafeTemporaryAllocation(byteCount: 160, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      w.write("BACKUP by ")
      w.write(bytes: who)
      w.write(": \(files) files, \(sealed.count) bytes, no secrets")
      e.setPayload(w.written)
    }
    let sequence = engine.events.append(e)
    console.startBulk(session.slot, data: sealed, trailer: "OK #\(sequence) backup \(files) files \(sealed.count) bytes base64")
    return .started
  }
}
