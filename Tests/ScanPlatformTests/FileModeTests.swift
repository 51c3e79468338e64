import CLinux
import Glibc
import ScanCore
@testable import ScanFleetLinux
import ScanLinux
import ScanTestSupport
import Testing

/// Modes of the files around the configuration (issue 26, item 12) and where fleet bundles
/// write (item 6).
@Suite struct FileModeTests {
  static let service = ProtectedFile.Trusted(users: [0, 990], groups: [0, 990])

  static func st(mode: mode_t, uid: uid_t = 0, gid: gid_t = 990) -> stat {
    var s = stat()
    s.st_mode = S_IFREG | mode
    s.st_uid = uid
    s.st_gid = gid
    return s
  }

  @Test("0640 root:scangate and 0600 pass; readable or writable by others, a foreign group or owner is named")
  func modes() {
    #expect(ProtectedFile.problem(Self.st(mode: 0o640), trusted: Self.service) == nil)
    #expect(ProtectedFile.problem(Self.st(mode: 0o600, uid: 990, gid: 990), trusted: Self.service) == nil)
    #expect(ProtectedFile.problem(Self.st(mode: 0o644), trusted: Self.service)?.contains("readable by everyone") == true)
    #expect(ProtectedFile.problem(Self.st(mode: 0o646), trusted: Self.service)?.contains("writable by everyone") == true)
    #expect(ProtectedFile.problem(Self.st(mode: 0o640, gid: 100), trusted: Self.service)?.contains("open to group 100") == true)
    #expect(ProtectedFile.problem(Self.st(mode: 0o600, gid: 100), trusted: Self.service) == nil)
    #expect(ProtectedFile.problem(Self.st(mode: 0o600, uid: 1000), trusted: Self.service)?.contains("owned by uid 1000") == true)
    #expect(ProtectedFile.problem(Self.st(mode: 0o644), trusted: Self.service)?.contains("mode 0644") == true)
  }

  @Test("check-config warns about a world-readable config and allow-list, and is quiet at 0640")
  func checkConfigWarns() {
    let dir = temporaryDirectory("modes")
    defer { removeTree(dir) }
    writeFile(dir + "/allow-list.txt", "text:EMP-004217 label=badge\n")
    writeFile(
      dir + "/config.toml",
      """
      [camera]
      source = "replay"
      replay_path = "\(dir)"
      [allow_list]
      path = "\(dir)/allow-list.txt"
      [gpio]
      backend = "sim"
      [log]
      path = ""
      [decoder]
      isolation = "inline"
      [console]
      listen = []
      """)
    chmod(dir + "/config.toml", 0o644)
    chmod(dir + "/allow-list.txt", 0o644)
    let (status, loose) = runCommand([scangateBinary, "check-config", "--config", dir + "/config.toml"])
    #expect(status == 0, "\(loose)")
    #expect(loose.contains("warning: config \(dir)/config.toml: readable by everyone (mode 0644)"), "\(loose)")
    #expect(loose.contains("warning: allow-list \(dir)/allow-list.txt: readable by everyone (mode 0644)"), "\(loose)")
    chmod(dir + "/config.toml", 0o640)
    chmod(dir + "/allow-list.txt", 0o640)
    let (quietStatus, quiet) = runCommand([scangateBinary, "check-config", "--config", dir + "/config.toml"])
    #expect(quietStatus == 0)
    #expect(!quiet.contains("warning:"), "\(quiet)")
  }

  @Test("check-config: install mode ignored once scbk_file holds a key; fleet targets outside the state directory are named")
  func checkConfigPanelAndFleet() throws {
    let dir = temporaryDirectory("modes-panel")
    defer { removeTree(dir) }
    writeFile(dir + "/allow-list.txt", "text:A\n")
    chmod(dir + "/allow-list.txt", 0o640)
    try SecretFile.create(dir + "/scbk", Array("000102030405060708090a0b0c0d0e0f\n".utf8))
    func config(scbk: String) -> String {
      """
      [camera]
      source = "replay"
      replay_path = "\(dir)"
      [allow_list]
      path = "\(dir)/allow-list.txt"
      [gpio]
      backend = "sim"
      [log]
      path = "\(dir)/audit.db"
      [decoder]
      isolation = "inline"
      [console]
      listen = []
      [panel]
      mode = "panel"
      osdp_port = "\(dir)/ttyUSB0"
      scbk_file = "\(dir)/\(scbk)"
      install_mode = true
      [fleet]
      brokers = ["mqtt://127.0.0.1:1"]
      reader_id = "door-1"
      """
    }
    writeFile(dir + "/config.toml", config(scbk: "scbk"))
    chmod(dir + "/config.toml", 0o640)
    let (status, output) = runCommand([scangateBinary, "check-config", "--config", dir + "/config.toml"])
    #expect(status == 0, "\(output)")
    #expect(output.contains("panel: install mode ignored: a key is installed (\(dir)/scbk)"), "\(output)")
    #expect(output.contains("warning: fleet: allow-list \(dir)/allow-list.txt is outside /var/lib/scangate"), "\(output)")
    #expect(output.contains("warning: panel.scbk_file \(dir)/scbk is outside /var/lib/scangate"), "\(output)")
    // No key yet: install mode is on, and check-config warns.
    writeFile(dir + "/config.toml", config(scbk: "none-yet"))
    let (_, installing) = runCommand([scangateBinary, "check-config", "--config", dir + "/config.toml"])
    #expect(installing.contains("warning: panel: install mode is on"), "\(installing)")
  }

  @Test("a bundle's files: written whole at 0640 and renamed into place; nothing replaced when one target cannot be written")
  func bundleFiles() {
    let dir = temporaryDirectory("bundle")
    defer { removeTree(dir) }
    writeFile(dir + "/allow-list.txt", "text:OLD\n")
    #expect(FleetBundleFiles.replace([(dir + "/allow-list.txt", Array("text:NEW\n".utf8))]) == nil)
    #expect((try? readWholeFile(dir + "/allow-list.txt", maxBytes: 64)) == Array("text:NEW\n".utf8))
    var st = stat()
    #expect(stat(dir + "/allow-list.txt", &st) == 0 && st.st_mode & 0o777 == 0o640)
    #expect(!fileExists(dir + "/allow-list.txt.bundle"))
    let refusal = FleetBundleFiles.replace([
      (dir + "/allow-list.txt", Array("text:NEWER\n".utf8)), (dir + "/missing/revoked.cose", [1, 2, 3]),
    ])
    #expect(refusal?.reason.contains("which the service cannot write") == true, "\(String(describing: refusal))")
    #expect(refusal?.reason.contains("/var/lib/scangate/fleet") == true)
    #expect((try? readWholeFile(dir + "/allow-list.txt", maxBytes: 64)) == Array("text:NEW\n".utf8))
    #expect(!fileExists(dir + "/allow-list.txt.bundle"))
  }

  @Test("fleet targets: inside the state directory or not")
  func stateDirectory() {
    #expect(FleetBundleFiles.isInStateDirectory("/var/lib/scangate/fleet/allow-list.txt"))
    #expect(!FleetBundleFiles.isInStateDirectory("/etc/scangate/allow-list.txt"))
    #expect(!FleetBundleFiles.isInStateDirectory("/var/lib/scangate/../../etc/scangate/config.toml"))
    #expect(!FleetBundleFiles.isInStateDirectory("/var/lib/scangatex/allow-list.txt"))
  }
}
