import ScanConsole
import ScanCore
import ScanLoop
import ScanPlatform
import Synchronization

/// What the loop's side needs of the fleet link: its state for STATUS and its offline flag.
/// `FleetLink` is the one the service runs; a test gives the loop a fake one.
public protocol FleetLinkView: AnyObject, Sendable {
  /// True while the link has been down longer than `fleet.offline_after`.
  var isOffline: Bool { get }
  /// The link's STATUS line: connected or not, what is queued and acknowledged.
  func writeStatus(into w: inout ByteWriter)
}

/// Requests from the fleet link's thread to the loop (a relay pulse, a reload), handed over
/// under a lock and applied between frames like the console's.
public final class FleetRequests: PollParticipant, @unchecked Sendable {
  /// What waits for the loop.
  public struct Pending: Sendable, Equatable {
    public var reload = false
    public var open = false
    public var openMilliseconds: Int? = nil
    public var snapshot = false
    /// A lockdown to latch (true) or lift (false), an occupancy reset, a credential to forgive,
    /// and the key that signed the command.
    public var lockdown: Bool? = nil
    public var occupancyReset = false
    public var forgive: UInt64? = nil
    public var forgiveLast = false
    public var by = ""
    var any: Bool { reload || open || snapshot || lockdown != nil || occupancyReset || forgive != nil || forgiveLast }
  }
  private let pending = Mutex<Pending>(Pending())
  /// Home Assistant's requests, kept apart from the signed commands' so that neither is ever
  /// carried out in the other's name (Home Assistant is an authority of its own: a lockdown it
  /// latched is lifted by it alone).
  private let pendingHomeAssistant = Mutex<Pending>(Pending())
  /// The link: its state for STATUS, and its offline flag when `followsOffline` (the
  /// deny-all-but-static policy); nil: no link.
  private let link: (any FleetLinkView)?
  private let followsOffline: Bool
  private var staticOnly = false
  /// Where a snapshot command's frame goes (nil: `fleet.snapshot` is off).
  public let snapshot: FleetSnapshot?
  /// Who carries out lockdown, occupancy and anti-passback commands on the loop (the emergency
  /// and turnstile controllers, asked in turn until one answers; none: the command is refused).
  public var owners: [any PollParticipant] = []
  /// How the last such command ended (the journal, tests), or nil.
  public private(set) var lastOutcome: ConsoleActionOutcome? = nil

  /// `followsOffline`: the link's `offline_policy` is deny-all-but-static.
  public init(link: (any FleetLinkView)? = nil, followsOffline: Bool = false, snapshot: FleetSnapshot? = nil) {
    self.link = link
    self.followsOffline = followsOffline && link != nil
    self.snapshot = snapshot
  }

  func ask(_ change: (inout Pending) -> Void) { pending.withLock { change(&$0) } }

  /// What a command asks of the loop, once it is verified (FleetControl: the signature, the
  /// reader id and the durable nonce; a test's fake link hands one over directly). `by` names
  /// who sent it in the journal and the audit log. STATUS and SNAPSHOT need nothing here.
  public func accept(_ command: FleetCommand, by: String) {
    ask {
      switch command.action {
      case .open:
        $0.open = true
        $0.openMilliseconds = command.pulseMilliseconds
      case .reload: $0.reload = true
      case .lockdownOn, .lockdownOff: $0.lockdown = command.action == .lockdownOn
      case .occupancyReset: $0.occupancyReset = true
      case .passbackForgive: $0.forgive = command.tag
      case .status, .snapshot: return
      }
      $0.by = by
    }
  }

  /// What Home Assistant asks, once `HomeAssistantControl` has checked it (listed, rate, code).
  public func accept(_ request: HomeAssistantRequest) {
    pendingHomeAssistant.withLock {
      switch request {
      case .open: $0.open = true
      case .lockdown(let on): $0.lockdown = on
      case .forgiveLast: $0.forgiveLast = true
      case .occupancyReset: $0.occupancyReset = true
      case .lock: return
      }
      $0.by = "home-assistant"
    }
  }

  public var pollCapacity: Int { 0 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    if pending.withLock({ $0.any }) || pendingHomeAssistant.withLock({ $0.any }) { return now }
    return followsOffline ? now.adding(milliseconds: 1_000) : nil  // the offline flag, once a second
  }

  /// The link's line on STATUS.
  public func contribute(to status: inout ReaderStatus, now: Instant, unixSeconds: Int64) {
    guard let link else { return }
    let line = withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      link.writeStatus(into: &w)
      return String(decoding: w.written, as: UTF8.self)
    }
    status.sections.append(StatusSection("fleet", line))
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    if followsOffline, let link, link.isOffline != staticOnly {
      staticOnly = link.isOffline
      requests.post(.accessStaticOnly(staticOnly))
    }
    // Home Assistant's first: two opens in one cycle are one pulse (the loop's requests keep one
    // of a kind, the last), and then it is the signed command's.
    apply(
      pendingHomeAssistant.withLock { p in
        defer { p = Pending() }
        return p
      }, authority: .homeAssistant, requests: requests)
    apply(
      pending.withLock { p in
        defer { p = Pending() }
        return p
      }, authority: .fleet, requests: requests)
  }

  /// Carries out what one source asked, in its own name.
  private func apply(_ p: Pending, authority: EmergencyAuthority, requests: LoopRequests) {
    guard p.any else { return }
    if p.reload { requests.post(.reloadAllowList) }
    if p.open { requests.post(.open(milliseconds: p.openMilliseconds, by: authority == .homeAssistant ? .homeAssistant : .fleet)) }
    if p.snapshot, let snapshot { requests.post(.snapshot(snapshot)) }
    if let on = p.lockdown { act(on ? .lockdownOn : .lockdownOff, authority: authority, by: p.by) }
    if p.occupancyReset { act(.resetOccupancy, authority: authority, by: p.by) }
    if let tag = p.forgive { act(.forgiveTag(tag), authority: authority, by: p.by) }
    if p.forgiveLast { act(.forgiveLast, authority: authority, by: p.by) }
  }

  /// On the loop's thread: the owner writes its state durably, then the change applies. A
  /// refusal is said in the journal (the command's reply was sent when it was accepted).
  private func act(_ action: ConsoleAction, authority: EmergencyAuthority, by: String) {
    let command = OperatorCommand.action(action, authority: authority, who: Array(by.utf8))
    let source = authority == .homeAssistant ? "home-assistant" : "fleet"
    for owner in owners {
      guard case .action(let outcome) = owner.perform(command) else { continue }
      lastOutcome = outcome
      switch outcome {
      case .heldBy(let holder): writeStandardError("scangate: \(source): lockdown-off refused: the lockdown was latched by \(holder.name)\n")
      case .notDurable: writeStandardError("scangate: \(source): nothing changed: the state could not be written durably\n")
      case .unknownCredential: writeStandardError("scangate: \(source): passback-forgive: no anti-passback record for that tag\n")
      default: break
      }
      return
    }
    writeStandardError("scangate: \(source): nothing on this reader carries out that command\n")
  }
}
