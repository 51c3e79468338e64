import ScanCore
import ScanLinux
import ScanService
import ScanTools

extension AllowListCommand {
  /// `scangate allow-list enrol --tag TAG --label NAME [--schedule S]`: the console's
  /// `ENROL <tag>` from a shell on the reader, for a badge the reader denied as unknown a moment
  /// ago (the tag `WATCH`, `LAST`, `LOG` or `ENROL CANDIDATES` showed: the reader keeps the 8
  /// newest). It goes through the running reader's console, as an operator (the configured
  /// secret file), so the entry is checked, written durably, reloaded and recorded as the
  /// console's would be: this command never writes the file itself.
  static func enrol(_ arguments: [String]) throws(ParseError) -> Int32 {
    let options = try Options(arguments, valued: ["config", "tag", "label", "schedule", "tcp", "secret-file"], known: [])
    guard let tag = options.value("tag"), let name = options.value("label") else {
      throw ParseError(message: "enrol wants --tag TAG and --label NAME")
    }
    guard let label = AllowListEdit.labelFromText(name) else {
      throw ParseError(message: "--label: 1 to 48 bytes as shown (anything but letters, digits, '.', '_', '-', '@', '+' counts as %XX)")
    }
    guard let config = loadConfig(options) else { return 1 }
    let schedule = options.value("schedule").map { " schedule=" + $0 } ?? ""
    let command = "ENROL \(tag) label=\(label)\(schedule)"
    if options.value("tcp") == nil && !config.console.unixPath.isEmpty {
      // The reader's Unix socket: root (and console.unix_operators) are operators there, no secret.
      let fd = try ConsoleCommand.open(try Options(["--unix", config.console.unixPath], valued: ["unix"], known: []))
      defer { closeDescriptor(fd) }
      return ConsoleCommand.oneShot(fd, command, timeoutSeconds: 10)
    }
    // The reader's own console: a plain loopback listener from its configuration, or --tcp.
    let listener = config.console.listen.first { $0.hasPrefix("127.0.0.1:") || $0.hasPrefix("[::1]:") || $0.hasPrefix("localhost:") }
    guard let address = options.value("tcp") ?? listener else {
      throw ParseError(message: "the reader's console has no plain loopback listener (console.listen): give --tcp HOST:PORT")
    }
    let secret = options.value("secret-file") ?? config.console.secretFile
    guard !secret.isEmpty else { throw ParseError(message: "no console.secret_file: give --secret-file FILE") }
    let fd = try ConsoleCommand.open(try Options(["--tcp", address, "--secret-file", secret], valued: ["tcp", "secret-file"], known: []))
    defer { closeDescriptor(fd) }
    return ConsoleCommand.oneShot(fd, command, timeoutSeconds: 10)
  }
}
