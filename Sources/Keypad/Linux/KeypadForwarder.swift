import CLinux
import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform

/// The keypad in panel mode (docs/admin.md "PIN after the pass"): the panel decides and checks
/// PINs, so every key typed goes to it as it is typed (`KeypadSink`: the OSDP link's next POLL
/// carries them as osdp_KEYPAD). Nothing is checked, kept or logged here: the keys are the
/// panel's. A poll participant on the loop's thread; nothing allocates per key.
public final class KeypadForwarder: PollParticipant {
  private var source: (any KeySource)?
  private let sourceName: String
  /// Opens the keypad again (unplugged and plugged back): tried every 2 s while it is missing.
  private let reopen: (() -> (any KeySource)?)?
  private var nextReopen = Instant(nanoseconds: 0)
  private let sink: any KeypadSink
  private var token = PollSet.Token.none
  /// Counters for STATUS.
  public private(set) var forwarded: UInt64 = 0
  public private(set) var dropped: UInt64 = 0

  public init(source: (any KeySource)?, sourceName: String, reopen: (() -> (any KeySource)?)? = nil, sink: any KeypadSink) {
    self.source = source
    self.sourceName = sourceName
    self.reopen = reopen
    self.sink = sink
  }

  public var pollCapacity: Int { 1 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if source == nil, let reopen, now >= nextReopen {
      nextReopen = now.adding(milliseconds: 2_000)
      source = reopen()
    }
    token = .none
    if let source { token = poll.add(source.descriptor, events: Int16(POLLIN)) }
    return source == nil && reopen != nil ? nextReopen : nil
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    guard let source, token != .none, poll.revents(token) != 0 else { return }
    let alive = source.read { key in
      if sink.forward(key) { forwarded &+= 1 } else { dropped &+= 1 }
    }
    if !alive { self.source = nil }
  }

  /// STATUS: `keypad <device> ok, keys to the panel (osdp_KEYPAD): 12 forwarded, 0 dropped`.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    let line =
      sourceName + (source == nil ? " MISSING (no keys reach the panel)" : " ok")
      + ", keys to the panel (osdp_KEYPAD): \(forwarded) forwarded, \(dropped) dropped"
    status.sections.append(StatusSection("keypad", line))
  }
}
