#!/bin/bash
# Time from the first frame that shows a code to the edge of its decision (the relay for a grant),
# each code held up after a second of an empty view, through the reader's engine in this process
# (SceneHarness: the strategy within its budget, presence, decision, relay; no loop and no decoder
# worker, so no process boundary): the demo's 14 scenes (`scangate demo --bench`, each code 0.6 s)
# and the 162 QR photos of zxing-cpp's qrcode-1..6 fitted to 640x480 (`scangate decode --scenes
# DIR`, each photo 1 s, its expected text on the allow-list); then the 162 photos inverted and
# mirrored, decided within one second, at 10, 15 and 30 fps. The engine's clock moves a frame
# period per frame, so a code read on the second frame at 15 fps costs 67 ms.
# Writes OUT/scenes.txt (each run's summary line) and OUT/scenes.md (the table).
# Usage: bench/scenes.sh BINARY OUT
set -u -o pipefail
B=$(realpath "$1"); OUT=$(mkdir -p "$2" && realpath "$2")
cd "$(dirname "$0")/.."
CORPUS=${SCANGATE_CORPUS:-$(cd .. && pwd)/shared/corpus}
DS=$(mktemp -d); trap 'rm -rf "$DS"' EXIT
/usr/bin/python3 bench/dataset.py "$CORPUS" "$DS" --sizes 640x480 --variants upright,inverted,mirrored --boofcv-sizes "" || exit 1
RAW=$OUT/scenes.txt
: > "$RAW"
echo "# $(nproc) cores, $(uname -m), $("$B" version | sed -n 2p), $(date -u +%Y-%m-%d)" >> "$RAW"

# row LABEL FPS COMMAND...: the harness's summary line, labelled.
row() {
  local label=$1 fps=$2; shift 2
  local line; line=$("$@" 2>&1 | grep '^scenes:')
  [ -n "$line" ] || { echo "bench/scenes.sh: no summary from: $*"; exit 1; }
  echo "$label $fps $line" >> "$RAW"
}
row demo 15 "$B" demo --bench --fps 15
row demo 30 "$B" demo --bench --fps 30
row qr-640x480-upright 15 "$B" decode --scenes "$DS/qr-640x480-upright" --fps 15
for v in inverted mirrored; do
  for fps in 10 15 30; do row "qr-640x480-$v" "$fps" "$B" decode --scenes "$DS/qr-640x480-$v" --fps "$fps"; done
done

/usr/bin/python3 - "$RAW" > "$OUT/scenes.md" <<'EOF'
import re, sys
rows = [l for l in open(sys.argv[1]) if not l.startswith("#")]
machine = open(sys.argv[1]).readline().lstrip("# ").strip()
print("## From the first frame showing a code to the relay edge (bench/scenes.sh)\n")
print(f"{machine}. In process (no decoder worker): each code held up after a second of an empty")
print("view, through the reader's engine at the default 8 ms budget; the engine's clock moves a frame")
print("period per frame. \"One call\": the first attempt's cost on each code's first frame (one")
print("zxing-cpp 1.4 call on that frame). Over budget: frames that spent more than the budget plus")
print("their dearest attempt.\n")
print("| scenes | fps | decided (within 1 s) of shown | first frame → edge p50 / p99 / max ms | one call p50 ms | frames to read p90 / max | decode per frame p50 / p99 / max ms | over budget |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for l in rows:
    label, fps = l.split()[:2]
    m = lambda p: re.search(p, l)
    shown = m(r"scenes: (\d+)").group(1); decided = m(r"(\d+) decided").group(1); within = m(r"(\d+) within 1 s").group(1)
    edge = m(r"edge ms p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+)").groups()
    call = m(r"first frame: p50 ([\d.]+)").group(1)
    frames = m(r"frames to read p50 \d+ p90 (\d+) max (\d+)").groups()
    per = m(r"per-frame decode ms p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+)").groups()
    over = m(r"dearest attempt: (\d+)").group(1)
    print(f"| {label} | {fps} | {decided} ({within}) of {shown} | {' / '.join(edge)} | {call} | {' / '.join(frames)} | {' / '.join(per)} | {over} |")
EOF
echo "bench/scenes.sh: $OUT/scenes.md"
