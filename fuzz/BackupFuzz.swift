// libFuzzer harness for the backup archive's format (docs/backup.md): its plain header, which
// anyone who hands over a file controls, and the body a passphrase holder could seal, behind a
// fixed header. Either is accepted whole within the bounds (every path absolute and without dot
// components, every role and owner one word, the header's counts matched) or refused whole; an
// accepted body written out again reads back the same.
import ScanCore

let fixed = Array("scangate-backup 1\nkdf argon2id13 salt=\(String(repeating: "00", count: 16)) ops=1 mem=8192\nreader=x created=1 files=1 secrets=0\n\n".utf8)

func roundTrip(_ archive: BackupArchive, _ head: BackupArchive.Header) {
  precondition(archive.files.count == head.files && archive.files.filter { $0.kind == .secret }.count == head.secrets)
  for f in archive.files {
    precondition(BackupArchive.isSafePath(f.path) && BackupArchive.isSafeWord(f.role) && BackupArchive.isSafeWord(f.owner))
  }
  let again = BackupArchive(reader: "x", created: archive.created, files: archive.files)
  guard let body = try? again.body(head.derivation) else { preconditionFailure("an accepted archive writes out") }
  let header = again.header(head.derivation)
  guard let head2 = try? BackupArchive.header(header + [0]), let back = try? BackupArchive.parseBody(body, header: header, head2) else {
    preconditionFailure("an archive written out reads back")
  }
  precondition(back == again)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  if let head = try? BackupArchive.header(bytes) {
    precondition(head.length <= bytes.count && head.derivation.salt.count == 16)
    if let archive = try? BackupArchive.parseBody(bytes, header: Array(bytes[..<head.length]), head) { roundTrip(archive, head) }
  }
  guard let head = try? BackupArchive.header(fixed) else { preconditionFailure("the fixed header reads") }
  if let archive = try? BackupArchive.parseBody(fixed + bytes, header: fixed, head) { roundTrip(archive, head) }
  return 0
}
