/// A text file refused at one of its lines (0: the file as a whole), and why; whoever loaded it
/// keeps its last good state. The reason never quotes the file: a refused line may hold a
/// working pass, and the reason is shown on STATUS, RELOAD, the journal and by check-config.
public struct LineRejection: Error, Equatable, Sendable, CustomStringConvertible {
  public var line: Int
  public var reason: String
  public init(line: Int, reason: String) {
    self.line = line
    self.reason = reason
  }
  public var description: String { line > 0 ? "line \(line): \(reason)" : reason }
}
