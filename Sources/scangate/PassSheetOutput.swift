import ScanCore
import ScanLinux

extension CredentialCommand {
  /// What every printed pass says about its use.
  static let sheetInstructions = [
    "Hold the code up to the reader's camera, about 20 cm away",
    "Keep this sheet private: anyone holding the code can use it",
  ]

  /// `issue --sheet FILE[,FILE…]`: the printable sheet (PassSheet: .pdf or .png by each name's
  /// extension) for the text the pass shows. A rotating pass is refused (a printed code cannot
  /// rotate), and so is any name without .pdf or .png; all pages are drawn before any is written.
  /// The files hold the pass: the message after each says so.
  static func writePassSheets(_ paths: String?, text: String, claims: PassClaims, rotating: Bool, guest: String?) throws {
    guard let paths else { return }
    guard !rotating else {
      throw ParseError(message: "--sheet: a printed rotating pass cannot rotate (print a static pass, or give the holder --wallet)")
    }
    let files = paths.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    for file in files where PassSheet.format(of: file) == nil {
      throw ParseError(message: "--sheet: '\(file)' must end in .pdf or .png")
    }
    let sheet = passSheet(text: text, claims: claims, guest: guest)
    let pages = try files.map { try sheet.render(path: $0) }
    for (file, page) in zip(files, pages) {
      try writeFileAtomically(file, page, mode: 0o644)
      writeStandardError("scangate credential issue: \(file): the printable sheet (it holds the pass: keep it private)\n")
    }
  }
}

extension CredentialCommand {
  /// What a visitor reads on the sheet: the times in the site's zone (--zone, or the issuer
  /// page's `schedule.time_zone`, else this host's), uses, window, zones.
  static func sheetLines(_ claims: PassClaims) -> [String] {
    let from = SystemLocalCalendar.text(unixSeconds: claims.notBefore ?? claims.issuedAt ?? 0)
    var lines = ["Valid from \(from) to \(SystemLocalCalendar.text(unixSeconds: claims.expires))"]
    if claims.singleUse { lines.append("Single use: the first scan uses it up") }
    if claims.uses > 0 { lines.append("Opens \(claims.uses) time\(claims.uses == 1 ? "" : "s") at each door") }
    if claims.firstUseWindow > 0 { lines.append("From its first use, valid for \(windowText(claims.firstUseWindow))") }
    if !claims.zones.isEmpty { lines.append("Zones: \(claims.zones.joined(separator: ", "))") }
    return lines
  }

  /// The printable sheet for the text a pass shows.
  static func passSheet(text: String, claims: PassClaims, guest: String?) -> PassSheet {
    PassSheet(
      text: text, title: guest == nil ? "Access pass" : "Guest pass",
      holder: guest ?? (claims.label.isEmpty ? claims.subject : claims.label), lines: sheetLines(claims), instructions: sheetInstructions)
  }
}

/// A first-use window in words: "12 hours", "90 minutes", "2 days".
func windowText(_ seconds: Int64) -> String {
  func unit(_ n: Int64, _ name: String) -> String { "\(n) \(name)\(n == 1 ? "" : "s")" }
  if seconds % 86_400 == 0 { return unit(seconds / 86_400, "day") }
  if seconds % 3600 == 0 { return unit(seconds / 3600, "hour") }
  if seconds % 60 == 0 { return unit(seconds / 60, "minute") }
  return unit(seconds, "second")
}
