#!/bin/bash
# The web admin page under load (issue 42; bench/admin-load.py says what is measured): the real
# reader and `scangate admin` (deploy/admin-rig.sh) with the replay camera at 15 frames a second,
# the release build. Prints the table that bench/RESULTS.md "The web page under load" holds.
# Usage: bench/admin-load.sh [SECONDS_PER_PHASE] [path/to/scangate]   (20; .build/release/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
BIN=$(realpath "${2:-.build/release/scangate}")
die() { echo "admin-load: $*" >&2; exit 1; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (swift build -c release)"
. deploy/admin-rig.sh
RIG_FPS=15 admin_rig "$BIN"
python3 bench/admin-load.py "https://127.0.0.1:$PORT" "$D/console.sock" "$ADMIN" "$SECS"
