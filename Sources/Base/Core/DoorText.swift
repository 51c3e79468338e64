/// The door events' detail text (journal, console, audit log), written without allocating.
public enum DoorText {
  /// Writes ` grant`, ` 12s`, ` active` ... after the kind's name.
  public static func writeDetail(_ kind: EventKind, code: UInt16, into w: inout ByteWriter) {
    switch kind {
    case .doorUnlocked:
      w.write(" ")
      w.write(UnlockReason(rawValue: code)?.name ?? "unknown")
    case .doorClosed, .doorHeldOpen:
      w.write(" ")
      w.write(code)
      w.write("s")
    case .tamper:
      w.write(code == 1 ? " active" : " restored")
    case .unlockWindow:
      w.write(code == 1 ? " holding" : code == 2 ? " clock-unsynchronised" : " ended")
    default:
      break
    }
  }

  /// The same detail as a String, without its leading space (the audit record's `detail`).
  public static func detail(_ kind: EventKind, code: UInt16) -> String {
    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 1) { buffer in
      var w = ByteWriter(buffer)
      writeDetail(kind, code: code, into: &w)
      return String(decoding: w.written.dropFirst(w.written.isEmpty ? 0 : 1), as: UTF8.self)
    }
  }
}

/// Why the strike was released (carried by `door-unlocked` events).
public enum UnlockReason: UInt16, Sendable, CaseIterable {
  case grant = 1
  case exitButton = 2
  case console = 3
  case schedule = 4
  /// The fire panel's release.
  case fire = 5
  /// A signed fleet command's OPEN.
  case fleet = 6
  /// Home Assistant's door lock (`fleet.home_assistant_commands`), from an authenticated broker.
  case homeAssistant = 7

  public var name: String {
    switch self {
    case .grant: "grant"
    case .exitButton: "exit-button"
    case .console: "console"
    case .schedule: "schedule"
    case .fire: "fire"
    case .fleet: "fleet"
    case .homeAssistant: "home-assistant"
    }
  }

  /// The reason `name` names (a manual open's event carries it as its label), or nil. On the
  /// loop's thread: walks the raw values, never builds `allCases`' array.
  public init?(name: UnsafeRawBufferPointer) {
    var raw: UInt16 = 1
    while let reason = UnlockReason(rawValue: raw) {
      if reason.name.utf8.elementsEqual(name) {
        self = reason
        return
      }
      raw += 1
    }
    return nil
  }
}
