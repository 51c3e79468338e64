import Glibc
import ScanCore
import ScanLinux
import ScanService

/// A small command-line option reader: `--flag`, `--key value`, `--key=value`, positionals.
public struct Options {
  public private(set) var flags: Set<String> = []
  public private(set) var values: [String: String] = [:]
  public private(set) var positionals: [String] = []

  /// `valued` lists the options that take a value; anything else starting with `--` is a flag.
  public init(_ arguments: [String], valued: Set<String>, known: Set<String>) throws(ParseError) {
    var i = 0
    while i < arguments.count {
      let a = arguments[i]
      if a == "--" {
        positionals.append(contentsOf: arguments[(i + 1)...])
        break
      }
      if a.hasPrefix("--") {
        var name = String(a.dropFirst(2))
        var value: String? = nil
        if let eq = name.firstIndex(of: "=") {
          value = String(name[name.index(after: eq)...])
          name = String(name[..<eq])
        }
        if valued.contains(name) {
          if value == nil {
            i += 1
            guard i < arguments.count else { throw ParseError(message: "--\(name) needs a value") }
            value = arguments[i]
          }
          values[name] = value
        } else if known.contains(name) {
          flags.insert(name)
        } else {
          throw ParseError(message: "unknown option --\(name)")
        }
      } else {
        positionals.append(a)
      }
      i += 1
    }
  }

  public func flag(_ name: String) -> Bool { flags.contains(name) }
  public func value(_ name: String) -> String? { values[name] }
  public func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(ParseError) -> Int {
    guard let text = values[name] else { return fallback }
    guard let n = Int(text), range.contains(n) else {
      throw ParseError(message: "--\(name) wants a whole number in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
    }
    return n
  }
}

/// JSON string literal for `text` (the one escaping rule, JSONObject's).
public func jsonString(_ text: String) -> String { JSONObject.string(text) }

/// A percentage with one decimal.
public func formatPercent(_ part: Int, _ whole: Int) -> String {
  guard whole > 0 else { return "-" }
  let tenths = Int((Double(part) * 1000 / Double(whole)).rounded())
  return "\(tenths / 10).\(tenths % 10)%"
}

/// The median of `values` (0 for none).
public func median(_ values: [Double]) -> Double {
  guard !values.isEmpty else { return 0 }
  let sorted = values.sorted()
  let mid = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Where an installed reader keeps its configuration (the package's, the unit's `--config`).
public let installedConfigPath = "/etc/scangate/config.toml"

/// The configuration file a command reads: `--config`'s; without it `./config.toml` when there
/// is one (a checkout, the demo's folder), else the installed reader's /etc/scangate/config.toml
/// (docs/admin.md's commands, typed on a reader); `nil` when there is neither (said by `loadConfig`).
public func configPath(_ options: Options) -> String? {
  if let named = options.value("config") { return named }
  if fileExists("config.toml") { return "config.toml" }
  if fileExists(installedConfigPath) { return installedConfigPath }
  return nil
}

/// The configuration `configPath` finds, or nil after printing why not. Without `--config` the
/// file read is said on standard error, so nobody wonders which reader's settings answered.
public func loadConfig(_ options: Options) -> ScanConfig? {
  guard let path = configPath(options) else {
    writeStandardError(
      "scangate: no configuration: neither ./config.toml nor \(installedConfigPath) exists; name one with --config FILE\n")
    return nil
  }
  if options.value("config") == nil { writeStandardError("scangate: reading \(path) (no --config given)\n") }
  do { return try ConfigLoader.load(path: path) } catch {
    for e in error.errors {
      let text = "\(e)"  // a file error names the path itself: never twice
      writeStandardError("scangate: " + (text.hasPrefix(path + ":") ? text : "\(path): \(text)") + "\n")
    }
    return nil
  }
}
