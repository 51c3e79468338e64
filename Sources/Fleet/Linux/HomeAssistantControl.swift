import ScanCore
import ScanPlatform
import Synchronization

/// Home Assistant's command entities (`fleet.home_assistant_commands`): the door's lock, the
/// lockdown switch, the anti-passback and occupancy buttons. On the fleet link's thread.
///
/// A message is acted on only when its command is listed, it arrived from an authenticated
/// broker (`FleetSettings.isAuthenticated`: the topics are not even subscribed otherwise), it
/// was not retained, it is one of the exact forms its entity sends, it comes at least a second
/// after the last one, and, for the lock with `home_assistant_code_file`, it carries the code
/// (`HomeAssistantGate`'s limits). Then the loop is asked, as for a signed fleet command
/// (`FleetRequests`): the open is recorded `door-unlocked home-assistant`, a lockdown
/// `lockdown on home-assistant by=home-assistant` (lifted by Home Assistant alone). Every
/// refusal is one journal line and counted on STATUS.
public final class HomeAssistantControl: @unchecked Sendable {
  public let commands: [HomeAssistantCommand]
  let requests: FleetRequests
  let code: HomeAssistantCode?
  private var gate = HomeAssistantGate()
  private let clock = SystemMonotonicClock()
  let acceptedCount = Atomic<Int64>(0)
  let refusedCount = Atomic<Int64>(0)
  /// Subscribed on the connection up now (an authenticated broker).
  let listening = Atomic<Bool>(false)

  /// Why the configuration cannot be served (the reader refuses to start).
  public struct SetupError: Error, CustomStringConvertible {
    public let description: String
  }

  /// Reads the code file (a secret file: owner root or the service, mode 0600) when one is set.
  public init(settings: FleetSettings, requests: FleetRequests) throws(SetupError) {
    commands = settings.homeAssistantCommands
    self.requests = requests
    if settings.homeAssistantCodeFile.isEmpty {
      code = nil
    } else {
      let bytes: [UInt8]
      do { bytes = try SecretFile.read(settings.homeAssistantCodeFile, maxBytes: 64) } catch {
        throw SetupError(description: "fleet.home_assistant_code_file: \(error)")
      }
      guard let c = HomeAssistantCode(fileBytes: bytes) else {
        throw SetupError(description: "fleet.home_assistant_code_file \(settings.homeAssistantCodeFile): wants 4 to 12 digits")
      }
      code = c
    }
  }

  /// Subscribes to the listed commands' topics when `broker` is authenticated.
  func connected(_ client: MQTTClient, link: FleetLink, broker: BrokerAddress?) {
    guard let broker, link.settings.isAuthenticated(broker) else {
      listening.store(false, ordering: .relaxed)
      link.setProblem("Home Assistant commands ignored: \(HomeAssistantRefusal.unauthenticatedBroker.reason)")
      return
    }
    for command in commands { _ = try? client.subscribe(command.topic(link.topics), qos: 1) }
    listening.store(true, ordering: .relaxed)
  }

  /// Handles `message` when it is on a command topic (true), else leaves it to others (false).
  func received(_ message: MQTTMessage, link: FleetLink) -> Bool {
    let prefix = link.topics.base + "/ha/"
    guard message.topic.hasPrefix(prefix) else { return false }
    let name = String(message.topic.dropFirst(prefix.utf8.count))
    let command = HomeAssistantCommand(rawValue: name)
    switch check(command, message) {
    case .success(let request):
      acceptedCount.wrappingAdd(1, ordering: .relaxed)
      if request == .lock {
        writeStandardError("scangate: home-assistant: LOCK: nothing to do, the strike locks itself after each open\n")
      } else {
        requests.accept(request)
      }
    case .failure(let refusal):
      refusedCount.wrappingAdd(1, ordering: .relaxed)
      writeStandardError("scangate: home-assistant: \(name.count <= 32 ? name : "?") refused: \(refusal.reason)\n")
    }
    return true
  }

  private func check(_ command: HomeAssistantCommand?, _ message: MQTTMessage) -> Result<HomeAssistantRequest, HomeAssistantRefusal> {
    guard listening.load(ordering: .relaxed) else { return .failure(.unauthenticatedBroker) }
    guard let command, commands.contains(command) else { return .failure(.notListed) }
    guard !message.retained else { return .failure(.retained) }
    let now = clock.now()
    if let refusal = gate.admit(now: now) { return .failure(refusal) }
    let parsed: (HomeAssistantRequest, code: [UInt8])
    switch HomeAssistantRequest.parse(command, message.payload) {
    case .success(let p): parsed = p
    case .failure(let f): return .failure(f)
    }
    if parsed.0 == .open, let refusal = gate.check(parsed.code, against: code, now: now) { return .failure(refusal) }
    return .success(parsed.0)
  }

  /// STATUS's part: `home-assistant commands open, lockdown: 3 accepted, 1 refused`.
  func writeStatus(into w: inout ByteWriter) {
    w.write("; home-assistant commands ")
    for i in 0..<commands.count {
      if i > 0 { w.write(", ") }
      w.write(commands[i].rawValue)
    }
    w.write(listening.load(ordering: .relaxed) ? ": " : " (not subscribed): ")
    w.write(acceptedCount.load(ordering: .relaxed))
    w.write(" accepted, ")
    w.write(refusedCount.load(ordering: .relaxed))
    w.write(" refused")
  }
}
