import ScanTools

/// Every subcommand in one table: its name, its usage and what runs it. `main.swift` dispatches
/// through it, `scangate --help` lists it, `scangate CMD --help` (or `-h`, or `scangate help CMD`)
/// prints one entry. Each line says exactly what the command's option parser accepts
/// (ScanServiceTests' UsageTests hold them to it). A command not in the table does not exist
/// (the service's own `decode-worker` excepted: the service starts it, nobody types it).
struct CommandUsage: Sendable {
  /// The subcommand, as typed.
  let name: String
  /// Invocations, without the leading "scangate ".
  let lines: [String]
  let summary: String
  /// Runs it with the arguments after its name; returns the exit status.
  let run: @Sendable ([String]) -> Int32
}

enum Usage {
  static let commands: [CommandUsage] = [
    CommandUsage(
      name: "run", lines: ["run [--config FILE] [--frames N] [--quiet-edges] [--sim-passages]"],
      summary: "run the reader service (camera, GPIO, console, log); --frames stops after N frames", run: RunCommand.run),
    CommandUsage(
      name: "demo",
      lines: [
        "demo [--config FILE] [--fps N] [--frames N] [--dir DIR] [--port N] [--keep] [--panel] [--turnstile]", "demo --snapshot PREFIX",
        "demo --bench [--fps N] [--trace]",
      ],
      summary:
        "replay generated codes through the real loop with simulated GPIO; --snapshot writes PREFIX.png and PREFIX.txt; "
        + "--bench: the demo's scenes through the engine in this process, first frame to edge per code", run: DemoCommand.run),
    CommandUsage(
      name: "decode",
      lines: [
        "decode [--formats LIST|all] [--json] [--variants upright|retry|alternate] [--fast] [--max-pixels N] [--results N] FILE...",
        "decode --expect DIR [--formats LIST|all] [--variant upright|inverted|mirrored] [--size WxH]",
        "decode --locations DIR [--formats LIST|all] [--variant upright|inverted|mirrored]",
        "decode --frames N [--fps N] [--budget-ms MS] [--quiet-after-ms MS] [--variants retry] [--strategy LIST|default:N] [--json] FILE...",
        "decode --scenes DIR [--fps N] [--hold-ms MS] [--gap-ms MS] [--size WxH] [--variant upright|inverted|mirrored] [--budget-ms MS] [--trace]",
      ],
      summary:
        "decode barcodes in image files (every code located; --results N shows N and says how many it dropped); "
        + "--expect: the accuracy harness over image + .txt/.bin; --locations: found by position; "
        + "--frames: each image held for N frames, the reader's way; --scenes: each image held up as a code at a door, first frame to edge",
      run: DecodeCommand.run),
    CommandUsage(
      name: "check-config", lines: ["check-config [--config FILE]"],
      summary: "validate config.toml and the allow-list, print the memory budget", run: CheckConfigCommand.run),
    CommandUsage(
      name: "probe", lines: ["probe [--config FILE] [--all-lines]"],
      summary: "cameras, GPIO chips and serial ports this machine offers", run: ProbeCommand.run),
    CommandUsage(
      name: "keypad", lines: ["keypad listen --device PATH [--seconds N]"],
      summary: "a PIN keypad: open and grab it as the reader would, print its name and each key (until N seconds, SIGINT or unplugged)", run: KeypadCommand.run),
    CommandUsage(
      name: "admin",
      lines: [
        "admin [--config FILE]                 serve the web admin page on [admin] listen (HTTPS)",
        "admin fingerprint [--config FILE]     the SHA-256 fingerprint of its certificate",
        "admin user add NAME --role viewer|operator|admin [--users FILE | --config FILE]", "admin user passwd|remove NAME", "admin user list",
      ],
      summary: "the web admin page (HTTPS, through the reader's console socket) and its accounts (password on standard input; Argon2id)", run: AdminCommand.run),
    CommandUsage(
      name: "backup",
      lines: [
        "backup create --out FILE [--config FILE] [--no-secrets]   one archive of config, lists, schedules, state, secrets",
        "backup check ARCHIVE [--config FILE]                     open it and check it whole; what a restore would write",
        "backup restore ARCHIVE [--config FILE]                   checked whole, then written (never over the reader's state)",
      ],
      summary: "back up and restore a reader, sealed under a passphrase read on standard input (docs/backup.md)", run: BackupCommand.run),
    CommandUsage(
      name: "console", lines: ["console [--tcp HOST:PORT | --unix PATH | --serial PATH [--baud N]] [--secret-file FILE] [--command LINE [--timeout SECONDS]]"],
      summary: "talk to a running reader's console (docs/console.md)", run: ConsoleCommand.run),
    CommandUsage(
      name: "credential",
      lines: [
        "credential keygen --issuer FILE [--kid KID] | --site FILE",
        "credential issue --key FILE --kid KID (--sub HOLDER [--label L] | --guest NAME) [--zones A,B] [--valid 1d | --exp TIME] [--nbf TIME]",
        "                 [--id HEX] [--single-use | --uses N] [--first-use-window DUR] [--lockdown] [--rotating --site-public HEX [--digits 6]]",
        "                 [--pin --site-public HEX (the PIN on standard input)] [--card F:N] [--png FILE] [--sheet FILE.pdf[,FILE.png]]",
        "                 [--wallet] [--json]",
        "credential show [--config FILE | --trust FILE [--site-key FILE] [--revocation FILE] [--zones A,B]] [--at TIME] [--json] TEXT|-",
        "credential revoke --key FILE --kid KID --out FILE [--version N] [--from FILE --trust FILE] ID...",
      ],
      summary: "signed passes: make keys, issue (text, PNG, a printable sheet as PDF or PNG, Google Wallet rotatingBarcode), verify as a reader would, revoke",
      run: CredentialCommand.run),
    CommandUsage(
      name: "log",
      lines: [
        "log [--config FILE | --db FILE] [--since TIME] [--limit N] [--json | --csv]",
        "log verify [--config FILE | --db FILE] [--key FILE] [--head SEQ:HEX]",
      ],
      summary:
        "read the audit log (--csv: RFC 4180 for auditors); verify: check its keyed chain and sequence, "
        + "and with a published chain head that nothing was cut or re-chained", run: LogCommand.run),
    CommandUsage(
      name: "allow-list",
      lines: [
        "allow-list import --csv FILE [--dry-run] [--keep-text] [--remove-missing] [--config FILE]",
        "allow-list export --csv [--config FILE] [--key FILE]",
        "allow-list enrol --tag TAG --label NAME [--schedule NAME] [--config FILE] [--tcp HOST:PORT] [--secret-file FILE]",
        "allow-list pin-key FILE",
        "allow-list pin [--config FILE] [--pin-key FILE] (--label NAME | --text PAYLOAD | --sha256 HEX)   (the PIN on standard input)",
      ],
      summary:
        "people from a CSV (payload or sha256, label, schedule, from, until, card, static, lockdown): added or changed by label, "
        + "hand-written lines kept; export: labels, keyed tags and flags, never payloads or digests", run: AllowListCommand.run),
    CommandUsage(
      name: "tag", lines: ["tag [--config FILE | --key FILE] (PAYLOAD | - | --sha256 HEX)"],
      summary: "the keyed tag a payload has on this reader (as LAST, WATCH, the log and fleet events show it); needs the tag key: run as root",
      run: TagCommand.run),
    CommandUsage(
      name: "snapshot", lines: ["snapshot (--out FILE.png | --text) [--tcp HOST:PORT | --serial PATH [--baud N]] [--secret-file FILE] [--timeout SECONDS]"],
      summary: "the aiming aid: what the camera sees, zone and codes marked", run: SnapshotCommand.run),
    CommandUsage(
      name: "soak",
      lines: [
        "soak [--frames N] [--every N] [--variants upright|retry|alternate] [--histogram FILE] [--console-clients N] [--passes allow-list|signed|rotating]"
      ],
      summary: "the fixed-memory soak benchmark (bench/)", run: SoakCommand.run),
    CommandUsage(
      name: "fleet",
      lines: [
        "fleet tail --broker URL [--ca FILE] [--cert FILE] [--key FILE] [--prefix TOPIC] [--seconds N] [--quiet]",
        "fleet publish-bundle --broker URL --issuer-key FILE --kid KID --reader ID --version N [--allow-list FILE] [--revocation FILE]",
        "                     [--trust FILE] [--schedules FILE] [--retain] [--ca FILE] [--cert FILE] [--key FILE] [--prefix TOPIC] [--wait N]",
        "fleet command --broker URL --issuer-key FILE --kid KID --reader ID --command open|reload|status|snapshot [--pulse-ms N]",
        "              [--expires-in N] [--ca FILE] [--cert FILE] [--key FILE] [--prefix TOPIC] [--wait N]",
        "              --command lockdown-on|lockdown-off|occupancy-reset | --command passback-forgive --tag HEX16",
        "fleet bench --broker URL --dir DIR [--links N] [--rate N] [--seconds N]",
      ], summary: "the fleet on its MQTT broker: tail events (de-duplicated, gaps reported), sign and send bundles and commands, bench",
      run: FleetToolCommand.run),
    CommandUsage(name: "version", lines: ["version"], summary: "print versions", run: VersionCommand.run),
  ]

  static func command(_ name: String) -> CommandUsage? { commands.first { $0.name == name } }

  /// `scangate --help`.
  static var overview: String {
    var text = "usage: scangate <command> [options]\n       scangate <command> --help\n\ncommands:\n"
    for c in commands {
      for line in c.lines { text += "  " + line + "\n" }
      text += "      " + c.summary + "\n"
    }
    return text + "\n"
  }

  /// `scangate CMD --help`.
  static func help(_ c: CommandUsage) -> String {
    var text = ""
    for (i, line) in c.lines.enumerated() { text += (i == 0 ? "usage: scangate " : "       scangate ") + line + "\n" }
    return text + "\n" + c.summary + "\n"
  }

  /// Whether the arguments ask for help (`--help` or `-h` before any `--`).
  static func wantsHelp(_ arguments: [String]) -> Bool {
    for a in arguments {
      if a == "--" { return false }
      if a == "--help" || a == "-h" { return true }
    }
    return false
  }
}
