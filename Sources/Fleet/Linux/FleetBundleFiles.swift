import Glibc
import ScanCore
import ScanPlatform

/// Where the files a signed fleet bundle carries are written, and how.
///
/// The packaged unit runs the service with `ProtectSystem=strict`: /etc is read-only to it, and
/// only its state directory (/var/lib/scangate) is writable. That is on purpose: a reader
/// compromised through its decoder must not rewrite its configuration. So a file the fleet may
/// replace lives in the state directory (`/var/lib/scangate/fleet/`), and config.toml, which
/// the service cannot change, names it there. A target the service cannot write is refused
/// with a reason that says so; nothing is replaced unless every file of the bundle could be
/// written.
public enum FleetBundleFiles {
  /// The packaged unit's `StateDirectory` (systemd passes it as $STATE_DIRECTORY).
  public static var stateDirectory: String {
    if let value = getenv("STATE_DIRECTORY"), let first = String(cString: value).split(separator: ":").first, !first.isEmpty {
      return String(first)
    }
    return "/var/lib/scangate"
  }

  /// Where fleet-managed files belong on a packaged reader.
  public static var fleetDirectory: String { stateDirectory + "/fleet" }

  /// Mode of every delivered file: an allow-list's `text:` entries are working passes, so
  /// never readable by others (owner and group: the service).
  public static let mode: UInt32 = 0o640

  /// Bundle file name → the configured path it replaces (only names configured here may be
  /// applied; schedules join when the reader has a schedule file).
  public static func targets(_ config: ScanConfig) -> [String: String] {
    var targets = ["allow-list": config.allowListPath]
    if let path = config.credentials.revocationFile { targets["revocation"] = path }
    if let path = config.credentials.trustFile { targets["trust"] = path }
    if !config.door.schedulePath.isEmpty { targets["schedules"] = config.door.schedulePath }
    return targets
  }

  /// Whether `path` is inside the state directory (a place the packaged service can write).
  public static func isInStateDirectory(_ path: String) -> Bool {
    let root = stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/"
    return path.hasPrefix(root) && !path.split(separator: "/").contains("..")
  }

  /// The folder holding `path` ("." for a bare name).
  static func folder(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
  }

  /// Writes every file whole beside its target (`<target>.bundle`, mode 0640, synced: the
  /// durable write's first half, `stageFile`), and only when all are written (and `commit`
  /// agreed) renames each into place (the directory synced after each rename).
  /// Returns why not, or nil when every target now holds its new bytes.
  /// `commit` runs once every file is written and before the first rename (the bundle's version
  /// is made durable there); a refusal from it leaves every target as it was.
  static func replace(_ files: [(target: String, bytes: [UInt8])], commit: () -> EnvelopeRefusal? = { nil }) -> EnvelopeRefusal? {
    // A folder the service cannot write (ProtectSystem=strict makes /etc read-only) is named
    // before anything is written.
    for file in files {
      let folder = folder(of: file.target)
      do { _ = try syscall("access \(folder)", { access(folder, W_OK) }) } catch {
        return EnvelopeRefusal(
          "\(file.target) is in \(folder), which the service cannot write (\(error.code)): fleet-managed files belong in "
            + "\(fleetDirectory) and config.toml names them there (docs/fleet.md)")
      }
    }
    var staged: [StagedFile] = []
    for file in files {
      do { staged.append(try stageFile(file.target, file.bytes, suffix: ".bundle", rule: .mode(mode))) } catch {
        for s in staged { s.discard() }
        return EnvelopeRefusal("cannot write \(file.target).bundle: \(error.reason)")
      }
    }
    if let refusal = commit() {
      for s in staged { s.discard() }
      return refusal
    }
    for (index, s) in staged.enumerated() {
      do { try s.replace() } catch {
        for rest in staged[(index + 1)...] { rest.discard() }
        return EnvelopeRefusal("cannot rename into \(s.path): \(error.reason)")
      }
    }
    return nil
  }
}
