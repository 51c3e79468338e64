import ScanConsole
import ScanCore
import ScanLinux

/// What the allow-list's references resolve against, and what a load is followed by.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// Loads the allow-list's text, its `schedule=` names resolved. With a list live, a name that
  /// resolves to nothing refuses the file whole (the live list stays). With none live yet (the
  /// start), refusing it would deny everyone: it is loaded, the entries naming the missing
  /// schedule are denied (`denied-outside-schedule`) and the fault is said with the line and name.
  mutating func loadAllowList(_ bytes: [UInt8]) -> AllowListError? {
    let references = scheduleReferences
    let now = engine.wall.unixSeconds()
    guard engine.allowList.version == 0 else {
      return engine.allowList.load(bytes, digester: engine.digester, schedules: references, nowUnixSeconds: now)
    }
    if let dangling = engine.allowList.validate(bytes, digester: engine.digester, schedules: references),
      engine.allowList.validate(bytes, digester: engine.digester, schedules: .notLoaded) == nil
    {
      engine.record(.fault, code: FaultCode.allowListRejected.rawValue)
      note(
        "allow-list \(settings.allowListPath ?? ""): \(dangling); loaded at the start all the same (nothing else is live), those entries denied until the name resolves"
      )
    }
    return engine.allowList.load(bytes, digester: engine.digester, schedules: .notLoaded, nowUnixSeconds: now)
  }

  /// What the allow-list's `schedule=` names must resolve against: the live schedules, or none.
  var scheduleReferences: ScheduleReferences { engine.policy.schedules?.references ?? .noFile }

  /// After a load: the schedules it names are what a new schedule file must keep, and entries
  /// that need a PIN this reader cannot ask for are said in the journal (each is refused).
  mutating func allowListLoaded(_ path: String) {
    engine.policy.schedules?.required = engine.allowList.scheduleKeysInUse()
    let pins = engine.allowList.pinEntryCount
    if pins > 0 && !engine.policy.pinAvailable {
      note("allow-list \(path): \(pins) entries need a PIN after the pass and this reader cannot ask for one (no keypad here); they are denied-pin-unavailable")
    }
  }
}
