#!/usr/bin/env python3
"""What the audit log costs the card: bytes and syncs per 1,000 decisions (docs/audit-log.md).

A reader on the real binary, a replay of one allowed code decided again every `--every-ms`
(presence.repeat_ms), its log on a real file system (not tmpfs), run until `--decisions`
decisions are logged. Measured from outside the process:
  - bytes handed to write/pwrite (`wchar` in /proc/PID/io) and bytes the kernel sent to the block
    layer for it (`write_bytes`: the file system's blocks, journal excluded),
  - fdatasync/fsync calls (strace -c),
  - the largest the -wal file grew (sampled every 50 ms).
With --fleet, a plain mosquitto on loopback (deploy/faults/common.py's, with its consumer: run with
the peers' venv python for paho-mqtt) and the reader's fleet link publishing every record: the
acknowledged sequence is written too.
Usage: bench/log-io.py SCANGATE [--decisions 1000] [--every-ms 100] [--dir /var/tmp/...] [--fleet]"""
import argparse, os, re, shutil, signal, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "faults"))
from common import Broker, Reader, qr_frames

a = argparse.ArgumentParser()
a.add_argument("binary")
a.add_argument("--decisions", type=int, default=1000)
a.add_argument("--every-ms", type=int, default=100)
a.add_argument("--dir", default="/var/tmp/scangate-log-io")
a.add_argument("--commit-ms", type=int, default=200, help="[log] commit_interval_ms (the default: 200)")
a.add_argument("--log", default="", help="extra [log] settings, e.g. 'retain_records = 1000'")
a.add_argument("--fleet", action="store_true", help="with the fleet link on a loopback broker")
o = a.parse_args()

shutil.rmtree(o.dir, ignore_errors=True)
os.makedirs(o.dir)
frames = qr_frames(o.dir, "steady", "EMP-0001")
broker = Broker(o.dir) if o.fleet else None
reader = Reader(o.binary, o.dir, "io", frames, log=o.log, commit_ms=o.commit_ms, broker_port=broker.port if broker else None,
                extra=f"[presence]\nrepeat_ms = {o.every_ms}\n", fps=max(20, 2000 // o.every_ms))
reader.start()
pid = reader.proc.pid
trace = subprocess.Popen(["strace", "-f", "-tt", "-y", "-e", "trace=fdatasync,fsync", "-p", str(pid), "-o", f"{o.dir}/strace"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)


def io():
    fields = dict(l.split(": ") for l in open(f"/proc/{pid}/io").read().splitlines())
    return int(fields["wchar"]), int(fields["write_bytes"])


def logged():
    return reader.decisions()


w0, b0 = io()
d0 = logged()
wal_max = 0
t0 = time.time()
while logged() - d0 < o.decisions and time.time() - t0 < o.decisions * o.every_ms / 1000 * 3 + 30:
    try:
        wal_max = max(wal_max, os.path.getsize(reader.log_path + "-wal"))
    except OSError:
        pass
    time.sleep(0.05)
time.sleep(1)  # the last commit
w1, b1 = io()
decisions = logged() - d0
trace.send_signal(signal.SIGINT)
trace.wait()
reader.stop()
if broker:
    broker.stop()
# One line per call, its descriptor's path (-y): the WAL's syncs are the commits (and checkpoints).
by_file = {}
for line in open(f"{o.dir}/strace"):
    m = re.search(r"\b(fdatasync|fsync)\(\d+<([^>]*)>\)\s*=\s*0", line)
    if m:
        name = os.path.basename(m.group(2))
        by_file[name] = by_file.get(name, 0) + 1
syncs = sum(by_file.values())
commits = by_file.get(os.path.basename(reader.log_path) + "-wal", 0)
per = 1000 / max(1, decisions)
print(f"log-io: {decisions} decisions every {o.every_ms} ms (commit every {o.commit_ms} ms{', ' + o.log.strip() if o.log else ''}{', fleet link on' if o.fleet else ''}): "
      f"per 1,000 decisions {((w1 - w0) * per) / 1e6:.1f} MB written by the process, "
      f"{((b1 - b0) * per) / 1e6:.1f} MB to the block layer, {syncs * per:.0f} fdatasync/fsync "
      f"({syncs / max(1, commits):.3f} per WAL sync; {', '.join(f'{k} {v * per:.0f}' for k, v in sorted(by_file.items()))}); "
      f"largest WAL {wal_max / 1048576:.2f} MiB; database {os.path.getsize(reader.log_path) / 1048576:.2f} MiB")
