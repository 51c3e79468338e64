import CLinux
import Glibc
import ScanCore
import ScanLoop
import ScanPlatform

/// Loads the schedule file into a `ScheduleStore` and reloads it when it changes: a poll
/// participant that looks at the file's modification time and size once a second (one stat;
/// the file is small and changes rarely). A bad or unreadable file keeps the live schedules (the
/// parse error stays in the store, the count here).
public final class ScheduleFileWatcher: PollParticipant {
  public let path: String
  public let store: ScheduleStore
  private var nextCheck: Instant
  private var seen: (seconds: Int, nanoseconds: Int, size: Int) = (-1, -1, -1)
  public private(set) var loads: UInt64 = 0
  public private(set) var rejections: UInt64 = 0
  /// Where a refusal's why goes (the journal), when set.
  public var notes: JournalNotes? = nil

  public init(path: String, store: ScheduleStore, now: Instant) {
    self.path = path
    self.store = store
    nextCheck = now
  }

  public var pollCapacity: Int { 0 }
  public func prepare(_ poll: PollSet, now: Instant) -> Instant? { nextCheck }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard now >= nextCheck else { return }
    nextCheck = now.adding(milliseconds: 1_000)
    var st = stat()
    guard stat(path, &st) == 0 else { return }
    let stamp = (Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_size))
    guard stamp != seen else { return }
    seen = stamp
    _ = reload(now: now)
  }

  /// Reads and loads the file now; the error when it was rejected (the live set stays).
  @discardableResult
  public func reload(now: Instant) -> String? {
    let problem: String?
    do throws(FileError) {
      problem = store.load(try readWholeFile(path, maxBytes: ScheduleSet.fileBytesMax)).map { "\($0)" }
    } catch { problem = "\(error)" }
    if problem == nil { loads &+= 1 } else { rejections &+= 1 }
    if let problem, let notes {
      notes.post("scangate: schedule \(path): \(problem); the live schedules stay (version \(store.version))", after: 0)
    }
    return problem
  }
}

extension ScheduleReferences {
  /// What a tool (`check-config`, `allow-list import`) resolves `schedule=` names against: the
  /// schedule file at `path` as the reader would load it (empty: none is configured).
  public static func of(file path: String) -> ScheduleReferences {
    guard !path.isEmpty else { return .noFile }
    do throws(FileError) {
      switch ScheduleSet.parse(try readWholeFile(path, maxBytes: ScheduleSet.fileBytesMax)) {
      case .success(let set): return .names(set.names)
      case .failure(let error): return .unreadable("\(path): \(error)")
      }
    } catch { return .unreadable("\(error)") }
  }
}
