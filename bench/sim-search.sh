#!/bin/bash
# The simulator's long search (docs/testing.md, "The simulator"; CI runs 100 seeds): COUNT seeds
# of the release build from FROM on, then each mutation's first catching seed. Prints the lines
# bench/RESULTS.md "The simulator's long search" holds.
# Usage: bench/sim-search.sh [COUNT] [FROM]   (20000, 1001: past the seeds CI runs)
set -uo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-20000}; FROM=${2:-1001}
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH
swift build -c release --product scangate-sim > /dev/null || { echo "sim-search: the release build failed" >&2; exit 1; }
SIM=.build/release/scangate-sim
t0=$SECONDS
"$SIM" --seeds "$COUNT" --from "$FROM" | tail -1
echo "in $((SECONDS - t0)) s ($(nproc) cores, one used)"
for m in $("$SIM" --list-mutations); do "$SIM" --mutate "$m" | tail -1; done
