#!/bin/bash
# The accuracy harness over ../shared/corpus with one scangate binary: the 162 QR photos of
# zxing-cpp's qrcode-1..6 (original size and fitted to 640x480; upright, inverted, mirrored) and
# the BoofCV half (QR codes found by location). Prints "name passed total median_ms" lines.
# Usage: bench/accuracy.sh SCANGATE [CORPUS]
set -euo pipefail
B=$1
C=${2:-$(cd "$(dirname "$0")/../.." && pwd)/shared/corpus}
Q=$(mktemp -d)
trap 'rm -rf "$Q"' EXIT
for n in 1 2 3 4 5 6; do ln -s "$C/zxing-cpp/qrcode-$n" "$Q/qrcode-$n"; done
total() { tail -1 | awk '{print $2, $4, $6}'; }
for size in original 640x480; do
  extra=""; [ $size = original ] || extra="--size $size"
  for v in upright inverted mirrored; do
    echo "qr-$size-$v $("$B" decode --expect "$Q" --formats qr --variant $v $extra | total)"
  done
done
echo "boofcv-upright $("$B" decode --locations "$C/boofcv-dev" --formats qr | total)"
