extension ConsoleVerb {
  /// `HELP <verb>`: what the command does, its replies and who may run it, in lines that fit an
  /// 80-column terminal with the body's `| ` (docs/console.md has the whole story).
  public var explanation: StaticString {
    switch self {
    case .help: "Lists every command, or with a verb explains that one. Anyone.\nReplies: body lines, then OK help."
    case .version: "The software, decoder engine and GPIO library versions. Anyone.\nReply: OK scangate <version> decoder <engine> gpio <library>."
    case .status:
      "The reader at a glance: camera, GPIO lines, allow-list, decoder, console\nclients, the audit log and its chain head, the clock and uptime. Anyone.\nPayloads and allow-list lines are never shown."
    case .stats:
      "Counters (frames, codes, grants, denies, opens, errors) and latency p50/p99\n(decode, decision, edge). Anyone."
    case .last:
      "The last n decisions, oldest first, as event lines. Anyone; payloads only\nafter AUTH (then it is recorded in the audit log)."
    case .watch:
      "WATCH ON: every event as a '! ' line on this connection until WATCH OFF or\nQUIT. Payloads only after AUTH."
    case .check:
      "What the decision on a payload would be now, without acting on the door:\nOK granted label=... or OK denied-.... The payload is percent-escaped.\nOperator; at most 3 in a burst and 12 a minute (ERR 429); recorded."
    case .log:
      "The newest n records of the audit log (default 10, max 100) that pass every\nfilter, oldest first, as scangate log prints them. Filters: before=<seq>\nsince=<unix s> until=<unix s> verdict=<name> kind=<name> label=<label>.\nOperator; recorded."
    case .auth:
      "AUTH <secret>: become operator on this connection (the secret file's line).\nWrong secrets back off per peer (ERR 429, then ERR 423); never recorded."
    case .quit: "Closes this connection after OK bye."
    case .open:
      "A manual relay pulse of ms (default relay_pulse_ms, capped by\nrelay_pulse_ms_max) with the grant pattern. Operator; recorded with who.\nERR 409 while the relay rests after its maximum on-time."
    case .reload: "Reloads the allow-list now; a bad file is refused whole (the live list stays).\nOperator; recorded."
    case .selftest: "Plays the grant, deny and fault patterns and pulses the relay 200 ms.\nOperator; recorded."
    case .snapshot:
      "The next frame as a PNG in base64 lines, or SNAPSHOT TEXT as 78x40 ASCII for\na serial terminal: to aim the camera. Operator; recorded."
    case .door:
      "The door: state, strike, contact, exit button, tamper, alarm and counts.\nAnyone."
    case .clock:
      "The clock, its floor (the earliest time it may be) and whether it is\nsynchronised. CLOCK FLOOR RESET (operator) sets the floor to the clock now,\ndurably; recorded with both floors and who."
    case .lockdown:
      "Fire and lockdown state. LOCKDOWN ON latches a lockdown (every grant refused\nbut lockdown credentials), durable across restarts; LOCKDOWN OFF lifts one\nthis console latched, never a fire. Operator; recorded with who."
    case .turnstile:
      "The turnstile: state, queue, occupancy, anti-passback. FORGIVE LAST|<tag>\nlets the one refused for anti-passback through once; RESET sets occupancy\nto 0. Operator; recorded with who."
    case .enrol:
      "ENROL CANDIDATES lists the newest codes denied as unknown, with their tags.\nENROL <tag>|LAST label=<label> [schedule=<name>] puts that code on the\nallow-list as its sha256: entry and reloads it. Operator; recorded with who."
    case .remove: "REMOVE label=<label> takes that entry off the allow-list and reloads it.\nOperator; recorded with who."
    case .list: "The first n allow-list entries: label, tag and flags, never a payload.\nOperator; recorded."
    case .importList:
      "People from a CSV (the columns of scangate allow-list import): IMPORT BEGIN,\nIMPORT DATA <text, %XX-escaped> as often as needed (1 MiB at most), then\nIMPORT CHECK (what it would add, change, remove; nothing written) or IMPORT\nAPPLY (written and reloaded; recorded with who). REMOVE-MISSING removes the\nlabels the CSV does not name. CHECK LIST and APPLY LIST take the data as a\nwhole allow-list file that replaces the list (a backup's). Operator."
    case .passes:
      "The counted passes (single use, a number of uses, a first-use window) this\nreader remembers: id (as credential issue printed it), uses, first use and\nhow long it is kept; the latest first use first (default 50, max 200).\nOperator; recorded."
    case .pin:
      "PIN label=<label> <4 to 12 digits> gives that entry a PIN, asked on the\nkeypad after its pass: its pin= is made here under the keypad's PIN key, the\nfile written and reloaded. PIN label=<label> CLEAR takes it off. Refused where\nno keypad asks for a PIN. Operator; recorded with who, never the PIN."
    case .backup:
      "BACKUP <public key> <salt> <ops> <KiB>: 64 and 32 hex digits, then Argon2id's\npasses and memory. The configuration, lists and state, sealed to that X25519\nkey, sent as base64 lines, then OK backup <files> files <bytes> bytes. Never\na secret file (scangate backup create on the reader has those). For the web\npage, which makes the key from a passphrase the reader never sees\n(docs/backup.md). Operator; recorded with who."
    case .as:
      "AS <name> viewer|operator: on the Unix socket or a certified TLS client, once:\nrecords name this session web:<name> (and its uid or address); the role can\nonly be lowered. For the web admin page. Reply: OK as web:<name> <role>."
    }
  }
}

extension ConsoleVerb {
  /// One line of HELP.
  public var usage: StaticString {
    switch self {
    case .help: "HELP [verb]         this list, or one command explained"
    case .version: "VERSION             software, decoder and GPIO library versions"
    case .status: "STATUS              camera, GPIO, allow-list, decoder and console state"
    case .stats: "STATS               counters and latency percentiles"
    case .last: "LAST [n]            the last n decisions (default 5, max 50; payloads for\n                    operators)"
    case .watch: "WATCH ON|OFF        event lines (starting with '! '; payloads for operators)"
    case .check: "CHECK <payload>     operator: the decision on a payload (percent-escaped),\n                    rate-limited"
    case .log: "LOG [n] [filters]   operator: the newest n audit log records that match\n                    (default 10, max 100; HELP LOG lists the filters)"
    case .auth: "AUTH <secret>       become operator on this connection"
    case .quit: "QUIT                close this connection"
    case .open: "OPEN [ms]           operator: pulse the relay (capped)"
    case .reload: "RELOAD              operator: reload the allow-list now"
    case .selftest: "SELFTEST            operator: play every buzzer pattern, pulse the relay\n                    200 ms"
    case .snapshot: "SNAPSHOT [TEXT]     operator: the latest frame (PNG as base64, or TEXT: ASCII\n                    art)"
    case .door: "DOOR                the door: state, strike, inputs, alarm and counts"
    case .clock: "CLOCK [FLOOR RESET] the clock and its floor; operator: reset the floor to now"
    case .lockdown: "LOCKDOWN [ON|OFF]   fire and lockdown; operator: latch or lift a lockdown\n                    (only its own)"
    case .turnstile:
      "TURNSTILE [FORGIVE LAST|<tag>|RESET]\n                    the turnstile; operator: forgive anti-passback, reset\n                    occupancy"
    case .enrol:
      "ENROL CANDIDATES | LAST|<tag> label=<label> [schedule=<name>]\n                    operator: the newest unknown codes; enrol one"
    case .remove: "REMOVE label=<label>  operator: take that entry off the allow-list"
    case .list:
      "LIST [n] [from=<i>] [match=<text>]\n                    operator: the allow-list's labels, tags and flags (default\n                    50, max 200), from entry i, labels holding text"
    case .importList:
      "IMPORT BEGIN | DATA <text> | CHECK|APPLY [REMOVE-MISSING|LIST] | CANCEL\n                    operator: people from a CSV (or a whole list), previewed,\n                    then applied"
    case .passes: "PASSES [n]          operator: counted passes' uses here, newest first"
    case .pin:
      "PIN label=<label> <digits>|CLEAR\n                    operator: set or take off that entry's PIN (keypad)"
    case .backup:
      "BACKUP <public key> <salt> <ops> <KiB>\n                    operator: config, lists and state sealed to that key\n                    (base64; no secrets)"
    case .as:
      "AS <name> viewer|operator\n                    on the Unix socket: name this session web:<name> in\n                    records, at most its role"
    }
  }
}
