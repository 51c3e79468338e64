import CAllocCounter
import Glibc
import ScanCore
import ScanLinux
import Testing

/// The state-file watch runs on the loop's thread once a second: with every file in place it
/// must allocate nothing (the guest's allocation check on real drivers counts the loop's thread).
@Suite(.serialized) struct StateFileWatchAllocationTests {
  @Test("the once-a-second look for every state file (slot files, the tag key) allocates nothing while they are there")
  func watchAllocatesNothing() throws {
    var template = Array("/tmp/scangate-watch-alloc-XXXXXX".utf8CString)
    let dir = String(cString: try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }))
    defer { _ = system("rm -rf '\(dir)'") }
    let slots = try SlotFile(path: dir + "/latch", slotBytes: 16, slotsMax: 1, reservingSlots: 1) { _, _ in }
    #expect(slots.write(0) { $0[0] = 1 })
    let key = try #require(TagKey.forService(logPath: dir + "/audit.db"))
    let keyPath = TagKey.defaultPath(forLog: dir + "/audit.db")
    let keyFile = TagKeyFile(key: key, path: keyPath)
    let watch = StateFileWatch(restoring: [keyFile])
    let poll = PollSet(capacity: 4)
    let requests = LoopRequests()
    var now = Instant(nanoseconds: 1_000_000_000)
    for _ in 0..<3 {
      _ = watch.prepare(poll, now: now)
      now = now.adding(milliseconds: 1_001)
      watch.service(poll, now: now, requests: requests)
    }
    alloc_counter_reset()
    for _ in 0..<20 {
      _ = watch.prepare(poll, now: now)
      now = now.adding(milliseconds: 1_001)
      watch.service(poll, now: now, requests: requests)
    }
    let allocations = alloc_counter_mallocs()
    #expect(allocations == 0, "\(allocations) allocations in 20 looks")
    // And it does its job: the latch deleted is made again at the next look.
    #expect(unlink(dir + "/latch") == 0)
    _ = watch.prepare(poll, now: now)
    watch.service(poll, now: now.adding(milliseconds: 1_001), requests: requests)
    #expect(fileExists(dir + "/latch"))
    #expect(unlink(keyPath) == 0)
    _ = watch.prepare(poll, now: now.adding(milliseconds: 1_001))
    watch.service(poll, now: now.adding(milliseconds: 2_002), requests: requests)
    #expect(try TagKey.load(keyPath).tag(Digest.zero) == key.tag(Digest.zero), "the same key written back")
  }
}
