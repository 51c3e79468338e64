import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate backup create | check | restore` (docs/backup.md): one archive of the configuration,
/// the lists, schedules, state and (made as root) secrets, sealed under a passphrase read on
/// standard input; a restore is checked whole before anything is replaced and never writes over
/// state the reader already has.
enum BackupCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do throws(ParseError) {
      guard let step = arguments.first, ["create", "check", "restore"].contains(step) else {
        throw ParseError(message: "backup create | check | restore (scangate help backup)")
      }
      let options = try Options(Array(arguments.dropFirst()), valued: ["config", "out"], known: ["no-secrets", "dry-run"])
      switch step {
      case "create": return try create(options)
      default: return try checkOrRestore(options, restore: step == "restore")
      }
    } catch {
      writeStandardError("scangate backup: \(error)\n")
      return 2
    }
  }

  /// The passphrase: the first line of standard input (12 to 1024 bytes, no control characters).
  static func passphrase() throws(ParseError) -> [UInt8] {
    var bytes = Array((readLine(strippingNewline: true) ?? "").utf8)
    guard (BackupArchive.passphraseMin...1_024).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
      SecretBytes.wipe(&bytes)
      throw ParseError(
        message: "the passphrase (standard input, one line) must be \(BackupArchive.passphraseMin) to 1024 bytes, no control characters")
    }
    return bytes
  }

  /// `path` from the root: the archive records where each file lives.
  static func absolute(_ path: String) -> String {
    guard !path.hasPrefix("/") else { return path }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
  }

  static func create(_ options: Options) throws(ParseError) -> Int32 {
    guard let out = options.value("out") else { throw ParseError(message: "backup create needs --out FILE") }
    guard let config = loadConfig(options), let path = configPath(options).map(absolute) else { return 1 }
    var pass = try passphrase()
    defer { SecretBytes.wipe(&pass) }
    do throws(BackupArchive.Refusal) {
      let (archive, skipped) = try BackupFiles.gather(
        config, configPath: path, reader: BackupFiles.hostName(), now: SystemWallClock().unixSeconds(), secrets: !options.flag("no-secrets"))
      let sealed = try archive.sealed(passphrase: pass)
      do { try stageFile(out, sealed, suffix: ".tmp", rule: .secret).replace() } catch { throw BackupArchive.Refusal("\(error)") }
      for file in archive.files { print("archived: \(file.kind.rawValue) \(file.role) \(file.path) (\(file.bytes.count) bytes)") }
      for line in skipped { print("skipped: \(line)") }
      print("\(out): \(archive.files.count) files, \(sealed.count) bytes, sealed under the passphrase")
      return 0
    } catch {
      throw ParseError(message: error.description)
    }
  }

  static func checkOrRestore(_ options: Options, restore: Bool) throws(ParseError) -> Int32 {
    guard options.positionals.count == 1, let file = options.positionals.first else {
      throw ParseError(message: "backup \(restore ? "restore" : "check") ARCHIVE [--config FILE]")
    }
    let bytes: [UInt8]
    do { bytes = try readWholeFile(file, maxBytes: BackupArchive.bytesMax) } catch { throw ParseError(message: "\(error)") }
    var pass = try passphrase()
    defer { SecretBytes.wipe(&pass) }
    let target = absolute(options.value("config") ?? installedConfigPath)
    do throws(BackupArchive.Refusal) {
      let archive = try BackupArchive.open(bytes, passphrase: pass)
      let (config, steps) = try BackupFiles.plan(archive, configPath: target)
      print("\(file): from \(archive.reader), made \(archive.created) (unix), \(archive.files.count) files")
      // The lists, parsed exactly as the reader would, from the archive's bytes.
      guard CheckConfigFiles.checkLists(config, reading: { path in steps.first(where: { $0.file.path == path })?.file.bytes }) else {
        throw BackupArchive.Refusal("its lists do not load; nothing was replaced")
      }
      for (f, action) in steps {
        let what =
          switch action {
          case .write: restore ? "write" : "would write"
          case .same: "same"
          case .keep: "keep the reader's own (state is never rolled back)"
          }
        print("\(f.kind.rawValue) \(f.role) \(f.path): \(what)")
      }
      guard restore else { return 0 }
      try BackupFiles.apply(steps)
      print("restored: \(steps.filter { $0.action == .write }.count) files written; restart the reader (systemctl restart scangate)")
      return 0
    } catch {
      writeStandardError("scangate backup: \(file): \(error)\n")
      return 1
    }
  }
}
