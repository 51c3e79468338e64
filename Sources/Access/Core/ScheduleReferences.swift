import ScanBase

/// What an allow-list's `schedule=` names resolve against when the list is loaded, imported or
/// checked (docs/schedules.md): a name no schedule has refuses the whole file at its line, since
/// an entry denied at every scan is a person locked out with no word (docs/credentials.md,
/// "Every flag on every reader").
public enum ScheduleReferences: Sendable, Equatable {
  /// No schedule file is configured: every `schedule=` is refused.
  case noFile
  /// A schedule file is configured but has not loaded: names are taken, and their entries are
  /// denied until it loads (fail-secure; STATUS and the journal say why it did not load).
  case notLoaded
  /// The live schedules' names.
  case names([String])
  /// A tool reading the files (`check-config`, `allow-list import`) found the schedule file does
  /// not load: a `schedule=` cannot be checked, so it is refused.
  case unreadable(String)

  /// Why `name` does not resolve, or nil when it does.
  public func problem(_ name: some StringProtocol) -> String? {
    switch self {
    case .notLoaded: return nil
    case .noFile: return "schedule=\(name): no schedule file is configured (schedule.path)"
    case .unreadable(let why): return "schedule=\(name): the schedule file does not load (\(why)), so the name cannot be checked"
    case .names(let names):
      if names.contains(where: { $0 == name }) { return nil }
      let known = names.isEmpty ? "it defines none" : "it defines " + names.joined(separator: ", ")
      return "schedule=\(name): the schedule file has no schedule of that name (\(known))"
    }
  }
}
