import ScanCore

/// A console error: code and message, as sent in `ERR <code> <message>`.
public struct ConsoleError: Error, Equatable, Sendable {
  public var code: Int
  public var message: StaticString
  public init(_ code: Int, _ message: StaticString) {
    self.code = code
    self.message = message
  }
  public static func == (a: ConsoleError, b: ConsoleError) -> Bool {
    a.code == b.code && a.message.description == b.message.description
  }
  public static let malformed = ConsoleError(400, "control character or non-ASCII byte in line")
  public static let unknownVerb = ConsoleError(400, "unknown command (HELP lists them)")
  public static let badArgument = ConsoleError(400, "bad argument (HELP shows the form)")
  public static let tooManyArguments = ConsoleError(400, "too many arguments")
  public static let badEscape = ConsoleError(400, "bad payload: write bytes as %XX")
  public static let needsAuth = ConsoleError(401, "operator command: AUTH first")
  public static let lineTooLong = ConsoleError(413, "line too long (max 512 bytes)")
  public static let throttled = ConsoleError(429, "too many lines; slow down (lines are dropped)")
  public static let badLabel = ConsoleError(
    400, "label=: 1 to 48 bytes of letters, digits, '.', '_', '-', '@', '+' or %XX (ENROL LAST label=<label> [schedule=<name>])")
  public static let badSchedule = ConsoleError(400, "schedule=: names are 1 to 32 of a-z, 0-9, '-', '_'")
  public static let noZones = ConsoleError(
    400, "zones=: allow-list entries have no zones (zones are for signed passes); use schedule=")
}

/// What LOCKDOWN and TURNSTILE are asked to do.
public enum ConsoleAction: Equatable, Sendable {
  case show
  case lockdownOn, lockdownOff
  /// Forgive the credential last refused for anti-passback, or the one whose tag (its first 8
  /// bytes, big-endian, as events show them) is given.
  case forgiveLast
  case forgiveTag(UInt64)
  case resetOccupancy
}
