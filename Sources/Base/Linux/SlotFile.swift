import CLinux
import Glibc
import ScanCore

/// Fixed-size records in a file of the reader's own (mode 0600, never a symlink, refused unless
/// regular: `openSlotFile`), read whole at start and written one slot at a time with `pwrite` +
/// `fdatasync` before what it protects takes effect: the turnstile's anti-passback records and
/// occupancy, the lockdown latch. A file whose size is not whole slots is refused (damaged).
/// Nothing allocates after `init`.
public final class SlotFile {
  public let path: String
  public let slotBytes: Int
  public let slotsMax: Int
  private let descriptor: Int32
  private let slot: UnsafeMutableRawBufferPointer
  public private(set) var writeFailures = 0
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
    let (fd, size) = try openSlotFile(path)
    descriptor = fd
    slot = .allocate(byteCount: slotBytes, alignment: 8)
    if reservingSlots > 0 {
      let length = Int64(slotBytes * min(reservingSlots, slotsMax))
      reserved = (try? syscall("fallocate \(path)", { sg_reserve_blocks(fd, length) })) != nil
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
  }

  deinit {
    closeDescriptor(descriptor)
    slot.deallocate()
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
    return true
  }
}
