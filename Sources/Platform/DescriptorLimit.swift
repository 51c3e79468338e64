import Glibc
import ScanBase

/// The open-file limit a reader needs (RLIMIT_NOFILE): checked, and raised to what the hard limit
/// allows, before anything is opened, so that a low `ulimit -n` is one clear refusal at the start
/// ("too many open files"), never a failure deep inside (a decoder worker's spawn said "Invalid
/// argument").
public enum DescriptorLimit {
  /// Descriptors for everything but the console's clients: cameras and their epoll, the decoder
  /// workers' memory and channels (and the copies made to spawn them above 16), GPIO lines, the
  /// audit log (SQLite: database, WAL, shm), state files, the fleet link, signalfd, timerfd,
  /// inotify, the console's listeners, with room to spare.
  public static let base = 64

  public static func needed(consoleClients: Int) -> Int { base + consoleClients }

  /// Why the limit cannot be had (nil: it is, raised to it when it was lower and could be).
  public static func ensure(_ needed: Int) -> String? {
    var limit = rlimit()
    guard (try? syscall("getrlimit", { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) })) != nil else { return nil }
    guard limit.rlim_cur < rlim_t(needed) else { return nil }
    if limit.rlim_max >= rlim_t(needed) {
      var raised = limit
      raised.rlim_cur = rlim_t(needed)
      if (try? syscall("setrlimit", { setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) })) != nil { return nil }
    }
    return "too many open files: the open-file limit (ulimit -n) is \(limit.rlim_cur), hard limit \(limit.rlim_max); "
      + "this configuration needs at least \(needed) (console.clients_max + \(base)): raise it (LimitNOFILE= in the unit)"
  }
}
