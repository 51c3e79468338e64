#!/usr/bin/python3
"""Plots bench/fleet timelines (bench/fleet/run with TIMELINE=FILE): events delivered per second
and their p99 latency, one line per run. Usage: plot.py OUT.png LABEL=FILE.csv [LABEL=FILE.csv ...]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
for label, path in runs:
    rows = list(csv.DictReader(open(path)))
    seconds = [int(r["second"]) for r in rows]
    top.plot(seconds, [int(r["delivered"]) for r in rows], label=label)
    bottom.plot(seconds, [float(r["p99_ms"]) / 1000 for r in rows], label=label)
top.set_ylabel("events delivered / s")
bottom.set_ylabel("p99 latency (s)")
bottom.set_xlabel("second of the run")
top.legend()
top.set_title("1,000 fleet links, one mosquitto: first deliveries at the subscriber")
fig.tight_layout()
fig.savefig(out, dpi=90)
