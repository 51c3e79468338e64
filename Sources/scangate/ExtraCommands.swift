/// Commands beyond decode and version.
enum ExtraCommands {
  static func run(_ command: String, _ arguments: [String]) -> Int32? { nil }
}
