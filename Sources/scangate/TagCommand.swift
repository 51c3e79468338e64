import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate tag`: the keyed tag a payload has on this reader (what LAST, WATCH, the journal,
/// the audit log and fleet events show for it), for an administrator looking for a badge. It
/// needs the reader's tag key (`<log.path>.tag-key`, the service user's, mode 0600): run it as
/// root. `-` reads the payload from standard input (kept out of `ps` and shell history; one
/// trailing newline is dropped); `--sha256 HEX` takes an allow-list `sha256:` entry's digest.
enum TagCommand {
  /// The longest payload read from standard input.
  static let stdinBytesMax = 64 * 1024

  static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments, valued: ["config", "key", "sha256"], known: [])
      let digest = try digestToTag(options)
      var keyPath = options.value("key")
      if keyPath == nil {
        guard let config = loadConfig(options) else { return 1 }
        guard !config.log.path.isEmpty else {
          throw ParseError(message: "no [log] path: the reader keeps no tag key, its tags change at every start")
        }
        keyPath = TagKey.defaultPath(forLog: config.log.path)
      }
      let path = keyPath!
      guard fileExists(path) else { throw ParseError(message: "\(path): no tag key (the reader makes it at its first start)") }
      // Root reads the service user's key: the owner of the directory it lives in is accepted.
      var directory = stat()
      let owner: uid_t? = stat(parentDirectory(path), &directory) == 0 ? directory.st_uid : nil
      let key: TagKey
      do { key = try TagKey.load(path, owner: owner) } catch {
        writeStandardError("scangate tag: tag key \(error)\n")
        return 1
      }
      print(PayloadTag.hex(key.tag(digest)))
      return 0
    } catch {
      writeStandardError("scangate tag: \(error)\n")
      return 2
    }
  }

  /// The SHA-256 to tag: of the payload argument, of standard input (`-`), or given (`--sha256`).
  static func digestToTag(_ options: Options) throws(ParseError) -> Digest {
    if let hex = options.value("sha256") {
      guard options.positionals.isEmpty else { throw ParseError(message: "give a payload or --sha256, not both") }
      let text = Array(hex.utf8)
      var bytes = [UInt8](repeating: 0, count: 32)
      let n = bytes.withUnsafeMutableBytes { out in text.withUnsafeBytes { try? Hex.decode($0, into: out) } }
      guard text.count == 64, n == 32 else { throw ParseError(message: "--sha256 wants 64 hex digits") }
      return bytes.withUnsafeBytes { Digest(bytes: $0) }
    }
    guard options.positionals.count == 1 else { throw ParseError(message: "give one payload, or - to read it from standard input") }
    var payload: [UInt8]
    if options.positionals[0] == "-" {
      payload = try readStandardInput()
      if payload.last == 0x0A { payload.removeLast() }
      if payload.last == 0x0D { payload.removeLast() }
    } else {
      payload = Array(options.positionals[0].utf8)
    }
    defer { SecretBytes.wipe(&payload) }
    return payload.withUnsafeBytes { SodiumDigester().sha256($0) }
  }

  static func readStandardInput() throws(ParseError) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let n: Int
      do { n = try readSome(0, into: &chunk, "read standard input") } catch {
        throw ParseError(message: "standard input: \(error.code)")
      }
      if n == 0 { break }
      bytes += chunk[0..<n]
      if bytes.count > stdinBytesMax { throw ParseError(message: "standard input: over \(stdinBytesMax) bytes") }
    }
    return bytes
  }

  static func parentDirectory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}
