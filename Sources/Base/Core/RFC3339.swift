/// RFC 3339 date-times (`2026-11-30T08:00:00Z`, `2026-11-30T09:00:00+01:00`, optional fraction)
/// to Unix seconds. Written here because the service carries no Foundation; it is small, total
/// and tested against known instants.
public enum RFC3339 {
  public static func parse(_ text: Substring) throws(ParseError) -> Int64 {
    let b = Array(text.utf8)
    func fail(_ why: String) -> ParseError { ParseError(message: "bad RFC 3339 time '\(text)': \(why)") }
    func number(_ at: Int, _ digits: Int) -> Int? {
      guard at + digits <= b.count else { return nil }
      var n = 0
      for i in at..<(at + digits) {
        guard b[i] >= 48 && b[i] <= 57 else { return nil }
        n = n * 10 + Int(b[i] - 48)
      }
      return n
    }
    guard b.count >= 20, let year = number(0, 4), b[4] == 45, let month = number(5, 2), b[7] == 45,
      let day = number(8, 2), b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = number(11, 2),
      b[13] == 58, let minute = number(14, 2), b[16] == 58, let second = number(17, 2)
    else { throw fail("want YYYY-MM-DDTHH:MM:SS followed by Z or ±HH:MM") }
    guard (1...12).contains(month) else { throw fail("month out of range") }
    guard day >= 1 && day <= daysIn(month: month, year: year) else { throw fail("day out of range") }
    guard hour <= 23, minute <= 59, second <= 60 else { throw fail("time of day out of range") }
    var i = 19
    if i < b.count && b[i] == 46 {  // fraction: ignored (whole seconds)
      i += 1
      let start = i
      while i < b.count && b[i] >= 48 && b[i] <= 57 { i += 1 }
      guard i > start else { throw fail("empty fraction") }
    }
    guard i < b.count else { throw fail("missing time zone (Z or ±HH:MM)") }
    var offset = 0
    if b[i] == 90 || b[i] == 122 {
      i += 1
    } else if b[i] == 43 || b[i] == 45 {
      guard let oh = number(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = number(i + 4, 2),
        oh <= 23, om <= 59
      else { throw fail("bad offset") }
      offset = (oh * 60 + om) * 60 * (b[i] == 45 ? -1 : 1)
      i += 6
    } else {
      throw fail("missing time zone (Z or ±HH:MM)")
    }
    guard i == b.count else { throw fail("trailing characters") }
    let days = daysFromCivil(year: year, month: month, day: day)
    return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offset)
  }

  /// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
  public static func format(_ seconds: Int64) -> String {
    // Years 0000...9999 (a pass's own exp of ±2^63 is shown clamped, never a trap).
    let seconds = min(max(seconds, -62_167_219_200), 253_402_300_799)
    let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
    let rest = Int(seconds - Int64(days) * 86_400)
    let (y, m, d) = civilFromDays(days)
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let year = String(y)
    return String(repeating: "0", count: max(0, 4 - year.count)) + year
      + "-\(two(m))-\(two(d))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
  }

  /// Days since 1970-01-01 of a civil date (exposed for tests).
  public static func daysFromCivilForTesting(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
    Int64(daysFromCivil(year: year, month: month, day: day))
  }

  static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
  static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }
  /// Days since 1970-01-01 (H. Hinnant's days_from_civil).
  static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }
  static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
    let z = z0 + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp + (mp < 10 ? 3 : -9)
    return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
  }
}
