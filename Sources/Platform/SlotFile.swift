import CLinux
import Glibc
import ScanBase
import Synchronization

/// Fixed-size records in a file of the reader's own (mode 0600, never a symlink, refused unless
/// regular: `openSlotFile`), read whole at start and written one slot at a time with `pwrite` +
/// `fdatasync` before what it protects takes effect: the turnstile's anti-passback records and
/// occupancy, the lockdown latch. A file whose size is not whole slots is refused (damaged).
/// Nothing allocates after `init`.
public final class SlotFile {
  public let path: String
  public let slotBytes: Int
  public let slotsMax: Int
  private var descriptor: Int32
  private let slot: UnsafeMutableRawBufferPointer
  public private(set) var writeFailures = 0
  /// Times the file was found deleted or replaced at its path while in use and made again there
  /// from what this reader held (its open descriptor still reads the old content).
  public private(set) var recreated = 0
  /// What the path held when opened; the folder's mode (to make it again when it was deleted).
  private var identity: FileIdentity
  private let folderMode: mode_t
  /// The path as a C string, made once (the identity check after each write allocates nothing).
  private let cPath: UnsafeMutablePointer<CChar>
  private let reservingBytes: Int64
  /// Whether the first `reservingSlots` slots' blocks are allocated: a disk that fills later
  /// cannot refuse their writes. False when not asked, or the file system could not (the disk
  /// was already full, or no fallocate): writes then need blocks as they go.
  public private(set) var reserved = false

  /// Opens (or creates) `path` and hands each slot it holds (at most `slotsMax`) to `load`.
  /// `reservingSlots`: allocate the blocks of that many slots now (the file's size unchanged), so
  /// that the state keeps being written, and what it protects keeps working, on a disk that
  /// fills up later (anti-passback and occupancy, the lockdown latch, rotating steps, used passes).
  public init(
    path: String, slotBytes: Int, slotsMax: Int, reservingSlots: Int = 0,
    load: (Int, UnsafeRawBufferPointer) throws(FileError) -> Void
  ) throws(FileError) {
    precondition(slotBytes > 0 && slotsMax > 0)
    self.path = path
    self.slotBytes = slotBytes
    self.slotsMax = slotsMax
    // A file this reader kept, gone while it was stopped: a fault, never a fresh start.
    if !fileExists(path) && StateFileList.names(path) { throw StateFileList.missing(path) }
    let (fd, size) = try openSlotFile(path)
    descriptor = fd
    slot = .allocate(byteCount: slotBytes, alignment: 8)
    cPath = strdup(path)
    identity = (try? fileStatus(fd, path)).map(FileIdentity.init) ?? FileIdentity(stat())
    var folder = stat()
    folderMode = stat(StateFileList.folder(of: path), &folder) == 0 ? folder.st_mode & 0o7777 : 0o750
    reservingBytes = Int64(slotBytes * min(reservingSlots, slotsMax))
    if reservingSlots > 0 {
      let length = reservingBytes
      reserved = (try? syscall("fallocate \(path)", { sg_reserve_blocks(fd, length) })) != nil
    }
    do { try StateFileList.add(path) } catch {
      writeStandardError("scangate: \(StateFileList.path(beside: path)): \(error.reason): a deletion of \(path) while stopped would not be noticed\n")
    }
    do throws(FileError) {
      guard size % slotBytes == 0 else {
        throw FileError(path: path, reason: "\(size) bytes is not a whole number of \(slotBytes)-byte slots: damaged, refused")
      }
      for i in 0..<min(size / slotBytes, slotsMax) {
        var problem: String? = nil
        do {
          let got = try syscall("pread \(path)", { pread(fd, slot.baseAddress, slotBytes, off_t(i * slotBytes)) })
          if got != slotBytes { problem = "\(got) of \(slotBytes) bytes" }
        } catch { problem = error.code.description }
        if let problem { throw FileError(path: path, reason: "cannot read slot \(i): \(problem)") }
        try load(i, UnsafeRawBufferPointer(slot))
      }
    } catch {
      throw error  // every stored property is set: deinit closes the file and frees the slot
    }
    owner = pthread_self()
    let entry = Registered(self)
    Self.registry.withLock { list in
      list.removeAll { $0.file == nil }
      list.append(entry)
    }
  }

  // MARK: - Checked without a write (StateFileWatch)

  /// The thread that opened it (its owner: only that thread checks it).
  private var owner = pthread_t()
  private final class Registered: @unchecked Sendable {
    weak var file: SlotFile?
    init(_ file: SlotFile) { self.file = file }
  }
  /// Every slot file open in this process, weakly.
  private static let registry = Mutex<[Registered]>([])

  /// A deletion or replacement of the file at its path, found without waiting for a write: made
  /// again there from what the reader holds (as after a write), so that a restart finds it.
  /// True when it had to be. Allocates nothing unless it makes the file again.
  public func checkPath() -> Bool {
    guard FileIdentity.at(cPath) != identity else {
      checkBackoff = 0
      return false
    }
    // After a failed attempt (a full disk), tried again once a minute, not every second: said
    // once a minute in the journal. A write still tries at once.
    if checkBackoff > 0 {
      checkBackoff -= 1
      return false
    }
    if recreate() { return true }
    checkBackoff = 59
    return false
  }
  private var checkBackoff = 0

  /// `checkPath` for every slot file the calling thread opened (the loop's, once a second):
  /// how many were made again.
  @discardableResult
  public static func checkAll() -> Int {
    let me = pthread_self()
    // Looked at under the lock, never copied out (a copy would allocate once a second).
    return registry.withLock { list in
      var made = 0
      for i in list.indices {
        guard let file = list[i].file, pthread_equal(file.owner, me) != 0 else { continue }
        if file.checkPath() { made += 1 }
      }
      return made
    }
  }

  deinit {
    closeDescriptor(descriptor)
    slot.deallocate()
    free(cPath)
  }

  /// Writes slot `index` as `fill` lays it out (the buffer starts zeroed) and syncs it; false
  /// when it is not durable.
  public func write(_ index: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
    precondition(index >= 0 && index < slotsMax)
    slot.initializeMemory(as: UInt8.self, repeating: 0)
    fill(slot)
    let offset = off_t(index * slotBytes), fd = descriptor, base = slot.baseAddress, n = slotBytes
    let written = try? syscall("pwrite \(path)", { pwrite(fd, base, n, offset) })
    guard written == slotBytes, (try? syscall("fdatasync \(path)", { fdatasync(fd) })) != nil else {
      writeFailures += 1
      return false
    }
    // Durable at its path, or not durable: a synced write to a file whose name is gone protects
    // nothing after a restart.
    guard FileIdentity.at(cPath) == identity || recreate() else {
      writeFailures += 1
      return false
    }
    return true
  }

  /// The file was deleted or replaced at its path (its folder too, perhaps): made again there,
  /// durably, from the content the open descriptor still reads (this write included), with a line
  /// in the journal. False when it cannot be (nothing changes then, and the write is not durable).
  private func recreate() -> Bool {
    let fd = descriptor
    guard let st = try? fileStatus(fd, path) else { return false }
    let size = Int(st.st_size)
    var bytes = [UInt8](repeating: 0, count: size)
    let got = bytes.withUnsafeMutableBytes { b in (try? syscall("pread \(path)", { pread(fd, b.baseAddress, size, 0) })) ?? -1 }
    guard got == size else { return false }
    let folder = StateFileList.folder(of: path)
    if !isDirectory(folder) {
      let mode = folderMode
      guard (try? syscall("mkdir \(folder)", { mkdir(folder, mode) })) != nil else { return false }
      _ = try? syncDirectory(of: folder)
    }
    do throws(FileError) {
      try writeFileAtomically(path, bytes, mode: 0o600)
      let (newFD, _) = try openSlotFile(path)
      guard let now = try? fileStatus(newFD, path) else {
        closeDescriptor(newFD)
        return false
      }
      identity = FileIdentity(now)
      closeDescriptor(descriptor)
      descriptor = newFD
      if reservingBytes > 0 {
        let length = reservingBytes
        reserved = (try? syscall("fallocate \(path)", { sg_reserve_blocks(newFD, length) })) != nil
      }
      try? StateFileList.add(path)
    } catch {
      writeStandardError("scangate: \(path) was deleted or replaced while in use and cannot be made again (\(error.reason)): what it protects is refused\n")
      return false
    }
    recreated += 1
    writeStandardError("scangate: \(path) was deleted or replaced while in use: made again from what the reader held\n")
    return true
  }
}
