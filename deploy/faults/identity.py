#!/usr/bin/env python3
"""Which log (issue 27, items 2 and 4), on the real binary with a replay source and simulated GPIO:

(a) the log's directory (the state directory) deleted while the reader runs: STATUS shows
    `FAULT log-missing` within 5 s, the journal says it, the fleet gets the log-missing record, the
    directory is made again and a new log keeps the decisions made after the deletion; after a
    restart `log verify` passes on the new log and names the log that went missing.
(b) the log moved aside (a reset) with the fleet connected, while the reader runs and again while
    it is stopped: the consumer has every record of the new log, keyed by (log, seq), although the
    fleet state file acknowledged records of the old log.

Usage: identity.py SCANGATE WORKDIR"""
import os, re, shutil, sqlite3, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Broker, Reader, check, finish, qr_frames, wait_for  # noqa: E402

B, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)

# A code held in view, decided again every 400 ms (presence.repeat_ms): a steady stream of decisions.
FRAMES = qr_frames(W, "steady", "EMP-0001")
BUSY = "[presence]\nrepeat_ms = 400\n"


def log_id(path):
    """The log id the database at `path` keeps (None without one, or without a database)."""
    if not os.path.exists(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        row = conn.execute("SELECT value FROM meta WHERE key='log_id'").fetchone()
        conn.close()
        return row[0] if row else None
    except sqlite3.Error:
        return None


def not_delivered(published, records, log):
    """The sequences of `records` (of log `log`) the consumer has not got as the log has them,
    keyed by (log, seq) as a consumer de-duplicates."""
    have = {}
    for p in published:
        have.setdefault((p.get("log"), p["seq"]), []).append(p)
    return [r["seq"] for r in records if not any(
        p["kind"] == r["kind"] and p["time_ns"] == r["time_ns"] for p in have.get((log, r["seq"]), []))]


def moved_aside(path, tag):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.rename(path + suffix, f"{path}.{tag}{suffix}")


broker = Broker(W)
readers = []
try:
    # ---------------------------------------------------------------- (a) directory deleted
    a = Reader(B, W, "door-a", FRAMES, broker_port=broker.port, extra=BUSY)
    readers.append(a)
    a.start()
    check("(a) the reader is up", a.port is not None, a.journal())
    wait_for(lambda: a.decisions() >= 3, 15)
    time.sleep(0.5)
    old = log_id(a.log_path)
    shutil.rmtree(a.state)
    gone_at = time.time()
    d0 = a.decisions()
    status = wait_for(lambda: (lambda s: s if "log-missing" in s else "")(a.status()), 5, step=0.2)
    took = time.time() - gone_at
    check(f"(a) STATUS shows FAULT log-missing within 5 s of the deletion ({took:.1f} s)",
          "FAULT log-missing" in status and (old or "") in status, a.status())
    check("(a) the journal says the log went missing", wait_for(lambda: "FAULT log-missing" in a.journal(), 5),
          a.journal()[-1500:])
    wait_for(lambda: a.decisions() >= d0 + 4, 15)
    new = wait_for(lambda: (lambda i: i if i and i != old else None)(log_id(a.log_path)), 5)
    check("(a) the state directory is made again and a new log (a new log id) is written there",
          os.path.isdir(a.state) and new is not None and new != old, f"old {old}, new {new}")
    found = wait_for(lambda: [r for r in broker.records("door-a")
                              if r.get("kind") == "fault" and "log-missing" in r.get("detail", "")], 10)
    check("(a) the fleet gets the log-missing record (of the new log, naming the old one)",
          found and found[0].get("log") == new and (old or "?") in found[0].get("detail", ""), found)
    time.sleep(1)
    d1 = a.decisions()
    a.stop()
    records = a.records()
    kept = [r for r in records if r["kind"] == "decision" and r["run"] == 1]
    check(f"(a) the decisions made after the deletion are in the new log ({d1 - d0} printed, {len(kept)} there)",
          new is not None and len(kept) >= d1 - d0 - 1, f"{len(records)} records")
    a.start()
    wait_for(lambda: a.decisions() >= 2, 10)
    a.stop()
    rc, out = a.verify()
    check("(a) after a restart, log verify passes on the new log and names the log that went missing",
          rc == 0 and f"log {new}" in out and f"log-missing: log {old}" in out, out)

    # ---------------------------------------------------------------- (b) a reset with the fleet
    b = Reader(B, W, "door-b", FRAMES, broker_port=broker.port, extra=BUSY)
    readers.append(b)
    b.start()
    check("(b) the reader is up", b.port is not None, b.journal())
    acked = wait_for(lambda: (lambda m: int(m.group(1)) if m and int(m.group(1)) >= 5 else 0)(
        re.search(r"acknowledged through #(\d+)", b.status())), 20, step=0.3)
    check(f"(b) the fleet acknowledged the first log's records (through {acked})", acked >= 5, b.status())
    first = log_id(b.log_path)
    # While running: the log moved aside, as the writer does with a damaged file.
    moved_aside(b.log_path, "reset-1")
    second = wait_for(lambda: (lambda i: i if i and i != first else None)(log_id(b.log_path)), 5)
    check("(b, running) a new log is started at the path within 5 s", second is not None, b.status())
    wait_for(lambda: b.decisions() >= 10, 20)
    time.sleep(3)
    # The reader keeps deciding: every record the log holds now must reach the consumer (one
    # written after this read is the next check's, not a loss).
    records = b.records()
    ok = wait_for(lambda: not not_delivered(broker.records("door-b"), records, second), 10)
    left = not_delivered(broker.records("door-b"), records, second)
    check(f"(b, running) the consumer has every record of the new log by (log, seq) ({len(records)} records)",
          second is not None and records and ok and not left, f"not delivered: {left[:20]}; log at the path: {second}")
    b.stop()
    # While stopped: the log moved aside again; the state file acknowledges records of the old log.
    moved_aside(b.log_path, "reset-2")
    b.start()
    third = wait_for(lambda: (lambda i: i if i and i not in (first, second) else None)(log_id(b.log_path)), 10)
    wait_for(lambda: b.decisions() >= 6, 20)
    time.sleep(3)
    status = b.status()
    records = b.records()
    ok = wait_for(lambda: not not_delivered(broker.records("door-b"), records, third), 10)
    left = not_delivered(broker.records("door-b"), records, third)
    check(f"(b, restart) the consumer has every record of the new log by (log, seq) ({len(records)} records)",
          third is not None and records and ok and not left, f"not delivered: {left[:20]}; {status}")
    check("(b, restart) the link says it publishes the new log from its first record (journal and STATUS)",
          "publishing it from its first record" in b.journal() and "first record" in status, status)
    b.stop()
finally:
    for r in readers:
        r.stop()
    broker.stop()
finish()
