#!/usr/bin/env python3
"""A turnstile under faults (docs/turnstiles.md), on the real binary with a replay source, simulated
GPIO and `run --sim-passages` (someone walks through 300 ms after each unlock):

(a) kill -9 right after a passage: after the restart the same pass is denied-passback (hard mode),
    no grant, and the area's occupancy is still 1 (both kept in the state directory).
(b) the clock set back a day (LD_PRELOAD shim) across a restart, timed mode: the pass used a moment
    ago stays refused (the window is judged at the clock floor, never shortened by the clock).
(c) the state directory's disk full (a 2 MiB tmpfs): every grant made while full is durable: after
    a kill -9 and a restart with space again, each pass granted while full is denied-passback.
(d) a FIFO at the anti-passback file: the reader starts (no hang), STATUS shows the fault, and
    grants are refused (denied-unavailable), never admitted from a table a restart forgets.

Usage: turnstile.py SCANGATE WORKDIR"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Gate, Reader, check, finish, qr_frames, shifted, wait_for  # noqa: E402

B, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)

BUSY = "[presence]\nrepeat_ms = 400\n"


def turnstile(mode, extra=""):
    return BUSY + f"""[turnstile]
enabled = true
direction = "entry"
passback = "{mode}"
passback_minutes = 60
passage_timeout_ms = 1000
grants_queued_max = 1
{extra}"""


def granted(r, label):
    return len(re.findall(rf"^#\d+ \S+ decision granted .*label={label}\b", r.journal(), re.M))


def refused(r, verdict, label):
    return len(re.findall(rf"^#\d+ \S+ decision {verdict} .*label={label}\b", r.journal(), re.M))


# (a) kill -9 right after a passage.
frames = qr_frames(W, "alice", "EMP-0001")
a = Gate(B, W, "gate-kill", frames, extra=turnstile("hard"))
a.start()
check("(a) the turnstile reader is up", a.port is not None, a.journal())
passed = wait_for(lambda: re.search(r"passage entry grant label=alice", a.journal()), 15)
check("(a) a grant and its passage (the simulated walker)", passed, a.journal()[-1500:])
a.stop(signal.SIGKILL)
a.start()
wait_for(lambda: refused(a, "denied-passback", "alice") >= 3, 15)
check("(a) after kill -9 the same pass is denied-passback, never granted (hard mode)",
      refused(a, "denied-passback", "alice") >= 3 and granted(a, "alice") == 0, a.journal()[-1500:])
status = a.status()
check("(a) the area's occupancy survived the kill: 1", re.search(r"occupancy site 1\b", status), status)
a.stop()

# (b) the clock set back a day across a restart, timed mode.
b = Gate(B, W, "gate-clock", frames, extra=turnstile("timed"))
b.start()
wait_for(lambda: re.search(r"passage entry grant label=alice", b.journal()), 15)
b.stop()
b.start(env=shifted(W, -86400))
wait_for(lambda: refused(b, "denied-passback", "alice") >= 3, 15)
check("(b) clock a day back after a passage (timed, 60 min): still denied-passback, never granted",
      refused(b, "denied-passback", "alice") >= 3 and granted(b, "alice") == 0, b.journal()[-1500:])
b.stop()

# (c) the disk full under the state directory: a grant made while full is a durable record.
def blank_png(path, w=160, h=160):
    """A white gray PNG (stdlib only): the frame between two people, so each is a new presence."""
    import struct
    import zlib
    raw = b"".join(b"\x00" + b"\xff" * w for _ in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


people = [f"EMP-{n:04d}" for n in range(10, 16)]
reel = f"{W}/frames-people"
os.makedirs(reel, exist_ok=True)
for i, p in enumerate(people):
    for k in range(3):
        subprocess.run(["qrencode", "-s", "4", "-m", "4", "-o", f"{reel}/{i:02d}-{k}.png", p], check=True)
    blank_png(f"{reel}/{i:02d}-9.png")
c = Gate(B, W, "gate-disk", reel, extra=turnstile("hard"), fps=10)
# Only the first person is listed until the disk is full; then everyone is (SIGHUP reloads), so the
# others' first grants are made with the disk full.
with open(c.allow, "w") as f:
    f.write(f"text:{people[0]} label=p10\n")
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", c.state], check=True)
try:
    c.start()
    check("(c) the reader is up with its state on a 2 MiB tmpfs", c.port is not None, c.journal())
    wait_for(lambda: c.decisions() >= 2, 15)
    subprocess.run(["dd", "if=/dev/zero", f"of={c.state}/filler", "bs=64k"], capture_output=True)
    with open(c.allow, "w") as f:
        f.write("".join(f"text:{p} label=p{p[-2:]}\n" for p in people))
    full_from = len(c.journal())
    c.proc.send_signal(signal.SIGHUP)
    time.sleep(6)  # every person shown twice more with the disk full
    during = c.journal()[full_from:]
    # Whoever walked through with the disk full (a grant, then its passage).
    passed_full = sorted(set(re.findall(r"passage entry grant label=(p\d+)", during)) - {"p10"})
    c.stop(signal.SIGKILL)
    os.unlink(f"{c.state}/filler")
    c.start()
    wait_for(lambda: c.decisions() >= 12, 20)
    again = c.journal()
    regranted = [p for p in passed_full if re.search(rf"decision granted .*label={p}\b", again)]
    refused_again = [p for p in passed_full if re.search(rf"decision denied-passback .*label={p}\b", again)]
    check(f"(c) disk full: the turnstile kept granting with durable records (its blocks reserved): "
          f"{len(passed_full)} of 5 walked through with the disk full", len(passed_full) >= 3, during[-2000:])
    check(f"(c) each who walked through with the disk full ({', '.join(passed_full)}) is denied-passback after "
          f"kill -9 and restart, never granted (the record was on the disk before the unlock)",
          not regranted and len(refused_again) == len(passed_full), f"granted again: {regranted}\n{again[-1500:]}")
    c.stop()
finally:
    subprocess.run(["umount", "-l", c.state])

# (d) a FIFO at the anti-passback file.
d = Gate(B, W, "gate-fifo", frames, extra=turnstile("hard"))
os.mkfifo(f"{d.state}/passback")
d.start()
check("(d) a FIFO at the anti-passback file: the reader starts and its console answers", d.port is not None,
      d.journal()[-1500:])
if d.port:
    status = d.status()
    check("(d) STATUS shows the turnstile's fault", re.search(r"turnstile .*FAULT", status), status)
    wait_for(lambda: refused(d, "denied-unavailable", "alice") >= 2, 10)
    check("(d) grants are refused (denied-unavailable), none admitted without a durable record",
          refused(d, "denied-unavailable", "alice") >= 2 and granted(d, "alice") == 0, d.journal()[-1500:])
d.stop()
finish()
