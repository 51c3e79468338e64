import Glibc
import ScanCore
import ScanLinux

/// Which files a backup holds, and how a restore puts them back (docs/backup.md).
public enum BackupFiles {
  /// Key and password files: restored 0600, left out of an archive made without secrets.
  static let secretRoles: Set<String> = [
    "credentials.site_key_file", "log.chain_key_file", "log:_tag_key", "fleet.tls_key_file", "fleet.password_file",
    "fleet.home_assistant_code_file", "console.secret_file", "console.tls_key_file", "panel.scbk_file", "keypad.pin_key_file",
  ]
  /// State that protects decisions, or that the reader keeps for itself: never written over.
  static let stateRoles: Set<String> = [
    "credentials.clock_floor_file", "credentials.used_file", "state:_rotating_steps", "state:_revocation_version",
    "fleet.state_file", "fleet:_used_command_nonces", "fleet:_bundle_version", "panel.com_file", "state:_lockdown",
    "state:_passback", "state:_occupancy", "state:_pin_attempts",
  ]

  /// Every file `config` names that a backup holds: (role, path, kind, most bytes). Not the audit
  /// log (its own tools copy it: docs/audit-log.md), nor a replay camera's pictures.
  public static func named(_ config: ScanConfig, configPath: String) -> [(role: String, path: String, kind: BackupFile.Kind, maxBytes: Int)] {
    var list: [(role: String, path: String, kind: BackupFile.Kind, maxBytes: Int)] = [("config", configPath, .config, 1 << 20)]
    var entries = PathChecks.entries(config)
    if let directory = config.stateDirectory {
      for (name, role) in [
        ("lockdown", "state: lockdown"), ("passback", "state: passback"), ("occupancy", "state: occupancy"), ("pin-attempts", "state: pin attempts"),
      ] {
        entries.append(PathChecks.Entry(role: role, path: directory + "/" + name, kind: .file(maxBytes: 1 << 20)))
      }
    }
    for entry in entries {
      guard case .file(let maxBytes) = entry.kind, !list.contains(where: { $0.path == entry.path }) else { continue }
      let role = entry.role.replacing(" ", with: "_")
      let kind: BackupFile.Kind = secretRoles.contains(role) ? .secret : stateRoles.contains(role) ? .state : .list
      list.append((role, entry.path, kind, min(maxBytes, BackupArchive.bytesMax)))
    }
    return list
  }

  /// Reads every file `config` names into an archive; missing files are skipped and named.
  /// Without `secrets`, key and password files are left out (named too).
  public static func gather(
    _ config: ScanConfig, configPath: String, reader: String, now: Int64, secrets: Bool
  ) throws(BackupArchive.Refusal) -> (archive: BackupArchive, skipped: [String]) {
    var files: [BackupFile] = [], skipped: [String] = []
    for item in named(config, configPath: configPath) {
      if item.kind == .secret && !secrets {
        skipped.append("\(item.role) \(item.path): a secret (left out)")
        continue
      }
      guard fileExists(item.path) else {
        skipped.append("\(item.role) \(item.path): not there")
        continue
      }
      let bytes: [UInt8]
      var st = stat()
      do throws(FileError) {
        let opened = try openRegularFile(item.path, maxBytes: item.maxBytes)
        defer { closeDescriptor(opened.fd) }
        do { _ = try syscall("fstat", { fstat(opened.fd, &st) }) } catch { throw FileError(path: item.path, reason: "fstat: \(error.code)") }
        bytes = try readOpened(opened.fd, upTo: opened.size, path: item.path)
      } catch {
        throw BackupArchive.Refusal("\(item.role): \(error)")
      }
      files.append(
        BackupFile(role: item.role, path: item.path, kind: item.kind, mode: UInt32(st.st_mode & 0o7777), owner: owner(st), bytes: bytes))
    }
    return (BackupArchive(reader: reader, created: now, files: files), skipped)
  }

  /// This machine's name (gethostname), for the archive's header.
  public static func hostName() -> String {
    var name = [CChar](repeating: 0, count: 256)
    gethostname(&name, name.count - 1)
    return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  static func owner(_ st: stat) -> String {
    guard let user = getpwuid(st.st_uid), let group = getgrgid(st.st_gid) else { return "-" }
    let name = "\(String(cString: user.pointee.pw_name)):\(String(cString: group.pointee.gr_name))"
    return BackupArchive.isSafeWord(name) ? name : "-"
  }

  /// What a restore does with one file.
  public enum Action: Equatable, Sendable {
    /// Written (new, or different from what is there).
    case write
    /// Already there, byte for byte.
    case same
    /// State the reader already has: kept (it is newer than any backup).
    case keep
  }

  /// Checks `archive` against the configuration it holds, which is restored at `configPath`:
  /// exactly one configuration, which loads; every other file one that configuration names, at
  /// that path, in that role. Refused whole otherwise (an archive cannot write anywhere else).
  public static func plan(
    _ archive: BackupArchive, configPath: String
  ) throws(BackupArchive.Refusal) -> (
    config: ScanConfig, steps: [(file: BackupFile, action: Action)]
  ) {
    let configs = archive.files.filter { $0.kind == .config }
    guard configs.count == 1, var configFile = configs.first else { throw BackupArchive.Refusal("it holds no configuration, or two") }
    let config: ScanConfig
    do throws(ConfigErrors) {
      switch ConfigSchema.build(try ConfigLoader.entries(fromTOML: configFile.bytes)) {
      case .success(let c): config = c
      case .failure(let errors): throw errors
      }
    } catch {
      throw BackupArchive.Refusal("its configuration does not load: \(error)")
    }
    configFile.path = configPath
    let allowed = named(config, configPath: configPath)
    var steps: [(file: BackupFile, action: Action)] = [(configFile, action(for: configFile))]
    let roots = restoreRoots(configPath: configPath)
    for file in archive.files where file.kind != .config {
      // The archived configuration names the paths: it must not name one outside the reader's
      // own folders (a crafted archive, restored as root, would write anywhere).
      guard let folder = resolvedFolder(of: file.path), roots.contains(where: { folder == $0 || folder.hasPrefix($0 + "/") }) else {
        throw BackupArchive.Refusal(
          "\(file.role) \(file.path): outside \(roots.joined(separator: ", ")) (the configuration's folder and the reader's): not restored; nothing was replaced"
        )
      }
      guard allowed.contains(where: { $0.path == file.path && $0.role == file.role && $0.kind == file.kind }) else {
        throw BackupArchive.Refusal("\(file.role) \(file.path): not a file its configuration names there")
      }
      guard let limit = allowed.first(where: { $0.path == file.path })?.maxBytes, file.bytes.count <= limit else {
        throw BackupArchive.Refusal("\(file.role) \(file.path): over its size limit")
      }
      steps.append((file, action(for: file)))
    }
    // What is at each path must be a file (or nothing): a directory or a FIFO there would stop the
    // renames halfway.
    for (file, _) in steps where fileExists(file.path) {
      if let problem = PathChecks.fileProblem(file.path, maxBytes: Int.max) {
        throw BackupArchive.Refusal("\(file.role) \(file.path): \(problem); nothing was replaced")
      }
    }
    return (config, steps)
  }

  /// Where a restore may write: the folder of the configuration it restores, /etc/scangate and
  /// /var/lib/scangate, each as the kernel resolves it (symbolic links followed).
  static func restoreRoots(configPath: String) -> [String] {
    let folder = configPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    return [folder.isEmpty ? "/" : folder, "/etc/scangate", "/var/lib/scangate"].compactMap { resolved($0) }.filter { $0 != "/" }
  }

  /// The folder `path` is in, resolved (a link in it followed), or nil when it is not there.
  static func resolvedFolder(of path: String) -> String? {
    let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    return resolved(folder.isEmpty ? "/" : folder)
  }

  static func resolved(_ path: String) -> String? {
    guard let p = realpath(path, nil) else { return nil }
    defer { free(p) }
    return String(cString: p)
  }

  static func action(for file: BackupFile) -> Action {
    guard fileExists(file.path) else { return .write }
    if file.kind == .state { return .keep }
    let current = try? readWholeFile(file.path, maxBytes: max(file.bytes.count, 1))
    return current == file.bytes ? .same : .write
  }

  /// Writes every `.write` step: each staged whole and synced beside its target first (as its
  /// recorded owner when run as root; secrets 0600), and only when all are staged are they renamed
  /// into place. A failure before the renames leaves every file as it was.
  public static func apply(_ steps: [(file: BackupFile, action: Action)]) throws(BackupArchive.Refusal) {
    var staged: [StagedFile] = []
    do throws(FileError) {
      for (file, action) in steps where action == .write {
        let rule: TemporaryRule = file.kind == .secret ? .secret : .mode(file.mode & 0o0777)
        let s = try stageFile(file.path, file.bytes, suffix: ".restore", rule: rule)
        staged.append(s)
        if getuid() == 0, let (uid, gid) = ids(file.owner) {
          do { _ = try syscall("chown", { chown(s.temporary, uid, gid) }) } catch { throw FileError(path: s.temporary, reason: "chown: \(error.code)") }
        }
      }
    } catch {
      for s in staged { s.discard() }
      throw BackupArchive.Refusal("\(error); nothing was replaced")
    }
    for s in staged {
      do throws(FileError) { try s.replace() } catch { throw BackupArchive.Refusal("\(error) (the files before it were restored)") }
    }
  }

  static func ids(_ owner: String) -> (uid_t, gid_t)? {
    let parts = owner.split(separator: ":").map(String.init)
    guard parts.count == 2, let user = getpwnam(parts[0]), let group = getgrnam(parts[1]) else { return nil }
    return (user.pointee.pw_uid, group.pointee.gr_gid)
  }
}
