#!/usr/bin/env python3
"""Issue 26's restart and clock holes against the real binary: a rotating code under a kill -9
loop, a clock set back behind the floor (deploy/clockshift.c), a revoked pass after an older revocation
list is moved in and the reader restarted. TOTP values come from pyotp, not from ScanGate.
Run by deploy/credential-interop.sh with the peers' venv python. Prints PASS/FAIL lines.
Usage: restart-security.py SCANGATE WORKDIR"""
import base64, json, os, re, shutil, signal, subprocess, sys, time

import pyotp

B, W = sys.argv[1], sys.argv[2]
failures = 0
# The wall clock set back for one process: deploy/clockshift.c (libfaketime empties a Swift
# program's argv in some setups), built here with the system's C compiler.
SHIFT = f"{W}/clockshift.so"
subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", SHIFT, os.path.join(os.path.dirname(__file__), "clockshift.c"), "-ldl"],
               check=True)


def check(name, ok, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    failures += 0 if ok else 1


def run(*args):
    return subprocess.run([B, *args], capture_output=True, text=True)


def frame(name, text):
    """One frame folder holding a QR code of `text` (qrencode: an encoder that is not ours)."""
    d = f"{W}/frames-{name}"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run(["qrencode", "-s", "4", "-m", "4", "-o", f"{d}/code.png", text], check=True)
    return d


def config(frames, extra=""):
    path = f"{W}/config.toml"
    with open(path, "w") as f:
        f.write(f"""[camera]
source = "replay"
replay_path = "{frames}"
replay_fps = 20
replay_loop = true
[allow_list]
path = "{W}/allow-list.txt"
watch = false
[gpio]
backend = "sim"
relay_pulse_ms = 50
[log]
path = "{W}/audit.db"
commit_interval_ms = 50
[credentials]
trust_file = "{W}/trust.toml"
site_key_file = "{W}/site.key"
{extra}
""")
    return path


def serve(cfg, seconds, env=None, kill=signal.SIGKILL):
    """Runs the reader for `seconds` after it said it started (its decoder workers warm up
    first: seconds on a loaded machine), then signals it; returns its journal."""
    out = open(f"{W}/journal", "w")
    p = subprocess.Popen([B, "run", "--config", cfg], stdout=out, stderr=subprocess.STDOUT, env=env)
    end = time.time() + 60
    while time.time() < end and p.poll() is None and "state started" not in open(f"{W}/journal").read():
        time.sleep(0.05)
    time.sleep(seconds)
    p.send_signal(kill)
    p.wait()
    out.close()
    return open(f"{W}/journal").read()


def faked(seconds):
    """The environment of a reader whose wall clock reads `seconds` off; monotonic and boot time stay real."""
    env = dict(os.environ)
    env.update(LD_PRELOAD=SHIFT, SCANGATE_CLOCK_SHIFT=str(seconds))
    return env


os.makedirs(W, exist_ok=True)
p = run("credential", "keygen", "--issuer", f"{W}/issuer.key", "--kid", "hq")
open(f"{W}/trust.toml", "w").write(p.stdout)
site_public = run("credential", "keygen", "--site", f"{W}/site.key").stdout.split('"')[1]
open(f"{W}/allow-list.txt", "w").write("")
issued = json.loads(run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq", "--sub", "carol", "--label", "carol",
                        "--rotating", "--site-public", site_public, "--digits", "6", "--valid", "2h", "--json").stdout)
totp = pyotp.TOTP(base64.b32encode(bytes.fromhex(issued["seed_hex"])).decode(), digits=6, interval=30)

# 1. One rotating code, the reader killed with SIGKILL and restarted every 3 s: granted once.
#    Wait for a fresh step so the code stays valid (skew 1) for the whole loop.
while int(time.time()) % 30 > 5:
    time.sleep(0.5)
cfg = config(frame("rotating", f"SG1R6{totp.now()}:{issued['body']}"))
grants = []
for i in range(6):
    journal = serve(cfg, 3)
    grants.append(len(re.findall(r"decision granted qr label=carol", journal)))
    if i == 0:
        first = journal
check("kill -9 loop: the rotating code was granted on the first run", grants[0] == 1, f"{grants}\n{first[-800:]}")
check(f"kill -9 loop: one grant in 6 runs, refused as replayed after every restart ({grants})", sum(grants) == 1, str(grants))
check("kill -9 loop: the restarted readers said replayed",
      "decision denied-replayed" in journal, journal[-600:])

# 2. The clock set back 50 minutes behind the floor the reader keeps.
os.unlink(f"{W}/audit.db")
for f in os.listdir(W):
    if f.startswith("audit.db"):
        os.unlink(f"{W}/{f}")
now = int(time.time())
# A reader that ran until now (the floor it writes: the time it last saw, in this boot).
open(f"{W}/clock-floor", "w").write(f"{now}\n")
old_code = totp.at(now - 3000)
until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 600))
open(f"{W}/allow-list.txt", "w").write(f"text:EMP-004217 label=emp until={until}\n")
if True:
    journal = serve(config(frame("old", f"SG1R6{old_code}:{issued['body']}")), 4, env=faked(-3000), kill=signal.SIGTERM)
    check("clock 50 min back: the reader sees its clock behind the floor", "clock-behind-floor" in journal, journal[-600:])
    check("clock 50 min back: a rotating code 50 minutes old is refused",
          "decision granted" not in journal and re.search(r"decision denied-totp qr label=carol", journal) is not None, journal[-600:])
    journal = serve(config(frame("expired-entry", "EMP-004217")), 4, env=faked(-3000), kill=signal.SIGTERM)
    check("clock 50 min back: an allow-list entry past its until= is denied-expired",
          "decision granted" not in journal and "decision denied-expired" in journal, journal[-600:])
    faked_now = subprocess.run(["date", "+%s"], env=faked(-3000), capture_output=True, text=True).stdout.strip()
    check("the clock shim set the clock back for this run", faked_now.isdigit() and abs(int(faked_now) - (now - 3000)) < 120, faked_now)

# 3. Revocation v2 revokes a pass; v1 moved over it and the reader restarted: still revoked.
for f in os.listdir(W):
    if f.startswith("audit.db"):
        os.unlink(f"{W}/{f}")
pass_ = json.loads(run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq", "--sub", "dave", "--label", "dave",
                       "--valid", "2h", "--id", "d00d0001", "--json").stdout)
run("credential", "revoke", "--key", f"{W}/issuer.key", "--kid", "hq", "--version", "1", "--out", f"{W}/v1.cose", "aaaa0001")
run("credential", "revoke", "--key", f"{W}/issuer.key", "--kid", "hq", "--version", "2", "--out", f"{W}/v2.cose", "d00d0001")
shutil.copy(f"{W}/v2.cose", f"{W}/revoked.cose")
rcfg = config(frame("revoked", pass_["text"]), f'revocation_file = "{W}/revoked.cose"')
journal = serve(rcfg, 3)
check("revocation v2 live: the revoked pass is denied-revoked", "decision denied-revoked qr label=dave" in journal, journal[-600:])
shutil.copy(f"{W}/v1.cose", f"{W}/revoked.cose")
journal = serve(rcfg, 3)
check("v1 moved over v2 and the reader restarted: the revoked pass is not granted",
      "decision granted" not in journal and "denied" in journal, journal[-800:])
check("the older list is refused at startup (revocation-rejected)", "revocation-rejected" in journal, journal[-800:])

# 4. `log verify` without a published head: the last records deleted with sqlite3 is a cut, shown
#    by the log's own mark; a broker's acknowledged sequence past the end is one too.
db = f"{W}/audit.db"
v = run("log", "verify", "--db", db)
check("log verify: the intact log is OK", v.returncode == 0 and ": OK," in v.stdout, v.stdout + v.stderr)
last = int(subprocess.run(["sqlite3", db, "SELECT max(seq) FROM events"], capture_output=True, text=True).stdout)
subprocess.run(["sqlite3", db, f"DELETE FROM events WHERE seq > {last - 3}"], check=True)
v = run("log", "verify", "--db", db)
check("log verify: the last 3 records deleted is CUT (the log's own mark)", v.returncode == 1 and "CUT" in v.stdout, v.stdout)
subprocess.run(["sqlite3", db, "DELETE FROM meta WHERE key='last_seq'"], check=True)
open(db + ".fleet", "w").write(f"scangate-fleet acked {last}\n")
v = run("log", "verify", "--db", db)
check("log verify: a broker acknowledged records past the end: CUT", v.returncode == 1 and "acknowledged" in v.stdout, v.stdout)

# 5. Guest passes on the real reader, restarted (SIGKILL right after each grant) between uses:
#    --uses 3 opens three times, then denied-used; a day ticket's window starts at its first use.
for f in os.listdir(W):
    # Started empty on purpose: its line in state-files goes too (a file the reader kept and
    # finds missing is otherwise a fault, never a fresh start: docs/credentials.md).
    if f.startswith("audit.db") or f in ("used-passes", "state-files"):
        os.unlink(f"{W}/{f}")
guest = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq", "--guest", "Bob", "--uses", "3", "--valid", "1d").stdout.strip()
gcfg = config(frame("guest", guest))
verdicts = []
for i in range(4):
    journal = serve(gcfg, 3)
    verdicts.append(re.findall(r"decision (\S+) qr label=Bob", journal))
check("a guest pass with --uses 3, the reader killed after each scan: granted 3 times, then denied-used",
      verdicts == [["granted"], ["granted"], ["granted"], ["denied-used"]], str(verdicts))
shown = json.loads(run("credential", "show", "--config", gcfg, "--json", guest).stdout or "{}")
check("credential show --config on the reader's state: used 3 of 3, denied-used",
      shown.get("uses") == 3 and shown.get("used") == 3 and shown.get("verdict") == "denied-used", str(shown))
ticket = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq", "--guest", "Eve", "--valid", "2d",
             "--first-use-window", "1h").stdout.strip()
unused = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq", "--guest", "Ann", "--valid", "2d",
             "--first-use-window", "1h").stdout.strip()
journal = serve(config(frame("ticket", ticket)), 3)
check("a day ticket (--first-use-window 1h) is granted at its first use", "decision granted qr label=Eve" in journal, journal[-600:])
journal = serve(config(frame("ticket", ticket)), 3, env=faked(7200), kill=signal.SIGTERM)
check("two hours later (the clock moved on): denied-expired", "decision denied-expired qr label=Eve" in journal, journal[-600:])
journal = serve(config(frame("unused", unused)), 3, env=faked(7200), kill=signal.SIGTERM)
check("an unused ticket two hours after issue is still granted: its hour starts at its first use",
      "decision granted qr label=Ann" in journal, journal[-600:])

print(f"restart-security: {failures} failure(s)")
sys.exit(1 if failures else 0)
