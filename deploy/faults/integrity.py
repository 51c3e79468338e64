#!/usr/bin/env python3
"""Issue 27 items 3, 5, 7 and 9 against the real binary: a damaged database page, a torn WAL, a
deleted WAL, and the wall clock stepped a year ahead and a year behind while the reader runs
(deploy/clockshift.c, SCANGATE_CLOCK_SHIFT_FILE) for 30 s under `retain_records`. Each ends with `scangate log verify`. Page and WAL damage are done while
the reader is stopped (SIGTERM: a clean stop, checkpointed; SIGSTOP then SIGKILL: a crash with
records in the WAL). Which page to damage is chosen with Python's own sqlite3 (a page whose
damage `PRAGMA quick_check` reports as a result row, the case the service used to ignore).

Usage: integrity.py SCANGATE WORKDIR"""
import os, re, shutil, signal, socket, sqlite3, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Reader, check, finish, jumping, qr_frames, side_by_side, wait_for  # noqa: E402


B, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
FRAMES = qr_frames(W, "alice", "EMP-0001")
# A decision about every 20 ms while the code stays in view (~30 records a second here).
BUSY = "[presence]\nrepeat_ms = 20\n"
YEAR = 366 * 86400


def status(r):
    """The STATUS reply's `| log ...` line."""
    reply = r.status()
    m = re.search(r"^\| log (.*)$", reply, re.M)
    return m.group(1) if m else reply


def notices(journal):
    """The journal's lines about the log (what an operator reading it would find)."""
    return "\n".join(l for l in journal.splitlines() if "audit log" in l or "log-" in l)[-1500:]


def lost(line):
    m = re.search(r"(\d+) lost", line)
    return int(m.group(1)) if m else -1


def crash(r, seconds):
    """Runs `r` for `seconds`, freezes it (SIGSTOP), reads what its log has committed, then kills
    it (-9): the WAL holds every record since the last checkpoint. Returns those records."""
    r.start()
    time.sleep(seconds)
    r.proc.send_signal(signal.SIGSTOP)
    committed = r.records()
    r.proc.kill()
    r.proc.wait()
    r.stop()
    return committed


def key(rec):
    return (rec["seq"], rec["run"], rec["event"], rec["time_ns"], rec["kind"], rec["detail"])


def no_reuse(name, before, after):
    """Every sequence number of `before` is either gone or still holds the same record."""
    old = {r["seq"]: key(r) for r in before}
    reused = [r["seq"] for r in after if r["seq"] in old and old[r["seq"]] != key(r)]
    return check(f"{name}: no sequence number is reused", not reused,
                 f"{len(reused)} reused, e.g. {reused[:5]} (last before {max(old) if old else 0})")


def verify_ok(name, r, *words):
    code, out = r.verify()
    ok = code == 0 and all(w in out for w in words)
    return check(f"{name}: log verify passes and says {', '.join(words) or 'OK'}", ok, out)


def wal_fault(name, damage):
    """A clean run (checkpointed), a crash with records in the WAL, `damage` to the WAL, a restart."""
    r = Reader(B, W, name, FRAMES, extra=BUSY, fps=50)
    r.start()
    time.sleep(3)
    r.stop()
    before = crash(r, 4)
    last = max(x["seq"] for x in before)
    wal = r.log_path + "-wal"
    check(f"{name}: the crash left committed records in the WAL", os.path.exists(wal) and os.path.getsize(wal) > 0,
          os.path.exists(wal))
    damage(wal)
    survived = sqlite3.connect(f"file:{r.log_path}?mode=ro", uri=True).execute("SELECT MAX(seq) FROM events").fetchone()[0]
    gone = last - (survived or 0)
    check(f"{name}: the damage really lost committed records ({gone} of {last})", gone > 0)
    r.start()
    line = wait_for(lambda: (lambda s: s if lost(s) >= gone else None)(status(r)), 10)
    check(f"{name}: STATUS counts the {gone} lost records and names the cut", bool(line) and "cut" in line.lower(),
          status(r))
    journal = r.journal()
    check(f"{name}: the journal says records {survived + 1}...{last} were lost",
          f"records {survived + 1}...{last}" in journal and "lost" in journal, notices(journal))
    wait_for(lambda: re.search(r"decision granted", r.journal()), 5)
    time.sleep(1)
    r.stop()
    after = r.records()
    no_reuse(name, before, after)
    cut = [x for x in after if x["kind"] == "records-lost" and "log-cut" in x["detail"]]
    check(f"{name}: the log continues past record {last} with a records-lost record naming the cut",
          len(cut) == 1 and cut[0]["seq"] == last + 1 and cut[0]["code"] == gone
          and f"records {survived + 1}...{last}" in cut[0]["detail"], cut or after[-3:])
    verify_ok(name, r, f"records {survived + 1}...{last}")


def torn(wal):
    size = os.path.getsize(wal)
    os.truncate(wal, size // 2 + 1000)  # mid-frame: a torn write


def deleted(wal):
    os.unlink(wal)
    if os.path.exists(wal[:-4] + "-shm"):
        os.unlink(wal[:-4] + "-shm")


def damaged_page():
    name = "damaged-page"
    r = Reader(B, W, name, FRAMES, extra=BUSY, fps=50)
    r.start()
    time.sleep(6)
    r.stop()
    before = r.records()
    last = max(x["seq"] for x in before)
    old_ids = set(re.findall(r", log ([0-9a-f]{32})", r.verify()[1]))
    db = r.log_path
    # A page whose damage quick_check reports as a row (tried on copies, with Python's sqlite3).
    with open(db, "rb") as f:
        page = int.from_bytes(f.read(100)[16:18], "big")
    pages = os.path.getsize(db) // page
    chosen, rows, garbage = None, None, os.urandom(page)
    for p in list(range(pages // 2, pages + 1)) + list(range(2, pages // 2)):
        trial = f"{W}/{name}-trial.db"
        shutil.copy(db, trial)
        with open(trial, "r+b") as f:
            f.seek((p - 1) * page)
            f.write(garbage)
        try:
            got = sqlite3.connect(trial).execute("PRAGMA quick_check(3)").fetchall()
        except sqlite3.DatabaseError:
            continue
        if got and got[0][0] != "ok":
            chosen, rows = p, got
            break
    if not check(f"{name}: a page whose damage quick_check reports as a row", chosen is not None, pages):
        return
    with open(db, "r+b") as f:
        f.seek((chosen - 1) * page)
        f.write(garbage)
    damaged = open(db, "rb").read()
    r.start()
    line = wait_for(lambda: (lambda s: s if "moved aside" in s else None)(status(r)), 10) or status(r)
    check(f"{name}: STATUS reports the damage and where the file went (page {chosen}: {rows[0][0].splitlines()[-1]})",
          "damaged" in line and "moved aside to" in line, line)
    journal = r.journal()
    m = re.search(r"(\S*audit\.db\.corrupt-[0-9TZ-]+)", journal)
    check(f"{name}: the journal names the damaged file and where it was moved",
          bool(m) and db in journal.replace(m.group(1) if m else "", ""), notices(journal))
    moved = m.group(1).rstrip(":,;") if m else ""
    check(f"{name}: the damaged file is kept whole at its new name",
          bool(moved) and os.path.exists(moved) and open(moved, "rb").read() == damaged, moved)
    # The event reaches the journal through the event printer, after STATUS already says it: waited for.
    journal = wait_for(lambda: (lambda j: j if re.search(r"fault log-write-failed", j) else None)(r.journal()), 6) or r.journal()
    check(f"{name}: a fault event follows in the journal", bool(re.search(r"fault log-write-failed", journal)),
          notices(journal))
    cleared = wait_for(lambda: (lambda s: s if "FAULT" not in s else None)(status(r)), 6)
    # The recovery event, like the fault's, reaches the journal after STATUS shows it: waited for.
    recovered = wait_for(lambda: "state log-recovered" in r.journal(), 6)
    check(f"{name}: the fault clears once reported (log-recovered); STATUS keeps saying what happened",
          bool(cleared) and "DAMAGED" in cleared and recovered, (cleared or status(r)) + notices(r.journal()))
    r.stop()
    after = r.records()
    first = after[0] if after else {}
    check(f"{name}: the new log's first records name the moved-aside file",
          any(moved and moved in x["detail"] and x["kind"] in ("fault", "records-lost") for x in after[:3]),
          after[:3])
    check(f"{name}: the moved-aside record says how far the old log had committed (record {last})",
          any(f"committed through record {last}" in x["detail"] for x in after[:3]), after[:3])
    # A new log, with a new log id (consumers tell it from the old one: docs/audit-log.md, "Which log").
    code, out = r.verify()
    new_id = re.search(r", log ([0-9a-f]{32})", out)
    check(f"{name}: the new log verifies, under a new log id", code == 0 and bool(new_id) and first.get("seq") == 1
          and (not old_ids or new_id.group(1) not in old_ids), out)


def clock(name, shift):
    """Fills the log past retain_records on the true clock, then steps the running reader's
    clock by `shift` seconds for 30 s (three of the writer's 10 s prune ticks; the
    defect this guards let the log grow by ~35 records/s, past the bound within 20 s). The floor file says the true time, as on a reader that
    has been synchronised for a while."""
    r = Reader(B, W, name, FRAMES, extra=BUSY, fps=50, log="retain_records = 1000")
    with open(f"{r.state}/clock-floor", "w") as f:
        f.write(f"{int(time.time())}\n")
    os.chmod(f"{r.state}/clock-floor", 0o600)
    shift_file = f"{r.dir}/clock-shift"
    with open(shift_file, "w") as f:
        f.write("0\n")
    r.start(env=jumping(W, shift_file))
    filled = wait_for(lambda: (lambda n: n if n >= 1000 else None)(len(r.records())), 90, step=2)
    first_seq = r.records()[-1]["seq"]
    with open(shift_file, "w") as f:
        f.write(f"{shift}\n")
    samples, t0 = [], time.time()
    while time.time() - t0 < 30:
        time.sleep(5)
        samples.append(len(r.records()))
    rate = (r.records()[-1]["seq"] - first_seq) / (time.time() - t0)
    r.stop()
    print(f"  {name}: {filled} records, then every 5 s with the clock {shift:+d} s: {samples} ({rate:.0f} records/s)",
          flush=True)
    check(f"{name}: nothing was pruned by age (never under retain_records = 1000)", bool(filled) and min(samples) >= 1000,
          samples)
    # Pruning by count keeps 1000 every 10 s: at most one tick's records (and a margin) on top.
    bound = 1000 + int(15 * rate) + 50
    check(f"{name}: pruning by count went on (at most {bound})", max(samples[2:]) <= bound, samples)
    verify_ok(name, r)


# SCANGATE_FAULTS_ONLY="wal-torn clock-ahead" runs some of them.
ONLY = os.environ.get("SCANGATE_FAULTS_ONLY", "").split()
for fault, run in [("damaged-page", damaged_page), ("wal-torn", lambda: wal_fault("wal-torn", torn)),
                   ("wal-deleted", lambda: wal_fault("wal-deleted", deleted))]:
    if not ONLY or fault in ONLY:
        run()
# The two clock jumps are readers of their own: side by side.
side_by_side([run for fault, run in [("clock-ahead", lambda: clock("clock-ahead", YEAR)),
                                     ("clock-behind", lambda: clock("clock-behind", -YEAR))]
              if not ONLY or fault in ONLY], workers=2)
finish()
