#!/usr/bin/env python3
"""Odd files at configured paths (issue 27, items 1, 6 and 8), on the real binary with a replay
source and simulated GPIO:

(a) a FIFO, a directory, a device (a symlink to /dev/null) and an empty file at each path the
    configuration names (allow-list, schedules, trust, revocation, site key, used passes, clock
    floor, secret, console TLS certificate, key and client CA, audit database, chain key, tag key,
    replay images, the state directory, the fleet's TLS files, password and state file, a panel's
    key and COMSET file): `check-config` returns within 5 s and names each refused path; `run`
    reaches READY (sd_notify, read on our own NOTIFY_SOCKET) or exits saying why, names the path
    in its journal or on STATUS, and stops on SIGTERM within 10 s.
(b) a FIFO at the allow-list path, then SIGHUP: STATUS answers, the old list keeps granting, the
    journal says why; the same for an empty allow-list; `# scangate: empty` empties it.
(c) a clock floor a year ahead: passes are denied-expired; a non-operator's CLOCK FLOOR RESET is
    refused; an operator's resets the floor (answered with both floors), the audit log holds the
    reset with who, passes are granted, and after a restart still are; a damaged floor file is on
    STATUS.

Usage: files.py SCANGATE WORKDIR"""
import os, pty, re, shutil, signal, socket, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Reader, check, finish, free_port, qr_frames, side_by_side, wait_for  # noqa: E402

B, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
FRAMES = qr_frames(W, "steady", "EMP-0001")
BUSY = "[presence]\nrepeat_ms = 400\n"
KINDS = ("fifo", "directory", "device", "empty")

# Keys and certificates the configurations below use (good ones; each trial spoils one path).
PKI = f"{W}/pki"
os.makedirs(PKI)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{PKI}/key.pem", "-out", f"{PKI}/cert.pem", "-days", "3", "-subj", "/CN=127.0.0.1"],
               check=True, capture_output=True)
os.chmod(f"{PKI}/key.pem", 0o600)
TRUST = subprocess.run([B, "credential", "keygen", "--issuer", f"{PKI}/issuer.key", "--kid", "hq"],
                       capture_output=True, text=True, check=True).stdout
subprocess.run([B, "credential", "keygen", "--site", f"{PKI}/site.key"], capture_output=True, check=True)
with open(f"{PKI}/password", "w") as f:
    f.write("mqtt-password\n")
os.chmod(f"{PKI}/password", 0o600)
# A panel's serial line: a pty nobody answers on (the reader starts and waits to be polled).
PTY_MASTER, PTY_SLAVE = pty.openpty()
PTY = os.ttyname(PTY_SLAVE)


def spoil(path, kind):
    """Puts `kind` at `path` in place of whatever is there."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "directory":
        os.mkdir(path, 0o700)
    elif kind == "device":
        os.symlink("/dev/null", path)
    else:
        open(path, "w").close()
        os.chmod(path, 0o600)


def started(reader, env_extra=None):
    """Starts `reader` with our own NOTIFY_SOCKET: ('ready', seconds) once READY=1 arrives,
    ('exited', code) when it exits first, ('hung', None) when neither happens within 15 s (a loaded machine: the decoder workers start first)."""
    sock_path = f"{reader.dir}.notify"
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(0.2)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, **(env_extra or {}))
    t = time.time()
    reader.start(env=env, wait=False)
    outcome = ("hung", None)
    while time.time() - t < 15:
        if reader.proc.poll() is not None:
            outcome = ("exited", reader.proc.returncode)
            break
        try:
            if b"READY=1" in s.recv(4096):
                outcome = ("ready", round(time.time() - t, 2))
                break
        except socket.timeout:
            pass
    s.close()
    m = re.search(r"^console listening on 127\.0\.0\.1:(\d+)$", reader.journal(), re.M)
    reader.port = int(m.group(1)) if m else None
    return outcome


def stop_within(reader, seconds=10):
    """SIGTERM; the exit code, or None when it had to be killed."""
    if reader.proc is None:
        return 0
    if reader.proc.poll() is not None:
        reader.stop()
        return 0
    reader.proc.send_signal(signal.SIGTERM)
    try:
        reader.proc.wait(seconds)
    except subprocess.TimeoutExpired:
        reader.proc.kill()
        reader.proc.wait()
        reader.out.close()
        reader.proc = None
        return None
    return reader.stop()


def check_config(reader):
    """(seconds, output) of `check-config`, or (None, '') when it did not return within 5 s."""
    t = time.time()
    try:
        p = subprocess.run([B, "check-config", "--config", reader.config], capture_output=True, text=True, timeout=5)
        return round(time.time() - t, 2), p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, ""


def console_lines(reader, lines):
    """Adds `lines` under [console] (after its listen line)."""
    text = open(reader.config).read().replace('listen = ["127.0.0.1:0"]', 'listen = ["127.0.0.1:0"]\n' + lines)
    with open(reader.config, "w") as f:
        f.write(text)


# Each configured path: (name, extra TOML, [console] lines, the path from the reader, what must be there).
def fleet(extra=""):
    return (f'[fleet]\nbrokers = ["mqtts://127.0.0.1:{free_port()}"]\nreader_id = "files"\n'
            f'tls_ca_file = "{PKI}/cert.pem"\n{extra}')


CREDENTIALS = f'[credentials]\ntrust_file = "TRUST"\nsite_key_file = "{PKI}/site.key"\n'
PANEL = f'[panel]\nmode = "panel"\nlink = "osdp"\nosdp_port = "{PTY}"\nenforce_secure = false\n'
PATHS = [
    ("allow-list", "", "", lambda r: r.allow),
    ("schedules", '[schedule]\npath = "SCHED"\n', "", lambda r: f"{r.dir}/schedules.txt"),
    ("trust", CREDENTIALS, "", lambda r: f"{r.dir}/trust.toml"),
    ("revocation", CREDENTIALS + 'revocation_file = "REVOKED"\n', "", lambda r: f"{r.dir}/revoked.cose"),
    ("site-key", f'[credentials]\ntrust_file = "{PKI}/trust.toml"\nsite_key_file = "SITEKEY"\n', "",
     lambda r: f"{r.dir}/site.key"),
    ("used-passes", f'[credentials]\ntrust_file = "{PKI}/trust.toml"\n', "", lambda r: f"{r.state}/used-passes"),
    ("clock-floor", "", "", lambda r: f"{r.state}/clock-floor"),
    ("console-secret", "", "", lambda r: r.secret),
    ("audit-db", "", "", lambda r: r.log_path),
    ("chain-key", "", "", lambda r: r.log_path + ".key"),
    ("tag-key", "", "", lambda r: r.log_path + ".tag-key"),
    ("replay-image", "", "", lambda r: f"{r.dir}/frames/odd.png"),
    ("state-dir", "[state]\ndirectory = \"STATEDIR\"\n", "", lambda r: f"{r.dir}/statedir"),
    ("console-tls-cert", "", f'tls_cert_file = "CERT"\ntls_key_file = "{PKI}/key.pem"\n', lambda r: f"{r.dir}/console-cert.pem"),
    ("console-tls-key", "", f'tls_cert_file = "{PKI}/cert.pem"\ntls_key_file = "KEY"\n', lambda r: f"{r.dir}/console-key.pem"),
    ("console-tls-ca", "",
     f'tls_cert_file = "{PKI}/cert.pem"\ntls_key_file = "{PKI}/key.pem"\ntls_client_ca_file = "CA"\n',
     lambda r: f"{r.dir}/console-ca.pem"),
    ("fleet-tls-ca", "FLEET_CA", "", lambda r: f"{r.dir}/fleet-ca.pem"),
    ("fleet-tls-cert", "FLEET_CERT", "", lambda r: f"{r.dir}/fleet-cert.pem"),
    ("fleet-password", "FLEET_PASSWORD", "", lambda r: f"{r.dir}/fleet-password"),
    ("fleet-state", "FLEET_STATE", "", lambda r: f"{r.dir}/fleet-state"),
    ("panel-key", PANEL + 'scbk_file = "SCBK"\n', "", lambda r: f"{r.dir}/scbk"),
    ("panel-com", PANEL + 'com_file = "COM"\n', "", lambda r: f"{r.dir}/com"),
]
with open(f"{PKI}/trust.toml", "w") as f:
    f.write(TRUST)


def trial(name, extra, console, target, kind):
    d = f"{W}/{name}-{kind}"
    frames = f"{d}/frames"
    shutil.copytree(FRAMES, frames)
    with open(f"{d}/trust.toml", "w") as f:
        f.write(TRUST)
    path = target(type("R", (), {"dir": d, "state": f"{d}/state", "allow": f"{d}/allow-list.txt",
                                 "secret": f"{d}/secret", "log_path": f"{d}/state/audit.db"}))
    extra = {"FLEET_CA": fleet().replace(f'"{PKI}/cert.pem"', f'"{path}"'),
             "FLEET_CERT": fleet(f'tls_cert_file = "{path}"\ntls_key_file = "{PKI}/key.pem"\n'),
             "FLEET_PASSWORD": fleet(f'username = "u"\npassword_file = "{path}"\n'),
             "FLEET_STATE": fleet(f'state_file = "{path}"\n')}.get(extra, extra)
    extra = extra.replace('"TRUST"', f'"{d}/trust.toml"')
    for placeholder in ("SCHED", "REVOKED", "SITEKEY", "STATEDIR", "SCBK", "COM"):
        extra = extra.replace(f'"{placeholder}"', f'"{path}"')
    r = Reader(B, W, f"{name}-{kind}", frames, extra=extra + BUSY)
    if console:
        # The TLS listener beside the plain loopback one (STATUS is read there).
        for placeholder in ("CERT", "KEY", "CA"):
            console = console.replace(f'"{placeholder}"', f'"{path}"')
        console_lines(r, console)
        text = open(r.config).read().replace('listen = ["127.0.0.1:0"]', 'listen = ["127.0.0.1:0", "tls:127.0.0.1:0"]')
        with open(r.config, "w") as f:
            f.write(text)
    if name == "state-dir":
        text = open(r.config).read().replace(f'path = "{r.log_path}"', f'path = "{d}/log/audit.db"')
        with open(r.config, "w") as f:
            f.write(text)
        os.makedirs(f"{d}/log", exist_ok=True)
    spoil(path, kind)
    label = f"{name} as {kind}"
    # What must be named: anything but a regular file where a file belongs, anything but a
    # directory where the state directory belongs (an empty file there too).
    named = kind != "empty" or name == "state-dir"

    seconds, out = check_config(r)
    check(f"(a) {label}: check-config returns within 5 s ({seconds} s)", seconds is not None)
    if named:
        check(f"(a) {label}: check-config names {os.path.basename(path)}", path in out,
              [line for line in out.splitlines() if "refused" in line or os.path.basename(path) in line])

    outcome, value = started(r)
    status = r.ask("STATUS") if outcome == "ready" else ""
    journal = r.journal()
    check(f"(a) {label}: run reaches READY or exits saying why ({outcome} {value})",
          outcome == "ready" or (outcome == "exited" and path in journal), journal[-800:])
    if named:
        # Fleet problems are on STATUS (the link's last problem); the rest in the journal too.
        check(f"(a) {label}: run names {os.path.basename(path)} (journal or STATUS)",
              path in journal or path in status, (journal + status)[-1200:])
    code = stop_within(r)
    check(f"(a) {label}: stops on SIGTERM within 10 s", code is not None, r.journal()[-600:])


# Each trial is a reader of its own (its own folder, ports and files): three at a time, except
# the panel's, which share the one pty (a serial port has one owner) and run one after another.
trials = [lambda a=(name, extra, console, target, kind): trial(*a)
          for name, extra, console, target in PATHS for kind in KINDS
          if not (name == "state-dir" and kind == "directory")  # a directory is what belongs there
          and not name.startswith("panel-")]
# The replay folder itself as a FIFO.
trials.append(lambda: trial("replay-folder", "", "", lambda r: f"{r.dir}/frames", "fifo"))
side_by_side(trials)
for name, extra, console, target in PATHS:
    if name.startswith("panel-"):
        for kind in KINDS:
            trial(name, extra, console, target, kind)

# ---------------------------------------------------------------- (b) reloads that are refused
b = Reader(B, W, "reload", FRAMES, extra=BUSY).start()


def grants():
    return len(re.findall(r"^#\d+ \S+ decision granted ", b.journal(), re.M))


check("(b) the reader grants before the reload", wait_for(lambda: grants() >= 1, 5), b.journal()[-600:])
for what, spoiler in (("a FIFO", lambda: os.mkfifo(b.allow)), ("an empty file", lambda: open(b.allow, "w").close()),
                      ("a whitespace-only file", lambda: open(b.allow, "w").write("\n  \n\t\n"))):
    os.unlink(b.allow)
    spoiler()
    before = grants()
    b.proc.send_signal(signal.SIGHUP)
    t = time.time()
    status = b.ask("STATUS")
    check(f"(b) {what} at the allow-list, SIGHUP: STATUS answers within 2 s", "OK status" in status and time.time() - t < 2,
          status[-400:])
    check(f"(b) {what}: the old list stays live (STATUS: version 1, 1 entries)",
          "allow-list version 1, 1 entries" in status, status[-600:])
    check(f"(b) {what}: the old list keeps granting", wait_for(lambda: grants() >= before + 2, 5), b.journal()[-600:])
    why = "is a FIFO" if what == "a FIFO" else "no entries"
    check(f"(b) {what}: the journal says why ({why}) and that the live list stays",
          wait_for(lambda: re.search(rf"^scangate: allow-list {re.escape(b.allow)}: .*{why}.*the live list stays", b.journal(),
                                     re.M), 3), b.journal()[-600:])
os.unlink(b.allow)
with open(b.allow, "w") as f:
    f.write("# nobody until the new term\n# scangate: empty\n")
b.proc.send_signal(signal.SIGHUP)
check("(b) `# scangate: empty` then SIGHUP: the list is empty (version 2, 0 entries)",
      wait_for(lambda: "allow-list version 2, 0 entries" in b.ask("STATUS"), 3), b.ask("STATUS")[-600:])
check("(b) and the code is denied", wait_for(lambda: re.search(r"decision denied-unknown", b.journal()), 5), b.journal()[-600:])
b.stop()

# ---------------------------------------------------------------- (c) a clock floor a year ahead
now = int(time.time())
c_dir = f"{W}/floor"
os.makedirs(f"{c_dir}/state", exist_ok=True)
until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 30 * 86400))
with open(f"{c_dir}/allow-list.txt", "w") as f:
    f.write(f"text:EMP-0001 label=alice until={until}\n")
floor_path = f"{c_dir}/state/clock-floor"
with open(floor_path, "w") as f:
    f.write(f"{now + 366 * 86400}\n")
c = Reader(B, W, "floor", FRAMES, extra=BUSY).start()
check("(c) a floor a year ahead: the pass is denied-expired",
      wait_for(lambda: re.search(r"decision denied-expired qr label=alice", c.journal()), 5), c.journal()[-600:])
clock = c.ask("CLOCK")
check("(c) CLOCK shows the clock BEHIND its floor", "BEHIND its floor" in clock and "OK clock" in clock, clock)
refused = c.ask("CLOCK FLOOR RESET")
check("(c) CLOCK FLOOR RESET without AUTH is refused", "ERR 401" in refused, refused)
check("(c) and the floor did not move", "BEHIND its floor" in c.ask("CLOCK"))
reset = c.ask("CLOCK FLOOR RESET", operator=True)
m = re.search(r"OK #\d+ clock floor reset from (\S+) to (\S+)", reset)
ahead = time.strftime("%Y-%m-%d", time.gmtime(now + 366 * 86400))
check("(c) an operator's reset is answered with the floor before and after",
      m is not None and m.group(1).startswith(ahead) and m.group(2).startswith(time.strftime("%Y-%m-%d", time.gmtime())), reset)
check("(c) after the reset the pass is granted",
      wait_for(lambda: re.search(r"decision granted qr label=alice", c.journal()), 5), c.journal()[-600:])
c.stop()
records = c.records()
resets = [r for r in records if r["kind"] == "command" and r["payload"].startswith("CLOCK FLOOR RESET")]
check("(c) the audit log holds the reset with the floors and who",
      len(resets) == 1 and re.fullmatch(rf"CLOCK FLOOR RESET {now + 366 * 86400}->\d+ by (uid \d+|local)",
                                        resets[0]["payload"]) is not None, resets)
rc, out = c.verify()
check("(c) log verify passes", rc == 0, out[-400:])
c.start()
check("(c) after a restart the reset floor holds: granted",
      wait_for(lambda: re.search(r"decision granted qr label=alice", c.journal()), 5), c.journal()[-600:])
c.stop()
with open(floor_path, "w") as f:
    f.write("scangate-clock-floor 1 nonsense\n")
c.start()
status = c.ask("STATUS")
check("(c) a damaged floor file is on STATUS", f"floor file {floor_path}: damaged" in status, status[-600:])
c.stop()

os.close(PTY_MASTER)
os.close(PTY_SLAVE)
finish()
