import CLinux
import Glibc
import ScanCore
import ScanPlatform

/// SIGTERM and SIGINT stop the loop, SIGHUP reloads the allow-list, through a signalfd (the
/// signals are blocked for the process before any helper thread starts).
public final class SignalSource: PollParticipant {
  private let descriptor: Int32
  private var token = PollSet.Token.none

  public init() { descriptor = (try? syscall("open the signalfd", { sg_signalfd_open() })) ?? -1 }
  deinit { if descriptor >= 0 { closeDescriptor(descriptor) } }

  public var pollCapacity: Int { 1 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    token = poll.add(descriptor, events: Int16(POLLIN))
    return nil
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard poll.revents(token) != 0 else { return }
    for _ in 0..<8 {
      // 0: nothing more to read (EAGAIN inside the shim); an error ends the turn as well.
      let fd = descriptor
      guard let signal = try? syscall("read the signalfd", { sg_signalfd_read(fd) }), signal > 0 else { return }
      switch signal {
      case SIGTERM, SIGINT: requests.post(.stop)
      case SIGHUP: requests.post(.reloadAllowList)
      default: break
      }
    }
  }
}

/// Watches the allow-list's directory with inotify and asks for a reload when the file was
/// written and closed (IN_CLOSE_WRITE) or renamed into place (IN_MOVED_TO). Creation and
/// modification alone never trigger one: a file being written in place is half a file.
public final class AllowListWatcher: PollParticipant {
  private var descriptor: Int32 = -1
  private let name: [UInt8]
  private let buffer: UnsafeMutableRawBufferPointer
  private var token = PollSet.Token.none
  /// A retry the loop asked for (a file that changed while it was read).
  public var retryAt: Instant? = nil

  public init(path: String) {
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    name = Array((slash.map { String(path[path.index(after: $0)...]) } ?? path).utf8)
    buffer = .allocate(byteCount: 4096, alignment: 8)
    // Without inotify the allow-list is reloaded by SIGHUP and RELOAD only (`isWatching` says so).
    guard let fd = try? syscall("inotify_init1", { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }) else { return }
    guard (try? syscall("watch \(directory)", { inotify_add_watch(fd, directory, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) })) != nil else {
      closeDescriptor(fd)
      return
    }
    descriptor = fd
  }

  deinit {
    if descriptor >= 0 { closeDescriptor(descriptor) }
    buffer.deallocate()
  }

  public var isWatching: Bool { descriptor >= 0 }
  public var pollCapacity: Int { 1 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    token = poll.add(descriptor, events: Int16(POLLIN))
    return retryAt
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    if let retry = retryAt, now >= retry {
      retryAt = nil
      requests.post(.reloadAllowList)
    }
    guard poll.revents(token) != 0 else { return }
    if drainMatches() { requests.post(.reloadAllowList) }
  }

  /// Reads every pending inotify record; whether one names the allow-list file.
  private func drainMatches() -> Bool {
    var relevant = false
    for _ in 0..<16 {
      let fd = descriptor, base = buffer.baseAddress, size = buffer.count
      guard case .done(let n) = (try? syscallRetrying("inotify read", { Glibc.read(fd, base, size) })) ?? .wouldBlock,
        n > 0
      else { break }
      var offset = 0
      while offset + 16 <= n {
        let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        let nameStart = offset + 16
        if length > 0 && nameStart + length <= n { relevant = relevant || nameMatches(start: nameStart, length: length) }
        offset = nameStart + length
      }
    }
    return relevant
  }

  private func nameMatches(start: Int, length: Int) -> Bool {
    guard name.count <= length else { return false }
    for i in 0..<name.count where buffer[start + i] != name[i] { return false }
    return name.count == length || buffer[start + name.count] == 0
  }
}

/// Once a second, every state file the loop's thread keeps (`SlotFile`) is looked for at its
/// path: one deleted or replaced while the reader runs (its folder too) is made again from what
/// the reader holds, with a journal line, before a restart could find it missing and start
/// without it (docs/credentials.md, "What survives a restart"). A write finds it at once; this
/// finds it when nothing is written. Adds no descriptor; allocates nothing while all are there.
public final class StateFileWatch: PollParticipant {
  private var due: Instant? = nil
  /// State files that are not slot files (the tag key), each able to put itself back.
  private let others: [any StateFileKeeper]
  public init(restoring others: [any StateFileKeeper] = []) { self.others = others }
  public var pollCapacity: Int { 0 }
  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if due == nil { due = now.adding(milliseconds: 1000) }
    return due
  }
  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard let due, !(now < due) else { return }
    self.due = now.adding(milliseconds: 1000)
    SlotFile.checkAll()
    for i in others.indices { others[i].restoreIfMissing() }
  }
}

/// A state file kept outside `SlotFile` that can put itself back at its path from memory when
/// it is gone; looked at once a second on the loop's thread, so it must not allocate while there.
public protocol StateFileKeeper: AnyObject {
  func restoreIfMissing()
}
