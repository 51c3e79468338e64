import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// `scangate backup create | check | restore` on the built binary, against a reader's folder:
/// what is archived and what is not in the clear, a restore that puts lists and secrets back,
/// keeps the reader's own state, writes state that is missing, and refuses whole (nothing
/// replaced) an archive whose lists would not load.
@Suite struct BackupCommandTests {
  func backup(_ arguments: String, pass: String = "a long backup passphrase") -> (Int32, String) {
    runCommand(["/bin/sh", "-c", "printf '%s\\n' '\(pass)' | '\(scangateBinary)' backup \(arguments) 2>&1"])
  }

  func text(_ path: String) -> String { (try? readWholeFile(path, maxBytes: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "(none)" }

  func mode(_ path: String) -> mode_t {
    var st = stat()
    return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
  }

  @Test("create, then restore after the lists, a secret and state changed: lists and secret back, the newer state kept, missing state written")
  func createAndRestore() {
    let (dir, config) = hankReader("backup-cli", state: true)
    defer { removeTree(dir) }
    writeFile(dir + "/state/lockdown", "LOCKDOWN-BEFORE")
    writeFile(dir + "/state/occupancy", "OCCUPANCY-BEFORE")
    var (status, out) = backup("create --config '\(config)' --out '\(dir)/site.sgbackup'")
    #expect(status == 0, "\(out)")
    #expect(out.contains("archived: secret console.secret_file \(dir)/secret") && out.contains("archived: list allow_list.path"), "\(out)")
    #expect(out.contains("archived: state state:_lockdown"), "\(out)")
    #expect(mode(dir + "/site.sgbackup") == 0o600)
    let archive = text(dir + "/site.sgbackup")
    #expect(!archive.contains("HANK-0001") && !archive.contains("correct horse") && !archive.contains("LOCKDOWN-BEFORE"))
    #expect(archive.hasPrefix("scangate-backup 1\nkdf argon2id13 salt=") && archive.contains(" files=") && archive.contains(" secrets=1\n"))

    // Things change: a person removed, the secret gone, the lockdown latch newer, occupancy lost.
    writeFile(dir + "/allow-list.txt", "text:OTHER label=other\n")
    _ = unlink(dir + "/secret")
    writeFile(dir + "/state/lockdown", "LOCKDOWN-NEWER")
    _ = unlink(dir + "/state/occupancy")
    (status, out) = backup("check '\(dir)/site.sgbackup' --config '\(config)'", pass: "not the passphrase at all")
    #expect(status == 1 && out.contains("the passphrase is wrong"), "\(out)")
    (status, out) = backup("check '\(dir)/site.sgbackup' --config '\(config)'")
    #expect(status == 0 && out.contains("allow_list.path \(dir)/allow-list.txt: would write"), "\(out)")
    #expect(text(dir + "/allow-list.txt") == "text:OTHER label=other\n", "check writes nothing")
    // A directory where the secret goes: refused before anything is written.
    _ = mkdir(dir + "/secret", 0o700)
    (status, out) = backup("restore '\(dir)/site.sgbackup' --config '\(config)'")
    #expect(status == 1 && out.contains("\(dir)/secret: ") && out.contains("nothing was replaced"), "\(out)")
    #expect(text(dir + "/allow-list.txt") == "text:OTHER label=other\n")
    _ = rmdir(dir + "/secret")
    (status, out) = backup("restore '\(dir)/site.sgbackup' --config '\(config)'")
    #expect(status == 0, "\(out)")
    #expect(out.contains("state:_lockdown \(dir)/state/lockdown: keep the reader's own"), "\(out)")
    #expect(text(dir + "/allow-list.txt") == "text:HANK-0001 label=hank\n")
    #expect(text(dir + "/secret") == "correct horse battery staple\n" && mode(dir + "/secret") == 0o600)
    #expect(text(dir + "/state/lockdown") == "LOCKDOWN-NEWER" && text(dir + "/state/occupancy") == "OCCUPANCY-BEFORE")
    (status, out) = runCommand([scangateBinary, "check-config", "--config", config])
    #expect(status == 0, "the restored reader's configuration checks: \(out)")
  }

  @Test("an archive whose allow-list would not load, or made without secrets: the first refused with nothing replaced, the second restores no secret")
  func refusedWhole() {
    let (dir, config) = hankReader("backup-bad", allowList: "text:HANK-0001 label=hank schedule=nowhere\n", state: true)
    defer { removeTree(dir) }
    var (status, out) = backup("create --config '\(config)' --out '\(dir)/bad.sgbackup' --no-secrets")
    #expect(status == 0 && out.contains("skipped: console.secret_file \(dir)/secret: a secret (left out)"), "\(out)")
    #expect(text(dir + "/bad.sgbackup").contains(" secrets=0\n"))
    writeFile(dir + "/allow-list.txt", "text:OTHER label=other\n")
    writeFile(dir + "/config.toml", text(config) + "\n# changed\n")
    let before = (text(dir + "/allow-list.txt"), text(config))
    (status, out) = backup("restore '\(dir)/bad.sgbackup' --config '\(config)'")
    #expect(status == 1 && out.contains("nothing was replaced") && out.contains("schedule=nowhere"), "\(out)")
    #expect((text(dir + "/allow-list.txt"), text(config)) == before)
    #expect(readdirNames(dir).allSatisfy { !$0.hasSuffix(".restore") })
    // Not an archive at all; a passphrase too short.
    writeFile(dir + "/junk.sgbackup", "hello\n")
    (status, out) = backup("check '\(dir)/junk.sgbackup' --config '\(config)'")
    #expect(status == 1 && out.contains("not a ScanGate backup"), "\(out)")
    (status, out) = backup("check '\(dir)/bad.sgbackup'", pass: "short")
    #expect(status == 2 && out.contains("12 to 1024 bytes"), "\(out)")
  }

  @Test("an archive whose configuration names a file outside the configuration's folder and the reader's: refused whole, as root too")
  func outsideFolders() {
    let elsewhere = temporaryDirectory("backup-elsewhere")
    let (dir, config) = hankReader("backup-outside", state: true) { _ in "" }
    defer {
      removeTree(dir)
      removeTree(elsewhere)
    }
    // The secret is named in another folder (as a crafted archive would name /etc/cron.d/x).
    writeFile(elsewhere + "/cron", "* * * * * root evil\n")
    chmod(elsewhere + "/cron", 0o600)
    writeFile(config, text(config).replacing("secret_file = \"\(dir)/secret\"", with: "secret_file = \"\(elsewhere)/cron\""))
    var (status, out) = backup("create --config '\(config)' --out '\(dir)/x.sgbackup'")
    #expect(status == 0 && out.contains("archived: secret console.secret_file \(elsewhere)/cron"), "\(out)")
    _ = unlink(elsewhere + "/cron")
    (status, out) = backup("restore '\(dir)/x.sgbackup' --config '\(config)'")
    #expect(status == 1 && out.contains("\(elsewhere)/cron: outside") && out.contains("nothing was replaced"), "\(out)")
    #expect(!fileExists(elsewhere + "/cron"))
  }

  func readdirNames(_ dir: String) -> [String] { (try? listDirectory(dir)) ?? [] }
}
