#!/usr/bin/env python3
"""bench/decoder.sh's raw lines (OUT/decoder.txt) as markdown on standard output, and the plot of
codes read against CPU per photo or frame (OUT/decoder-rate.png). Usage: decoder_report.py OUT"""
import os, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out = sys.argv[1]
header, totals, means, cats, times, last = "", {}, {}, {}, {}, {}
for line in open(os.path.join(out, "decoder.txt")):
    if line.startswith("#"): header = line[1:].strip(); continue
    f = line.split()
    engine, what = f[0], f[1]
    if what == "time": times[engine] = (int(f[2]), int(f[3])); continue
    if what.endswith("/MEAN"):
        means[engine] = float(f[4]); last[engine] = " ".join(f[6:]); continue
    if "/" in what: cats.setdefault(engine, {})[what.split("/", 1)[1]] = (int(f[2]), int(f[3]), int(f[5])); continue
    totals[engine] = (int(f[2]), int(f[3]), int(f[5]))

peers = [e for e in ("zbar", "zxing-1.4", "zxing-newest", "opencv") if e in totals]
steps = sorted((e for e in totals if e.startswith("step-")), key=lambda e: int(e[5:]))
readers = sorted((e for e in totals if e.startswith("reader-")), key=lambda e: float(e[7:-2]))
names = {"zbar": "zbar 0.23", "zxing-1.4": "zxing-cpp 1.4 (Debian)", "zxing-newest": "zxing-cpp newest (PyPI)", "opencv": "OpenCV QRCodeDetector"}

md = ["## The decoder beside its peers (bench/decoder.sh)", "",
      f"{header}. The BoofCV half fitted to 640×480, QR only, codes found at a labelled place (IoU > 0.1,",
      "each label once; bench/peers.py scores every engine, ScanGate's from its `decode --json` lines).",
      "Peers: one call per photo. ScanGate, every attempt: the reader's order on each photo (`scangate",
      "decode`); the reader: each photo held 30 frames (1 s at 30 fps) within `decode_budget_ms`,",
      "codes read in that second, CPU per frame.", "",
      "| engine | codes of 636 | false positives | mean ms per photo (reader: per frame) |", "|---|---:|---:|---:|"]
def row(label, e):
    p, t, fp = totals[e]
    md.append(f"| {label} | {p} ({100 * p / t:.1f} %) | {fp} | {means.get(e, 0):.2f} |")
for e in peers: row(names[e], e)
if steps: row(f"ScanGate, every attempt (the whole order)", steps[-1])
for e in readers: row(f"ScanGate reader, budget {e[7:-2]} ms" + (" (default)" if e == "reader-8ms" else ""), e)
md += ["", "The strategy's steps (the reader's order cut after each attempt, every attempt on each photo):", "",
       "| step | attempt added | codes | mean ms per photo |", "|---:|---|---:|---:|"]
for e in steps:
    note = " (streams only: not run on a still photo)" if last.get(e, "").startswith("tracked") else ""
    md.append(f"| {e[5:]} | {last.get(e, '')}{note} | {totals[e][0]} | {means.get(e, 0):.2f} |")
steps = [e for e in steps if not last.get(e, "").startswith("tracked")]

columns = peers + ([steps[-1]] if steps else []) + (["reader-8ms"] if "reader-8ms" in totals else [])
label = {**names, **({steps[-1]: "ScanGate, every attempt"} if steps else {}), "reader-8ms": "ScanGate reader, 8 ms"}
categories = sorted({c for e in columns for c in cats.get(e, {})})
md += ["", "Per BoofCV category (codes found / labelled; false positives in brackets):", "",
       "| category | " + " | ".join(label[e] for e in columns) + " |", "|---|" + "---:|" * len(columns)]
for c in categories:
    cells = []
    for e in columns:
        p, t, fp = cats.get(e, {}).get(c, (0, 0, 0))
        cells.append(f"{p}/{t}" + (f" ({fp})" if fp else ""))
    md.append(f"| {c} | " + " | ".join(cells) + " |")

if times:
    md += ["", "Empty frames (zxing-cpp's falsepositives-1..2 fitted to 640×480): ScanGate as a reader sees a",
           "still, empty scene (300 frames a photo: after `quiet_after_ms`, quiet frames) and the busy",
           "second after a change (the whole budget, `--quiet-after-ms 0`); each peer, one call per frame:", "",
           "| engine | median µs per frame | mean µs per frame |", "|---|---:|---:|"]
    for e, lab in [("scangate-quiet", "ScanGate, quiet frames (default)"), ("scangate-busy", "ScanGate, busy frames (8 ms budget)")] + [(p, names[p]) for p in peers]:
        if e in times: md.append(f"| {lab} | {times[e][0]} | {times[e][1]} |")

fig, ax = plt.subplots(figsize=(7.5, 4.8))
if steps:
    xs = [means[e] for e in steps]; ys = [totals[e][0] for e in steps]
    ax.plot(xs, ys, "o-", color="tab:blue", label="ScanGate strategy, steps (every attempt on a photo)")
    for e, x, y in zip(steps, xs, ys): ax.annotate(e[5:], (x, y), textcoords="offset points", xytext=(3, -9), fontsize=7, color="tab:blue")
if readers:
    ax.plot([means[e] for e in readers], [totals[e][0] for e in readers], "s-", color="tab:green",
            label="ScanGate reader, 30 frames, budget " + "/".join(e[7:-2] for e in readers) + " ms")
for e, m in zip(peers, "v^Dx"):
    ax.plot([means.get(e, 0)], [totals[e][0]], m, markersize=8, label=names[e])
ax.set_xscale("log"); ax.set_xlabel("mean CPU ms per photo (reader: per frame), log scale")
ax.set_ylabel("codes found of 636"); ax.grid(True, which="both", alpha=0.3)
ax.set_title("BoofCV dev half at 640×480: codes read against CPU", fontsize=10)
ax.legend(fontsize=7, loc="lower left"); fig.tight_layout()
fig.savefig(os.path.join(out, "decoder-rate.png"), dpi=110)
md += ["", "![codes against CPU](decoder-rate.png)", ""]
print("\n".join(md))
