import Glibc
import ScanCore
import ScanLinux

/// Every path a reader's configuration names, with what must be there: the list spans every
/// domain (the reader's replay source, the credential files, the audit log, the fleet's and the
/// console's files), so it lives in the composition root; the checks themselves are the platform's
/// (`PathChecks` in Sources/Platform).
extension PathChecks {
  /// Why the replay source at `path` would be refused: a folder's images must each be a regular
  /// file; anything else at `path` must be a regular (raw) file.
  public static func replayProblem(_ path: String) -> String? {
    guard isDirectory(path) else { return fileProblem(path, maxBytes: ReplayFrameSource.rawBytesMax) }
    let names: [String]
    do { names = try listDirectory(path) } catch { return error.reason }
    let maxBytes = ImageFileReader().maxFileBytes
    for name in names where ReplayFrameSource.isImageName(name) {
      if let problem = fileProblem(path + "/" + name, maxBytes: maxBytes) { return "\(path)/\(name): \(problem)" }
    }
    return nil
  }

  /// Why `entry` is refused, or nil.
  public static func problem(_ entry: Entry) -> String? {
    switch entry.kind {
    case .file(let maxBytes): fileProblem(entry.path, maxBytes: maxBytes)
    case .directory: directoryProblem(entry.path)
    case .database: databaseProblem(entry.path)
    case .replay: replayProblem(entry.path)
    }
  }

  /// Every path `config` makes the reader read or write (the allow-list first), with what must be there.
  public static func entries(_ config: ScanConfig) -> [Entry] {
    var list: [Entry] = []
    func file(_ role: String, _ path: String?, _ maxBytes: Int = Int.max) {
      if let path, !path.isEmpty { list.append(Entry(role: role, path: path, kind: .file(maxBytes: maxBytes))) }
    }
    file("allow_list.path", config.allowListPath, config.engine.allowList.fileBytesMax)
    file("schedule.path", config.door.schedulePath, ScheduleSet.fileBytesMax)
    if config.camera.source == .replay && !config.camera.replayPath.isEmpty {
      list.append(Entry(role: "camera.replay_path", path: config.camera.replayPath, kind: .replay))
    }
    if config.camera.source == .replay && !config.camera.second.isEmpty {
      list.append(Entry(role: "camera.second", path: config.camera.second, kind: .replay))
    }
    if let directory = config.stateDirectory { list.append(Entry(role: "state.directory", path: directory, kind: .directory)) }
    let c = config.credentials
    file("credentials.trust_file", c.trustFile, CredentialFiles.trustBytesMax)
    file("credentials.revocation_file", c.revocationFile, CredentialFiles.revocationBytesMax)
    file("credentials.site_key_file", c.siteKeyFile, SecretFile.bytesMax)
    file("credentials.clock_floor_file", c.clockFloorFile ?? config.statePath("clock-floor"), 256)
    if c.enabled {
      file("credentials.used_file", c.usedFile ?? config.statePath("used-passes"))
      file("state: rotating steps", config.statePath("replay-steps"))
      file("state: revocation version", config.statePath("revocation-version"))
    }
    let log = config.log
    if !log.path.isEmpty {
      list.append(Entry(role: "log.path", path: log.path, kind: .database))
      file("log.chain_key_file", log.chainKeyPath, SecretFile.bytesMax)
      file("log: tag key", TagKey.defaultPath(forLog: log.path), SecretFile.bytesMax)
    }
    if config.fleet.isEnabled {
      let f = config.fleet
      let state = f.stateFile.isEmpty ? log.path + ".fleet" : f.stateFile
      file("fleet.state_file", state, 256)
      file("fleet: used command nonces", state + "-nonces", 1 << 20)
      file("fleet: bundle version", state + "-bundle-version", 256)
      file("fleet.tls_ca_file", f.tlsCAFile, MQTTClient.tlsFileBytesMax)
      file("fleet.tls_cert_file", f.tlsCertFile, MQTTClient.tlsFileBytesMax)
      file("fleet.tls_key_file", f.tlsKeyFile, MQTTClient.tlsFileBytesMax)
      file("fleet.password_file", f.passwordFile, SecretFile.bytesMax)
      file("fleet.home_assistant_code_file", f.homeAssistantCodeFile, 64)
    }
    file("console.secret_file", config.console.secretFile, SecretFile.bytesMax)
    file("console.tls_cert_file", config.console.tlsCertFile, ConsoleTLS.pemBytesMax)
    file("console.tls_key_file", config.console.tlsKeyFile, ConsoleTLS.keyBytesMax)
    file("console.tls_client_ca_file", config.console.tlsClientCAFile, ConsoleTLS.pemBytesMax)
    file("panel.scbk_file", config.panel.scbkFile, SecretFile.bytesMax)
    file("panel.com_file", config.panel.comFile, 256)
    if config.keypad.enabled { file("keypad.pin_key_file", config.keypad.pinKeyFile, SecretFile.bytesMax) }
    return list
  }

  /// Each configured path that is refused, with why.
  public static func problems(_ config: ScanConfig) -> [(entry: Entry, problem: String)] {
    entries(config).compactMap { entry in problem(entry).map { (entry, $0) } }
  }

}
