#!/usr/bin/env python3
"""Disk full and back: the reader's state on a 2 MiB tmpfs, filled while a code comes and goes.
The door keeps opening, STATUS says `FAULT: disk full`, the log recovers when space returns, every
decision the reader printed is in the log, `log verify` passes and the fleet consumer has every
record of the log, once.
Usage: disk.py SCANGATE WORKDIR"""
import os, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Broker, Reader, check, check_consumer, finish, qr_frames, wait_for

B, W = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)

# A code held in view, decided again every 400 ms (presence.repeat_ms): a steady stream of decisions.
frames = qr_frames(W, "steady", "EMP-0001")

broker = Broker(W)
reader = Reader(B, W, "door-disk", frames, broker_port=broker.port, extra="[presence]\nrepeat_ms = 400\n", isolation="process")
mount = reader.state
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mount], check=True)
try:
    reader.start()
    check("disk: the reader is up with its log on a 2 MiB tmpfs", reader.port is not None, reader.journal())
    wait_for(lambda: reader.decisions() >= 3, 15)
    # Fill the disk.
    subprocess.run(["dd", "if=/dev/zero", f"of={mount}/filler", "bs=64k"], capture_output=True)
    full = wait_for(lambda: "FAULT: disk full" in reader.status(), 20, step=0.5)
    check("disk full: STATUS says FAULT: disk full", full, reader.status())
    before = reader.decisions()
    time.sleep(4)
    check("disk full: the door keeps deciding (a decision every 400 ms)", reader.decisions() - before >= 2,
          f"{reader.decisions() - before} decisions in 4 s")
    os.unlink(f"{mount}/filler")
    recovered = wait_for(lambda: "; ok;" in reader.status(), 15, step=0.5)
    check("disk back: the log is ok again", recovered, reader.status())
    time.sleep(2)
    status = reader.status()
    reader.stop()
    printed = reader.decisions()
    records = reader.records()
    logged = sum(1 for r in records if r.get("kind") == "decision")
    m = re.search(r"(\d+) lost", status)
    lost = int(m.group(1)) if m else -1
    check(f"disk full and back: every decision printed is in the log ({printed} printed, {logged} logged, {lost} lost)",
          printed == logged and lost == 0, status)
    rc, out = reader.verify()
    check("disk full and back: log verify passes", rc == 0, out)
    time.sleep(1)
    check_consumer("disk full and back", broker.records("door-disk"), records)
finally:
    reader.stop()
    broker.stop()
    subprocess.run(["umount", "-l", mount])
finish()
