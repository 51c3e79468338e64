/// The machinery of config.toml's schema, shared by every domain: a value as the file holds it,
/// what a key accepts, and a key that sets one field of a settings section. Each domain lists
/// the keys of its own section (`[ConfigKey<DoorConfig>]`, ...); `ConfigSchema` (ScanConfig)
/// lifts them onto the whole configuration through key paths and checks every entry.

/// A value read from config.toml.
public enum ConfigValue: Equatable, Sendable {
  case string(String)
  case integer(Int64)
  case real(Double)
  case boolean(Bool)
  case list([ConfigValue])

  /// The value as an error message quotes it.
  package var display: String {
    switch self {
    case .string(let s): "\"\(s)\""
    case .integer(let i): "\(i)"
    case .real(let d): "\(d)"
    case .boolean(let b): "\(b)"
    case .list(let l): "[" + l.map(\.display).joined(separator: ", ") + "]"
    }
  }

  // A key's `apply` runs only on a value its kind accepted, so these read it as that kind.
  package var asInt: Int { if case .integer(let i) = self { return Int(i) }; return 0 }
  package var asBool: Bool { if case .boolean(let b) = self { return b }; return false }
  package var asString: String { if case .string(let s) = self { return s }; return "" }
  package var asInts: [Int] { if case .list(let l) = self { return l.map(\.asInt) }; return [] }
  package var asStrings: [String] { if case .list(let l) = self { return l.map(\.asString) }; return [] }
  /// The string, or nil when it is empty (an optional file path).
  package var asNonEmptyString: String? { asString.isEmpty ? nil : asString }
}

/// One key of the file with its value and line.
public struct ConfigEntry: Equatable, Sendable {
  public var key: String
  public var value: ConfigValue
  public var line: Int
  public init(key: String, value: ConfigValue, line: Int) {
    self.key = key
    self.value = value
    self.line = line
  }
}

/// A configuration error naming the key and line.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
  public var key: String
  public var line: Int
  public var reason: String
  public init(key: String, line: Int, reason: String) {
    self.key = key
    self.line = line
    self.reason = reason
  }
  public var description: String { line > 0 ? "line \(line): \(key): \(reason)" : "\(key): \(reason)" }
}

/// Every problem found in one configuration file.
public struct ConfigErrors: Error, Equatable, Sendable, CustomStringConvertible {
  public var errors: [ConfigError]
  public init(errors: [ConfigError]) { self.errors = errors }
  public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// The line of the file that set a key (0 when the file does not set it): the consistency
/// checks name it in their errors.
package typealias ConfigLineLookup = (String) -> Int

/// What a key accepts: its type, and its range or choices.
package enum ConfigKind: Sendable {
  case integer(ClosedRange<Int>)
  case boolean
  case string
  case choice([String])
  case integers(ClosedRange<Int>, count: ClosedRange<Int>)
  case choices([String], count: ClosedRange<Int>)
  case strings(count: ClosedRange<Int>)

  /// Why `value` does not fit this kind, or nil when it does.
  package func problem(with value: ConfigValue) -> String? {
    switch (self, value) {
    case (.integer(let range), .integer(let i)):
      return range.contains(Int(i)) ? nil : "wants an integer in \(range.lowerBound)...\(range.upperBound)"
    case (.integer(let range), _):
      return "wants an integer in \(range.lowerBound)...\(range.upperBound)"
    case (.boolean, .boolean): return nil
    case (.boolean, _): return "wants true or false"
    case (.string, .string(let s)): return s.utf8.count <= 4096 ? nil : "string longer than 4096 bytes"
    case (.string, _): return "wants a string"
    case (.choice(let names), .string(let s)):
      return names.contains(s) ? nil : "wants one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
    case (.choice(let names), _): return "wants one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
    case (.integers(let range, let count), .list(let items)):
      guard count.contains(items.count) else { return "wants \(count.lowerBound)...\(count.upperBound) integers" }
      for item in items {
        guard case .integer(let i) = item, range.contains(Int(i)) else {
          return "wants integers in \(range.lowerBound)...\(range.upperBound)"
        }
      }
      return nil
    case (.integers(let range, let count), _):
      return "wants a list of \(count.lowerBound)...\(count.upperBound) integers in \(range.lowerBound)...\(range.upperBound)"
    case (.choices(let names, let count), .list(let items)):
      guard count.contains(items.count) else { return "wants a list of \(count.lowerBound)...\(count.upperBound) names" }
      for item in items {
        guard case .string(let s) = item, names.contains(s) else {
          return "wants names from " + names.joined(separator: ", ")
        }
      }
      return nil
    case (.choices(let names, _), _): return "wants a list of names from " + names.joined(separator: ", ")
    case (.strings(let count), .list(let items)):
      guard count.contains(items.count) else { return "wants a list of \(count.lowerBound)...\(count.upperBound) strings" }
      for item in items { guard case .string = item else { return "wants a list of strings" } }
      return nil
    case (.strings(let count), _): return "wants a list of \(count.lowerBound)...\(count.upperBound) strings"
    }
  }
}

/// One key of config.toml (its full name, `door.enabled`), what it accepts, and how an accepted
/// value lands in the settings section `Section` that owns it.
package struct ConfigKey<Section>: Sendable {
  package let name: String
  package let kind: ConfigKind
  package let apply: @Sendable (inout Section, ConfigValue) -> Void

  package init(name: String, kind: ConfigKind, apply: @escaping @Sendable (inout Section, ConfigValue) -> Void) {
    self.name = name
    self.kind = kind
    self.apply = apply
  }

  /// The same key on a larger configuration that holds the section at `path`.
  package func lifted<Root>(_ path: any WritableKeyPath<Root, Section> & Sendable) -> ConfigKey<Root> {
    let apply = self.apply
    return ConfigKey<Root>(name: name, kind: kind) { root, value in apply(&root[keyPath: path], value) }
  }
}

extension Array {
  /// A section's keys on a larger configuration that holds the section at `path`.
  package func lifted<Section, Root>(_ path: any WritableKeyPath<Root, Section> & Sendable) -> [ConfigKey<Root>]
  where Element == ConfigKey<Section> {
    map { $0.lifted(path) }
  }
}
