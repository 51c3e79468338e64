#!/usr/bin/env python3
"""The service's memory over a long run (issue 41): the real binary as deployed, RSS sampled.

`scangate run` with the decoder workers, the fleet link to a plain mosquitto on loopback (with its
consumer), one allowed code decided every `--every-ms` (presence.repeat_ms), the broker stopped and
started again `--restarts` times spread over the run, the log committing at the default 200 ms.
Every `--sample-s` seconds it prints a CSV row: minutes, RssAnon, RssFile, RssShmem (KiB, from
/proc/PID/status) and the decisions logged so far. At the end: the mappings that grew most (from
/proc/PID/smaps, first sample after the warm-up against the last) and one summary line:
  # rss after warm-up A KiB, last B KiB, max C KiB; anon A1 -> B1; decisions D; broker restarts R
Run with the peers' venv python (paho-mqtt is the consumer):
  /var/cache/scangate-peers/venv/bin/python bench/soak-service.py SCANGATE --minutes 120
Writes only under --dir (default a new folder in /var/tmp, a real file system: the log must sync)."""
import argparse, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "faults"))
from common import Broker, Reader, qr_frames, wait_for

a = argparse.ArgumentParser()
a.add_argument("binary")
a.add_argument("--minutes", type=float, default=30)
a.add_argument("--every-ms", type=int, default=1000)
a.add_argument("--restarts", type=int, default=9)
a.add_argument("--sample-s", type=float, default=30)
a.add_argument("--warmup-s", type=float, default=120, help="samples before this are not the baseline")
a.add_argument("--dir", default="")
o = a.parse_args()

work = o.dir or tempfile.mkdtemp(prefix="scangate-soak-", dir="/var/tmp")
os.makedirs(work, exist_ok=True)
frames = qr_frames(work, "steady", "EMP-0001")
broker = Broker(work)
reader = Reader(o.binary, work, "soak", frames, isolation="process", broker_port=broker.port,
                extra=f"[presence]\nrepeat_ms = {o.every_ms}\n", fps=10, commit_ms=200)
reader.start()
pid = reader.proc.pid
if reader.port is None:
    sys.exit(f"the reader did not start: {reader.journal()[-2000:]}")


def status():
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            fields[k] = int(v.split()[0])
    return fields


def mappings():
    """RSS per mapping, keyed by its name (anonymous ones by their start address)."""
    out, key = {}, None
    for line in open(f"/proc/{pid}/smaps"):
        m = re.match(r"^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if m:
            key = m.group(2) or f"[anon {m.group(1)}]"
            continue
        if line.startswith("Rss:") and key is not None:
            out[key] = out.get(key, 0) + int(line.split()[1])
    return out


print("minutes,vmrss_kib,anon_kib,file_kib,shmem_kib,decisions")
t0 = time.time()
end = t0 + o.minutes * 60
gap = o.minutes * 60 / (o.restarts + 1) if o.restarts else float("inf")
next_restart, restarts = t0 + gap, 0
baseline, base_maps, peak, last = None, None, 0, None
next_sample = t0
while time.time() < end:
    now = time.time()
    if now >= next_restart and restarts < o.restarts:
        broker.proc.terminate()
        broker.proc.wait()
        time.sleep(5)
        broker.proc = subprocess.Popen(["mosquitto", "-c", f"{broker.dir}/mosquitto.conf"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: broker._listening(), 10)
        restarts += 1
        next_restart += gap
    if now >= next_sample:
        if reader.proc.poll() is not None:
            sys.exit(f"the reader stopped: {reader.journal()[-2000:]}")
        s = status()
        last = s
        peak = max(peak, s["VmRSS"])
        if baseline is None and now - t0 >= o.warmup_s:
            baseline, base_maps = s, mappings()
        print(f"{(now - t0) / 60:.1f},{s['VmRSS']},{s['RssAnon']},{s['RssFile']},{s['RssShmem']},{reader.decisions()}",
              flush=True)
        next_sample += o.sample_s
    time.sleep(0.5)

final_maps = mappings()
decisions = reader.decisions()
reader.stop()
broker.stop()
if baseline is None:
    baseline, base_maps = last, final_maps
grown = sorted(((final_maps.get(k, 0) - base_maps.get(k, 0), k) for k in set(final_maps) | set(base_maps)),
               reverse=True)
for delta, name in grown[:8]:
    if delta:
        print(f"# grew {delta:+d} KiB: {name}")
print(f"# rss after warm-up {baseline['VmRSS']} KiB, last {last['VmRSS']} KiB, max {peak} KiB; "
      f"anon {baseline['RssAnon']} -> {last['RssAnon']}; decisions {decisions}; broker restarts {restarts}")
