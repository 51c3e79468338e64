#!/bin/bash
# The decoder beside its peers, in one run: the BoofCV half fitted to 640x480 (bench/dataset.py)
# and empty frames (zxing-cpp's falsepositives-1..2 at 640x480). Every count comes from the
# independent scorer (bench/peers.py) over `scangate decode --json` lines.
#  - peers: one call per photo (zbar, zxing-cpp 1.4, zxing-cpp newest, OpenCV): codes, mean ms;
#  - the strategy's steps: the reader's order cut after each attempt, every attempt on each photo
#    (`decode --frames 1 --variants retry --strategy default:N`): codes, mean ms per photo;
#  - the reader's way: each photo held for 30 frames (1 s at 30 fps) within decode_budget_ms of
#    BUDGETS (`decode --frames 30 --budget-ms B`): codes read in that second, mean ms per frame;
#  - per BoofCV category, each of them;
#  - empty frames: per-frame time of a still, empty scene (300 frames a photo: quiet frames) and
#    of the busy second, against each peer's time per call on the same frames.
# Writes OUT/decoder.txt (raw), OUT/decoder.md and OUT/decoder-rate.png (bench/decoder_report.py).
# Usage: bench/decoder.sh BINARY OUT [BUDGETS]     BUDGETS default "1 2 4 8 16" (ms)
set -u -o pipefail
B=$(realpath "$1"); OUT=$(mkdir -p "$2" && realpath "$2"); BUDGETS=${3:-"1 2 4 8 16"}
cd "$(dirname "$0")/.."
CORPUS=${SCANGATE_CORPUS:-$(cd .. && pwd)/shared/corpus}
VENV=/var/cache/scangate-bench/venv
DS=$(mktemp -d); trap 'rm -rf "$DS"' EXIT
/usr/bin/python3 bench/dataset.py "$CORPUS" "$DS" --sizes "" --variants upright --boofcv-sizes 640x480 --empty-sizes 640x480 || exit 1
BOOF=$DS/boofcv-640x480-upright
mapfile -t FILES < <(find "$BOOF" -name '*.pgm' | sort)
EMPTY=("$DS"/empty-640x480/*.pgm)
RAW=$OUT/decoder.txt
: > "$RAW"
echo "# $(nproc) cores, $(uname -m), $("$B" version | sed -n 2p), $(date -u +%Y-%m-%d)" >> "$RAW"

peer() {  # PYTHON ENGINE
  "$1" bench/peers.py --categories "$2" "$BOOF" >> "$RAW" || exit 1
  "$1" bench/peers.py --time "$2" "${EMPTY[@]}" >> "$RAW" || exit 1
}
peer /usr/bin/python3 zbar
peer /usr/bin/python3 zxing-1.4
if [ -x "$VENV/bin/python" ]; then peer "$VENV/bin/python" zxing-newest; peer "$VENV/bin/python" opencv; fi

# scangate LABEL ARGS...: decode the photos, score them, and note the mean time from its summary.
scangate() {
  local label=$1; shift
  "$B" decode --json --results 64 --formats qr "$@" "${FILES[@]}" > "$DS/$label.json" 2> "$DS/$label.err" || return 1
  /usr/bin/python3 bench/peers.py --categories "json=$DS/$label.json" "$BOOF" | sed "s|^json=[^ ]*|$label|" | grep -v /MEAN >> "$RAW" || exit 1
  local mean; mean=$(sed -n 's/.*per-frame decode µs p50 [0-9]* p90 [0-9]* p99 [0-9]* mean \([0-9]*\).*/\1/p' "$DS/$label.err")
  [ -n "$mean" ] || { echo "bench/decoder.sh: no summary from $label: $(cat "$DS/$label.err")"; exit 1; }
  local last; last=$(sed -n 's/.*last attempt: \(.*\)$/\1/p' "$DS/$label.err")
  echo "$label boofcv-640x480-upright/MEAN - - $(awk "BEGIN{printf \"%.3f\", $mean/1000}") - $last" >> "$RAW"
}
# Steps until the order has no more attempts (`default:N` past its end is refused).
for n in $(seq 1 16); do
  scangate "step-$n" --frames 1 --variants retry --strategy "default:$n" && continue
  grep -q "default:$n\|cannot read attempt" "$DS/step-$n.err" && break
  echo "bench/decoder.sh: step $n failed: $(cat "$DS/step-$n.err")"; exit 1
done
# The reader: 30 frames a photo, never quiet (a photo is a change, and quiet starts after a
# second; with the harness's clock a slow frame could otherwise tip the last ones quiet).
for b in $BUDGETS; do scangate "reader-${b}ms" --frames 30 --budget-ms "$b" --quiet-after-ms 0 || exit 1; done

# Empty frames: a still scene for 10 s a photo (quiet after the first second), and the busy second.
"$B" decode --formats qr --frames 300 "${EMPTY[@]}" 2>&1 >/dev/null |
  sed -n 's/.*quiet frames, µs p50 \([0-9]*\) mean \([0-9]*\)).*/scangate-quiet time \1 \2 -/p' >> "$RAW"
"$B" decode --formats qr --frames 30 --quiet-after-ms 0 "${EMPTY[@]}" 2>&1 >/dev/null |
  sed -n 's/.*per-frame decode µs p50 \([0-9]*\) p90 [0-9]* p99 [0-9]* mean \([0-9]*\).*/scangate-busy time \1 \2 -/p' >> "$RAW"
/usr/bin/python3 bench/decoder_report.py "$OUT" > "$OUT/decoder.md" || exit 1
echo "bench/decoder.sh: $OUT/decoder.md"
