import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// The one durable write (Files.swift) in its two halves, the secret's rule, and the descriptor
/// helpers it uses: what is on disk after each step, read back with the C library.
@Suite struct DurableWriteTests {
  func contents(_ path: String) -> String? {
    (try? readWholeFile(path, maxBytes: 1 << 16)).map { String(decoding: $0, as: UTF8.self) }
  }

  func mode(_ path: String) -> mode_t? {
    var st = stat()
    return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
  }

  @Test("a staged file is whole beside its target and the target untouched until replace(); discard() leaves only the target")
  func stageThenReplaceOrDiscard() throws {
    let dir = temporaryDirectory("durable")
    defer { removeTree(dir) }
    let path = dir + "/state"
    writeFile(path, "old\n")
    let staged = try stageFile(path, Array("new\n".utf8), suffix: ".bundle", rule: .mode(0o640))
    #expect(staged.temporary == path + ".bundle")
    #expect(contents(staged.temporary) == "new\n" && mode(staged.temporary) == 0o640)
    #expect(contents(path) == "old\n")
    staged.discard()
    #expect(!fileExists(staged.temporary) && contents(path) == "old\n")
    try stageFile(path, Array("newer\n".utf8), rule: .mode(0o640)).replace()
    #expect(contents(path) == "newer\n" && mode(path) == 0o640 && !fileExists(path + ".tmp"))
  }

  @Test("createNew never overwrites: an existing target keeps its bytes, the temporary is removed, the error says so")
  func createNewRefusesAnExistingTarget() throws {
    let dir = temporaryDirectory("durable")
    defer { removeTree(dir) }
    let path = dir + "/key"
    try stageFile(path, Array("first\n".utf8), suffix: ".new", rule: .secret).createNew()
    #expect(contents(path) == "first\n" && mode(path) == 0o600 && !fileExists(path + ".new"))
    let second = try stageFile(path, Array("second\n".utf8), suffix: ".new", rule: .secret)
    #expect(throws: FileError(path: path, reason: Errno(EEXIST).description)) { try second.createNew() }
    #expect(contents(path) == "first\n" && !fileExists(path + ".new"))
  }

  @Test("a secret's temporary is made anew: a symlink left at its name is removed, never written through")
  func secretTemporaryIsNeverFollowed() throws {
    let dir = temporaryDirectory("durable")
    defer { removeTree(dir) }
    let victim = dir + "/victim"
    writeFile(victim, "keep\n")
    let path = dir + "/scbk"
    #expect(symlink(victim, path + ".next") == 0)
    try SecretFile.replace(path, Array("00112233445566778899aabbccddeeff\n".utf8))
    #expect(contents(victim) == "keep\n")
    #expect(contents(path) == "00112233445566778899aabbccddeeff\n" && mode(path) == 0o600 && mode(path + ".next") == nil)
    try SecretFile.replace(path, Array("ffeeddccbbaa99887766554433221100\n".utf8))
    #expect(try SecretFile.read(path) == Array("ffeeddccbbaa99887766554433221100".utf8))
  }

  @Test("the shared rule gives the mode asked for; a failed rename leaves no temporary")
  func modeAndFailedRename() throws {
    let dir = temporaryDirectory("durable")
    defer { removeTree(dir) }
    try writeFileAtomically(dir + "/list", Array("text:A\n".utf8), mode: 0o600)
    #expect(mode(dir + "/list") == 0o600)
    try writeFileAtomically(dir + "/list", Array("text:B\n".utf8), mode: 0o644)
    #expect(mode(dir + "/list") == 0o644 && contents(dir + "/list") == "text:B\n")
    // A directory at the target: rename(2) refuses (EISDIR), the staged bytes go away.
    #expect(mkdir(dir + "/busy", 0o700) == 0)
    #expect(mkdir(dir + "/busy/inside", 0o700) == 0)
    #expect(throws: FileError.self) { try writeFileAtomically(dir + "/busy", Array("x\n".utf8)) }
    #expect(!fileExists(dir + "/busy.tmp") && isDirectory(dir + "/busy"))
  }

  @Test("removeFile: a missing file is not a failure, a directory is; closeDescriptor closes")
  func removeAndClose() throws {
    let dir = temporaryDirectory("durable")
    defer { removeTree(dir) }
    writeFile(dir + "/f", "x")
    #expect(removeFile(dir + "/f") && !fileExists(dir + "/f"))
    #expect(removeFile(dir + "/f"))
    #expect(mkdir(dir + "/d", 0o700) == 0)
    #expect(!removeFile(dir + "/d") && isDirectory(dir + "/d"))
    // The only write end of a pipe, closed: the read end sees the end of the stream.
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    defer { closeDescriptor(ends[0]) }
    closeDescriptor(ends[1])
    var buffer = [UInt8](repeating: 0, count: 4)
    #expect(try readSome(ends[0], into: &buffer) == 0)
  }

  @Test("a slot file reserving its slots has their blocks allocated at open, its size still 0; on a full disk those slots are still written")
  func slotFileReserves() throws {
    let dir = temporaryDirectory("slots")
    defer { removeTree(dir) }
    let path = dir + "/passback"
    let file = try SlotFile(path: path, slotBytes: 48, slotsMax: 4096, reservingSlots: 4096) { _, _ in }
    #expect(file.reserved)
    var st = stat()
    #expect(stat(path, &st) == 0)
    #expect(st.st_size == 0, "the size is unchanged: slots are read back only as written")
    #expect(Int(st.st_blocks) * 512 >= 48 * 4096, "\(st.st_blocks) blocks of 512 bytes")
    let plain = try SlotFile(path: dir + "/plain", slotBytes: 48, slotsMax: 4096) { _, _ in }
    #expect(!plain.reserved)

    // On a 1 MiB tmpfs filled to the last block: a reserved slot file's last slot is still
    // written (and synced); an unreserved one's first write past its end is refused.
    let mount = dir + "/small"
    _ = mkdir(mount, 0o700)
    guard Glibc.mount("tmpfs", mount, "tmpfs", 0, "size=1m") == 0 else {
      Issue.record("cannot mount a tmpfs here (needs root): \(Errno.current)")
      return
    }
    defer { _ = umount2(mount, Int32(MNT_DETACH)) }
    let reserved = try SlotFile(path: mount + "/reserved", slotBytes: 48, slotsMax: 4096, reservingSlots: 4096) { _, _ in }
    let unreserved = try SlotFile(path: mount + "/unreserved", slotBytes: 48, slotsMax: 4096) { _, _ in }
    let filler = open(mount + "/filler", O_WRONLY | O_CREAT, 0o600)
    let block = [UInt8](repeating: 1, count: 4096)
    while write(filler, block, block.count) == block.count {}
    close(filler)
    #expect(reserved.write(4095) { $0[0] = 7 })
    #expect(!unreserved.write(4095) { $0[0] = 7 })
  }
}
