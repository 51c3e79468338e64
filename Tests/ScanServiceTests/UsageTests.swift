import CLinux
import Glibc
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// `scangate --help` and every subcommand's `--help`, on the built binary: each answers with its
/// usage and exit 0, and every option the overview advertises is one the subcommand accepts.
@Suite(.serialized) struct UsageTests {
  /// The overview's usage lines ("  run [--config FILE] ..."), without the indent.
  static func advertisedLines() -> [String] {
    let (status, output) = runCommand([scangateBinary, "--help"], timeoutSeconds: 30)
    #expect(status == 0, "\(output)")
    return output.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line in
      guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
      return String(line.dropFirst(2))
    }
  }

  /// The subcommand words of a usage line: "log verify [--db FILE]" -> ["log", "verify"].
  static func words(_ line: String) -> [String] {
    Array(
      line.split(separator: " ").prefix { w in
        !w.hasPrefix("[") && !w.hasPrefix("(") && !w.hasPrefix("-") && w.first.map { !$0.isUppercase } ?? false
      }.map(String.init))
  }

  /// The options of a usage line, with whether each takes a value ("--config FILE" does,
  /// "[--json]" does not).
  static func options(_ line: String) -> [(name: String, valued: Bool)] {
    let tokens = line.split(separator: " ").map(String.init)
    var found: [(String, Bool)] = []
    for (i, token) in tokens.enumerated() {
      let bare = token.drop { $0 == "[" || $0 == "(" }
      guard bare.hasPrefix("--") else { continue }
      let name = String(bare.prefix { $0 != "]" && $0 != ")" })
      let closesHere = bare.contains("]") || bare.contains(")")
      let next = i + 1 < tokens.count ? tokens[i + 1] : nil
      let valued = !closesHere && next.map { $0 != "|" && !$0.hasPrefix("[") && !$0.hasPrefix("(") && !$0.hasPrefix("-") } == true
      found.append((name, valued))
    }
    return found
  }

  @Test("the usage-line reader reads options and values as a person would")
  func readerSelfCheck() {
    #expect(Self.words("log verify [--config FILE | --db FILE]") == ["log", "verify"])
    #expect(Self.words("decode [--json] FILE...") == ["decode"])
    let o = Self.options("snapshot (--out FILE.png | --text) [--tcp HOST:PORT | --serial PATH [--baud N]] [--json]")
    #expect(o.map(\.name) == ["--out", "--text", "--tcp", "--serial", "--baud", "--json"])
    #expect(o.map(\.valued) == [true, false, true, true, true, false])
  }

  @Test("scangate --help lists every subcommand; scangate with no command is an error")
  func overview() {
    let names = Set(Self.advertisedLines().compactMap { Self.words($0).first })
    #expect(
      names == [
        "run", "demo", "decode", "check-config", "probe", "console", "log", "allow-list", "tag", "snapshot", "soak",
        "credential", "fleet", "keypad", "admin", "backup", "version",
      ])
    for flag in ["-h", "help"] {
      let (status, output) = runCommand([scangateBinary, flag], timeoutSeconds: 30)
      #expect(status == 0 && output.hasPrefix("usage: scangate <command>"), "\(flag): \(output)")
    }
    let (status, output) = runCommand([scangateBinary], timeoutSeconds: 30)
    #expect(status == 2 && output.contains("usage: scangate"))
  }

  @Test("commands in one place: main dispatches only through the usage table, and every command's runner is in it")
  func commandsInOnePlace() throws {
    func source(_ path: String) throws -> String {
      String(decoding: try readWholeFile(packageRoot + "/" + path, maxBytes: 1 << 20), as: UTF8.self)
    }
    let main = try source("Sources/scangate/main.swift")
    #expect(!main.contains("case \""), "main.swift switches on command names: they belong in Usage.swift's table")
    let table = try source("Sources/scangate/Usage.swift")
    // Every `enum XCommand` with a `static func run(` in the executable's and the tools' folders is a table entry.
    var runners: [String] = []
    for folder in ["Sources/scangate", "Sources/Tools/Bench", "Sources/Tools/Demo", "Sources/Tools/CLI"] {
      for file in try listDirectory(packageRoot + "/" + folder) where file.hasSuffix(".swift") {
        let text = try source(folder + "/" + file)
        for line in text.split(separator: "\n") where line.contains("enum ") && line.contains("Command") {
          let words = line.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "{" })
          guard let i = words.firstIndex(of: "enum"), i + 1 < words.count, words[i + 1].hasSuffix("Command") else { continue }
          if text.contains("static func run(_ arguments: [String]) -> Int32") { runners.append(String(words[i + 1])) }
        }
      }
    }
    #expect(runners.count >= 17, "\(runners)")
    for name in runners { #expect(table.contains("run: \(name).run)"), "\(name) is not dispatched from the table") }
    // Dispatched: a bad option reaches the command's own parser, never "unknown command".
    for name in Set(Self.advertisedLines().compactMap { Self.words($0).first }) where name != "version" {
      let (_, output) = runCommand([scangateBinary, name, "--no-such-option"], timeoutSeconds: 30)
      #expect(!output.contains("unknown command"), "\(name): \(output)")
    }
  }

  @Test("every subcommand answers --help and -h with its usage and exit 0")
  func subcommandHelp() {
    let names = Self.advertisedLines().compactMap { Self.words($0).first }
    #expect(!names.isEmpty)
    for name in Set(names).sorted() {
      for flag in ["--help", "-h"] {
        let (status, output) = runCommand([scangateBinary, name, flag], timeoutSeconds: 30)
        #expect(status == 0, "\(name) \(flag): \(output)")
        #expect(output.hasPrefix("usage: scangate \(name)"), "\(name) \(flag): \(output)")
      }
      // Help wins wherever it is among the arguments, even after an option the command rejects.
      let (status, output) = runCommand([scangateBinary, name, "--no-such-option", "--help"], timeoutSeconds: 30)
      #expect(status == 0 && output.hasPrefix("usage: scangate \(name)"), "\(name): \(output)")
      let (helpStatus, helpOutput) = runCommand([scangateBinary, "help", name], timeoutSeconds: 30)
      #expect(helpStatus == 0 && helpOutput == output, "help \(name): \(helpOutput)")
    }
  }

  /// Each advertised option, followed by one no command knows: the parser reads arguments in
  /// order, so it complains about the unknown one only if it accepted the advertised one first
  /// (and nothing runs either way).
  @Test("every option scangate --help advertises is accepted by its subcommand")
  func advertisedOptionsAreAccepted() {
    let lines = Self.advertisedLines()
    var checked = 0
    for line in lines {
      let words = Self.words(line)
      for (name, valued) in Self.options(line) {
        let arguments = [scangateBinary] + words + [name] + (valued ? ["1"] : []) + ["--no-such-option"]
        let (status, output) = runCommand(arguments, timeoutSeconds: 30)
        #expect(status == 2, "\(arguments.dropFirst().joined(separator: " ")): \(output)")
        #expect(output.contains("unknown option --no-such-option"), "\(arguments.dropFirst().joined(separator: " ")): \(output)")
        #expect(!output.contains("unknown option \(name)\n"), "\(line): \(name) is advertised but rejected: \(output)")
        checked += 1
      }
    }
    #expect(checked >= 30)
    // The check itself: an option no command takes is caught.
    let (_, output) = runCommand([scangateBinary, "demo", "--realtime", "--no-such-option"], timeoutSeconds: 30)
    #expect(output.contains("unknown option --realtime"))
  }

  @Test("the advertised demo invocation runs, with a frame limit")
  func demoRuns() throws {
    let demo = try #require(Self.advertisedLines().first { $0.hasPrefix("demo [") })
    let names = Set(Self.options(demo).map(\.name))
    #expect(names.isSuperset(of: ["--fps", "--frames"]))
    #expect(!names.contains("--realtime"))
    let (status, output) = runCommand([scangateBinary, "demo", "--port", "0", "--fps", "20", "--frames", "5"], timeoutSeconds: 120)
    #expect(status == 0, "\(output)")
    #expect(output.contains("ScanGate demo:"))
    #expect(output.contains("summary: 5 frames"), "\(output)")
  }

  @Test("without --config a command reads ./config.toml, else /etc/scangate/config.toml, and says which; a missing file is named once")
  func findsItsConfig() {
    let dir = temporaryDirectory("find-config")
    defer { removeTree(dir) }
    _ = mkdir(dir + "/here", 0o755)
    _ = mkdir(dir + "/empty", 0o755)
    writeFile(dir + "/here/config.toml", "[camera]\nsource = \"replay\"\nreplay_path = \"\(dir)\"\n[log]\npath = \"\(dir)/audit.db\"\n")
    var (status, out) = runCommand(["/bin/sh", "-c", "cd '\(dir)/here' && exec '\(scangateBinary)' check-config"])
    #expect(out.contains("scangate: reading config.toml (no --config given)") && out.contains("config.toml: OK"), "\(out)")
    (status, out) = runCommand(["/bin/sh", "-c", "cd '\(dir)/empty' && exec '\(scangateBinary)' check-config"])
    if fileExists("/etc/scangate/config.toml") {
      #expect(out.contains("scangate: reading /etc/scangate/config.toml (no --config given)"), "\(out)")
    } else {
      #expect(status == 1 && out.contains("neither ./config.toml nor /etc/scangate/config.toml exists; name one with --config FILE"), "\(out)")
    }
    (status, out) = runCommand([scangateBinary, "check-config", "--config", dir + "/nope.toml"])
    #expect(status == 1 && out.contains("scangate: \(dir)/nope.toml: No such file or directory"), "\(out)")
    #expect(!out.contains("nope.toml: \(dir)/nope.toml"), "the name once: \(out)")
    #expect(!out.contains("no --config given"), "\(out)")
  }

  @Test("demo --port: another port is named in the instructions; a port something answers on is said, and the demo runs without its console")
  func demoPort() {
    // A listener of this test's own (an ephemeral port: no test binds a fixed one).
    guard let (fd, busy) = loopbackListener() else {
      Issue.record("no loopback listener")
      return
    }
    defer { close(fd) }
    var (status, output) = runCommand([scangateBinary, "demo", "--port", String(busy), "--fps", "20", "--frames", "5"], timeoutSeconds: 120)
    #expect(status == 0 && output.contains("console: 127.0.0.1:\(busy) is in use (another reader or demo)"), "\(output)")
    #expect(!output.contains("scangate console") && !output.contains("console listening"), "no instructions for someone else's console: \(output)")
    (status, output) = runCommand([scangateBinary, "demo", "--port", "0", "--fps", "20", "--frames", "5"], timeoutSeconds: 120)
    #expect(status == 0 && output.contains("scangate console --tcp 127.0.0.1:PORT --command STATUS"), "\(output)")
    #expect(output.contains("console listening on 127.0.0.1:") && !output.contains("127.0.0.1:4570"), "\(output)")
  }

  @Test("demo --panel tells the panel's story: the panel grants and drives the door, no forced-door alarm after each grant")
  func demoPanel() {
    let (status, output) = runCommand([scangateBinary, "demo", "--panel", "--port", "0", "--fps", "60", "--frames", "330"], timeoutSeconds: 120)
    #expect(status == 0 && output.contains("decision granted qr label=alice"), "\(output)")
    #expect(output.contains("the panel grants: LED green"), "\(output)")
    #expect(!output.contains("door-forced") && !output.contains("door-held-open") && !output.contains("edge alarm"), "\(output)")
  }
}
