#!/usr/bin/env python3
"""Every state file deleted, while the reader is stopped and while it runs (issue 41, items 1-2;
docs/credentials.md "What survives a restart"), on the real binary with a replay source:

A door reader with signed passes (a guest pass good for one use) and a turnstile with hard
anti-passback, each run once so that it keeps its state (the guest's use, alice's passage). Then:
(a) stopped: each file the reader's `state-files` list names is deleted in turn (the folder put
    back whole after each): the next start names the missing file in its journal, and nothing
    that file protected is granted again (the guest pass, alice through the turnstile).
(b) running: the whole state folder is deleted and nothing is written after it: within a few
    seconds every state file is back at its path, and after a kill -9 and a start the guest pass
    is still used up and alice still inside.
The files expected on the list are named here (not taken from the reader): the used passes, the
tag key, the lockdown latch; the turnstile's anti-passback records and occupancy.

Usage: state.py SCANGATE WORKDIR"""
import os, re, shutil, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Gate, Reader, check, finish, qr_frames, wait_for  # noqa: E402

B, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)


def run(*args):
    return subprocess.run([B, *args], capture_output=True, text=True)


def count(r, pattern):
    return len(re.findall(pattern, r.journal(), re.M))


# The door: alice on the allow-list, a guest pass good once; both codes in the replay.
keys = f"{W}/keys"
os.makedirs(keys)
trust = run("credential", "keygen", "--issuer", f"{keys}/issuer.key", "--kid", "hq").stdout
open(f"{keys}/trust.toml", "w").write(trust)
run("credential", "keygen", "--site", f"{keys}/site.key")
guest = run("credential", "issue", "--key", f"{keys}/issuer.key", "--kid", "hq", "--guest", "Bob", "--uses", "1",
            "--valid", "1d").stdout.strip()
frames = qr_frames(W, "door", "EMP-0001")
subprocess.run(["qrencode", "-s", "4", "-m", "4", "-o", f"{frames}/guest.png", guest], check=True)
door = Reader(B, W, "door", frames, extra=f"""[presence]
repeat_ms = 400
[credentials]
trust_file = "{keys}/trust.toml"
site_key_file = "{keys}/site.key"
""")
# The turnstile: alice, hard anti-passback.
gate = Gate(B, W, "gate", qr_frames(W, "gate", "EMP-0001"), extra="""[presence]
repeat_ms = 400
[turnstile]
enabled = true
direction = "entry"
passback = "hard"
passback_minutes = 60
passage_timeout_ms = 1000
grants_queued_max = 1
""")
for r in (door, gate):
    with open(r.config, "a") as f:
        f.write(f'[state]\ndirectory = "{r.state}"\n')

GUEST_GRANTED = r"decision granted qr label=Bob"
GUEST_USED = r"decision denied-used qr label=Bob"
ALICE_GRANTED = r"^#\d+ \S+ decision granted .*label=alice\b"
ALICE_REFUSED = r"^#\d+ \S+ decision denied-passback .*label=alice\b"
EXPECTED = {door: ("used-passes", "audit.db.tag-key", "lockdown"), gate: ("passback", "occupancy")}
PROTECTED = {door: (GUEST_GRANTED, GUEST_USED, "the guest pass"), gate: (ALICE_GRANTED, ALICE_REFUSED, "alice")}

# Each reader once: the state it must keep.
for r in (door, gate):
    granted, refused, who = PROTECTED[r]
    r.start()
    ok = wait_for(lambda: count(r, granted) == 1 and count(r, refused) >= 1, 40)
    check(f"{r.dir.split('/')[-1]}: {who} granted once, then refused (the state to keep)", ok, r.journal()[-1500:])
    r.stop()
    listed = open(f"{r.state}/state-files").read().split() if os.path.exists(f"{r.state}/state-files") else []
    names = [n for n in EXPECTED[r] if os.path.basename(n) in listed]
    check(f"{r.dir.split('/')[-1]}: its state-files list names {', '.join(EXPECTED[r])}", len(names) == len(EXPECTED[r]),
          f"listed: {listed}")

# (a) Each listed file deleted while stopped.
for r in (door, gate):
    granted, refused, who = PROTECTED[r]
    backup = r.state + ".backup"
    shutil.copytree(r.state, backup)
    for name in open(f"{r.state}/state-files").read().split():
        if not os.path.exists(f"{r.state}/{name}"):
            continue
        os.unlink(f"{r.state}/{name}")
        r.start()
        said = wait_for(lambda: re.search(rf"{re.escape(name)}\b[^\n]*(missing|had one)", r.journal()) is not None, 20)
        time.sleep(2)  # a few frames: nothing it protected may be granted again
        regranted = count(r, granted)
        r.stop()
        check(f"(a) {r.dir.split('/')[-1]}: {name} deleted while stopped: the start says it is missing", said,
              r.journal()[-1200:])
        if name not in ("state-files",):
            check(f"(a) {r.dir.split('/')[-1]}: {name} deleted while stopped: {who} is not granted again", regranted == 0,
                  r.journal()[-1200:])
        shutil.rmtree(r.state)
        shutil.copytree(backup, r.state)

# (b) The whole folder deleted while running, nothing written after it, then kill -9.
for r in (door, gate):
    granted, refused, who = PROTECTED[r]
    kept = [n for n in open(f"{r.state}/state-files").read().split() if os.path.exists(f"{r.state}/{n}")]
    r.start()
    check(f"(b) {r.dir.split('/')[-1]}: started on its state: {who} refused",
          wait_for(lambda: count(r, refused) >= 1, 30) and count(r, granted) == 0, r.journal()[-1200:])
    shutil.rmtree(r.state)
    back = wait_for(lambda: all(os.path.exists(f"{r.state}/{n}") for n in kept if not n.startswith("audit.db")), 10)
    check(f"(b) {r.dir.split('/')[-1]}: the folder deleted while running: {', '.join(n for n in kept if not n.startswith('audit.db'))} "
          "made again within 10 s, said in the journal", back and "made again" in r.journal(), r.journal()[-1200:])
    r.stop(sig=signal.SIGKILL)
    r.start()
    time.sleep(3)
    check(f"(b) {r.dir.split('/')[-1]}: after kill -9 and a start, {who} is still refused, never granted",
          wait_for(lambda: count(r, refused) >= 1, 30) and count(r, granted) == 0, r.journal()[-1200:])
    r.stop()

finish()
