// scangate: the ScanGate reader service and its tools.
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
  writeStandardError(Usage.overview)
  exit(2)
}
arguments.removeFirst()

// Help first, from the one usage table, so every subcommand answers it the same way (and
// before any of them opens a device or a file).
if command == "help" || command == "--help" || command == "-h" {
  if let name = arguments.first {
    guard let c = Usage.command(name) else {
      writeStandardError("scangate: unknown command '\(name)'\n\(Usage.overview)")
      exit(2)
    }
    print(Usage.help(c), terminator: "")
  } else {
    print(Usage.overview, terminator: "")
  }
  exit(0)
}
if let c = Usage.command(command), Usage.wantsHelp(arguments) {
  print(Usage.help(c), terminator: "")
  exit(0)
}

// The decoder worker process, started by the service (docs/decoder.md, "The decoder worker").
if command == "decode-worker" { exit(DecoderWorker.main(arguments)) }
guard let c = Usage.command(command == "--version" ? "version" : command) else {
  writeStandardError("scangate: unknown command '\(command)'\n\(Usage.overview)")
  exit(2)
}
exit(c.run(arguments))
