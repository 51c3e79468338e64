import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// What `check-config` says about the files around the configuration: their modes (config,
/// allow-list, schedules, trust, revocation: 0640 root:scangate at most), OSDP install mode
/// (ignored once a key is installed), and whether what the service writes (a panel's KEYSET and
/// COMSET, the fleet's bundles) is in the one place the packaged unit lets it write.
enum CheckConfigFiles {
  /// Prints one line per finding; warnings start with "warning:". Returns how many warnings.
  @discardableResult
  static func report(_ config: ScanConfig, configPath: String, trusted: ProtectedFile.Trusted = .current()) -> Int {
    var warnings = 0
    func warn(_ text: String) {
      print("warning: " + text)
      warnings += 1
    }
    var files: [(String, String)] = [("config", configPath), ("allow-list", config.allowListPath)]
    if !config.door.schedulePath.isEmpty { files.append(("schedules", config.door.schedulePath)) }
    if let path = config.credentials.trustFile { files.append(("trust", path)) }
    if let path = config.credentials.revocationFile { files.append(("revocation", path)) }
    for (role, path) in files {
      if let problem = ProtectedFile.check(path, trusted: trusted) { warn("\(role) \(path): \(problem)") }
    }

    let panel = config.panel
    if panel.mode == .panel && panel.link == .osdp {
      // A panel's KEYSET and COMSET are stored by the service: under the packaged unit only its
      // state directory is writable.
      for (key, path, what) in [("scbk_file", panel.scbkFile, "KEYSET"), ("com_file", panel.comFile, "COMSET")]
      where !path.isEmpty && !FleetBundleFiles.isInStateDirectory(path) {
        warn(
          "panel.\(key) \(path) is outside \(FleetBundleFiles.stateDirectory): the packaged service (ProtectSystem=strict) "
            + "cannot store a panel's \(what) there")
      }
    }
    if panel.installMode {
      if !panel.scbkFile.isEmpty && fileExists(panel.scbkFile) {
        print("panel: install mode ignored: a key is installed (\(panel.scbkFile)); the default key SCBK-D is refused")
      } else {
        warn("panel: install mode is on: the default key SCBK-D is accepted until a panel installs a key (KEYSET); only on a bus nobody else can reach")
      }
    }

    if config.allowListPath.hasPrefix("/etc/") && !config.fleet.isEnabled {
      // The packaged unit cannot write /etc: the console's ENROL, REMOVE and PIN changes fail there.
      warn(
        "allow-list \(config.allowListPath) is in /etc, which the packaged service (ProtectSystem=strict) cannot write: "
          + "ENROL, REMOVE and `scangate allow-list enrol` through the console will be refused; the packaged default is "
          + "\(FleetBundleFiles.stateDirectory)/allow-list.txt (docs/admin.md, \"Where the allow-list lives\")")
    }
    if config.fleet.isEnabled {
      for (name, path) in FleetBundleFiles.targets(config).sorted(by: { $0.key < $1.key }) {
        if FleetBundleFiles.isInStateDirectory(path) {
          print("fleet: a signed bundle may replace \(name): \(path)")
        } else if name == "trust" {
          // The recommended place: issuer keys stay with the administrator.
          print("fleet: trust \(path) is read-only to the service: bundles carrying trust are refused")
        } else {
          warn(
            "fleet: \(name) \(path) is outside \(FleetBundleFiles.stateDirectory): the packaged service (ProtectSystem=strict) "
              + "cannot replace it, so bundles carrying \(name) are refused; a fleet-managed file belongs in "
              + "\(FleetBundleFiles.fleetDirectory) (docs/fleet.md)")
        }
      }
    }
    return warnings
  }

  /// Whether this configuration asks for a PIN after the pass: a keypad that is the engine's
  /// second factor (in panel mode over OSDP the keys go to the panel, which checks them).
  static func asksForPin(_ config: ScanConfig) -> Bool {
    config.keypad.enabled && !(config.panel.mode == .panel && config.panel.link == .osdp)
  }

  /// Why entries that need a PIN would be refused on this reader, or nil: a credential that
  /// needs what the reader cannot ask for is `denied-pin-unavailable` (docs/credentials.md).
  static func pinProblem(_ config: ScanConfig, pinEntries: Int) -> String? {
    guard pinEntries > 0 && !asksForPin(config) else { return nil }
    let why = config.keypad.enabled ? "in panel mode the keys go to the panel" : "no [keypad] is configured"
    return "\(config.allowListPath): \(pinEntries) entries need a PIN after the pass and this reader cannot ask for one "
      + "(\(why)): each is denied-pin-unavailable, and so is a signed pass with a PIN"
  }

  /// The schedule file and the allow-list as the service would load them, every `schedule=`
  /// resolved and every entry that needs a PIN this reader cannot ask for named; false on a refusal.
  /// `bytes` gives a file's content in place of the disk's (a backup's, before it is restored).
  static func checkLists(_ config: ScanConfig, reading bytes: (String) -> [UInt8]? = { _ in nil }) -> Bool {
    var ok = true
    let schedules: ScheduleReferences
    if let text = bytes(config.door.schedulePath) {
      switch ScheduleSet.parse(text) {
      case .success(let set): schedules = .names(set.names)
      case .failure(let error): schedules = .unreadable("\(config.door.schedulePath): \(error)")
      }
    } else {
      schedules = ScheduleReferences.of(file: config.door.schedulePath)
    }
    if case .unreadable(let why) = schedules {
      print("schedules: \(why)")
      ok = false
    } else if case .names(let names) = schedules {
      print("\(config.door.schedulePath): \(names.count) schedules (\(names.joined(separator: ", ")))")
    }
    var list = AllowList(limits: config.engine.allowList)
    let given = bytes(config.allowListPath).map { Result<[UInt8], AllowListReadFailure>.success($0) }
    switch given ?? AllowListFile.read(config.allowListPath, maxBytes: config.engine.allowList.fileBytesMax) {
    case .success(let bytes):
      if let error = list.load(bytes, digester: SodiumDigester(), schedules: schedules, nowUnixSeconds: SystemWallClock().unixSeconds()) {
        print("\(config.allowListPath): \(error)")
        ok = false
      } else {
        print("\(config.allowListPath): \(list.count) entries")
        if let refused = CheckConfigFiles.pinProblem(config, pinEntries: list.pinEntryCount) {
          print("refused: \(refused)")
          ok = false
        }
      }
    case .failure(let failure):
      print("allow-list: \(failure.error)")
      ok = false
    }
    return ok
  }
}
