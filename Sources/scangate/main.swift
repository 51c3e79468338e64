// scangate: the ScanGate reader service and its tools.
import Glibc
import ScanCore

let usage = """
  usage: scangate <command> [options]

  commands:
    run [--config FILE]           run the reader service (camera, GPIO, console, log)
    demo [--config FILE] [--frames N] [--realtime]
                                  replay generated codes through the real loop with simulated GPIO
    decode [--formats LIST|all] [--json] [--variants MODE] FILE...
                                  decode barcodes in image files
    decode --expect DIR [--formats LIST|all] [--variant V] [--size WxH]
                                  accuracy harness over a corpus laid out as image + .txt
    check-config [--config FILE]  validate config.toml and the allow-list, print the memory budget
    probe [--all-lines]           cameras, GPIO chips and serial ports this machine offers
    console [--tcp HOST:PORT | --serial PATH [--baud N]] [--command LINE]
                                  talk to a running reader's console (docs/console.md)
    log [--config FILE | --db FILE] [--since TIME] [--limit N] [--json]
                                  read the audit log
    log verify [--config FILE | --db FILE] [--key FILE] [--head SEQ:HEX]
                                  check the audit log's keyed chain and sequence; with a
                                  chain head published earlier, that nothing was cut or re-chained
    snapshot --out FILE.png | --text [--tcp HOST:PORT | --serial PATH]
                                  the aiming aid: what the camera sees, zone and codes marked
    soak [--frames N]             the fixed-memory soak benchmark
    version                       print versions

  """

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
  writeStandardError(usage)
  exit(2)
}
arguments.removeFirst()

let status: Int32
switch command {
case "decode": status = DecodeCommand.run(arguments)
case "version", "--version": status = VersionCommand.run(arguments)
case "help", "--help", "-h":
  print(usage, terminator: "")
  status = 0
default:
  status = ExtraCommands.run(command, arguments) ?? {
    writeStandardError("scangate: unknown command '\(command)'\n\(usage)")
    return 2
  }()
}
exit(status)
