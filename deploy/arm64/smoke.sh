#!/bin/bash
# Runs the arm64 binary that deploy/arm64/build.sh left in OUTDIR, under qemu-user (binfmt_misc),
# inside the arm64 Debian root build.sh made (its libraries are the ones the binary linked):
# `scangate --version`, `scangate decode` on a QR PNG (written by this machine's qrencode), and
# `scangate demo --port 0` for SECONDS (default 20) with a console STATUS asked by the arm64
# `scangate console` meanwhile. The demo decodes inline (decoder.isolation = "inline"): qemu-user
# refuses seccomp filters, so the sandboxed decoder workers cannot start under it (docs/arm64.md).
# Prints one PASS or FAIL line per check and `arm64 smoke: N passed, M failed`; logs in OUTDIR/smoke.
# Usage: deploy/arm64/smoke.sh OUTDIR [SECONDS]   (as root)
# Environment: SCANGATE_ARM64_SMOKE_ROOT, an arm64 root where the .deb is installed
# (deploy/arm64/install-test.sh): the installed /usr/bin/scangate runs there instead, its demo on
# the installed /etc/scangate/config.toml.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [SECONDS]" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "$1" && pwd)
SECS=${2:-20}
CACHE=${SCANGATE_ARM64_CACHE:-/var/cache/scangate-arm64}
SUITE=${SCANGATE_ARM64_SUITE:-trixie}
. "$REPO/deploy/arm64/mounts.sh" # ROOT, WORK, mnt
INSTALLED=${SCANGATE_ARM64_SMOKE_ROOT:-}
if [ -n "$INSTALLED" ]; then
  ROOT=$INSTALLED
  [ -x "$ROOT/usr/bin/scangate" ] || { echo "smoke: no /usr/bin/scangate in $ROOT" >&2; exit 2; }
else
  [ -x "$OUT/scangate" ] || { echo "smoke: no $OUT/scangate (deploy/arm64/build.sh OUTDIR first)" >&2; exit 2; }
  [ -e "$ROOT/.scangate-debootstrap" ] || { echo "smoke: no arm64 root at $ROOT (deploy/arm64/build.sh makes it)" >&2; exit 2; }
fi
grep -qs enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || { echo "smoke: qemu-aarch64 is not registered with binfmt_misc" >&2; exit 2; }
LOGS=$OUT/smoke
rm -rf "$LOGS"
mkdir -p "$LOGS"

mkdir -p "$ROOT/mnt/scangate-smoke"
mountpoint -q "$ROOT/proc" || mnt -t proc proc "$ROOT/proc"
mnt --bind /dev "$ROOT/dev"
mnt --bind "$LOGS" "$ROOT/mnt/scangate-smoke"
SG=/mnt/scangate-smoke/scangate
BASE_CONFIG=$REPO/config.toml
if [ -n "$INSTALLED" ]; then
  SG=/usr/bin/scangate
  BASE_CONFIG=$ROOT/etc/scangate/config.toml
else
  install -m 0755 "$OUT/scangate" "$LOGS/scangate"
fi
# LD_LIBRARY_PATH: a debug binary (deploy/arm64/ci.sh) links the Swift runtime from the root's
# swiftlang; the release binary has it inside.
in_root() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    LD_LIBRARY_PATH=/usr/libexec/swift/lib/swift/linux "$@"
}

passed=0 failed=0
check() { # NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then echo "PASS $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}

echo "arm64 smoke: $(file -b "$OUT/scangate" | cut -d, -f1-2), in $ROOT, qemu $(qemu-aarch64-static --version | head -1 | awk '{print $3}')"
t=$SECONDS
in_root "$SG" --version >"$LOGS/version.log" 2>&1 || true
check "scangate --version ($((SECONDS - t)) s): $(paste -sd' ' "$LOGS/version.log")" grep -q '^decoder: zxing-cpp' "$LOGS/version.log"

PAYLOAD="SCANGATE-ARM64-$(date +%s)"
qrencode -s 6 -o "$LOGS/code.png" "$PAYLOAD"
t=$SECONDS
in_root "$SG" decode /mnt/scangate-smoke/code.png >"$LOGS/decode.log" 2>&1 || true
check "scangate decode on a QR PNG ($((SECONDS - t)) s): $(head -1 "$LOGS/decode.log")" grep -q "qr text $PAYLOAD" "$LOGS/decode.log"

# The repository's (or the installed) configuration, decoding inline, its console on any free loopback port.
sed 's/^isolation = "process"/isolation = "inline"/; s/^listen = \["127\.0\.0\.1:4570"\]/listen = ["127.0.0.1:0"]/' \
  "$BASE_CONFIG" >"$LOGS/config.toml"
grep -q '^isolation = "inline"' "$LOGS/config.toml" && grep -q '^listen = \["127.0.0.1:0"\]' "$LOGS/config.toml"
# chroot execs env, env execs the binary (qemu through binfmt_misc): $! is the demo's pid.
chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  LD_LIBRARY_PATH=/usr/libexec/swift/lib/swift/linux "$SG" demo --config /mnt/scangate-smoke/config.toml --port 0 >"$LOGS/demo.log" 2>&1 &
demo=$!
port=""
for _ in $(seq 1 "$((SECS * 2))"); do
  port=$(sed -n 's/^console listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$LOGS/demo.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.5
done
status=1
if [ -n "$port" ]; then
  sleep 3
  in_root "$SG" console --tcp "127.0.0.1:$port" --command STATUS >"$LOGS/status.log" 2>&1 && status=0
fi
sleep "$SECS"
kill -INT "$demo" 2>/dev/null || true
demo_rc=0
wait "$demo" || demo_rc=$?
check "demo: console listening (port ${port:-none})" test -n "$port"
check "console STATUS from the arm64 scangate console: $(grep -m1 -i 'state\|camera' "$LOGS/status.log" 2>/dev/null | cut -c1-60)" test "$status" = 0
check "demo: $(grep -c ' decision ' "$LOGS/demo.log") decisions, $(grep -c ' decision granted' "$LOGS/demo.log") granted" grep -q ' decision granted' "$LOGS/demo.log"
check "demo: $(grep -m1 '^summary:' "$LOGS/demo.log")" grep -q '^summary:' "$LOGS/demo.log"
check "demo: exit status $demo_rc (it stops after its frames, or at SIGINT)" test "$demo_rc" = 0
echo "arm64 smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
