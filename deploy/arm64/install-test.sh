#!/bin/bash
# Installs the arm64 .deb that deploy/arm64/build.sh left in OUTDIR into a fresh Debian arm64 root
# (mmdebstrap's apt variant: Debian's essential packages, their maintainer scripts run under
# qemu-user), as `apt-get install ./scangate_..._arm64.deb` would on a Pi, then checks what the
# package made (the user, the state directory, the configuration's mode, check-config on it) and
# runs deploy/arm64/smoke.sh on the installed /usr/bin/scangate and /etc/scangate/config.toml.
# systemd does not run in a chroot: the unit is installed, not started (docs/arm64.md).
# Prints one PASS or FAIL line per check. Usage: deploy/arm64/install-test.sh OUTDIR  (as root)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "$1" && pwd)
CACHE=${SCANGATE_ARM64_CACHE:-/var/cache/scangate-arm64}
SUITE=${SCANGATE_ARM64_SUITE:-trixie}
. "$REPO/deploy/arm64/mounts.sh" # mnt, default_mirror
deb=$(ls "$OUT"/scangate_*_arm64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "install-test: no arm64 .deb in $OUT (deploy/arm64/build.sh OUTDIR first)" >&2; exit 2; }
# mmdebstrap, and arch-test (mmdebstrap checks with it that this machine runs arm64 programs).
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v arch-test >/dev/null || missing+=(arch-test)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
R=$(mktemp -d /var/tmp/scangate-arm64-install.XXXXXX)
trap 'cleanup; rm -rf "$R"' EXIT
passed=0 failed=0
check() { # NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@" >/dev/null 2>&1; then echo "PASS $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
in_root() { chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

t=$SECONDS
mmdebstrap --mode=root --variant=apt --architectures=arm64 "$SUITE" "$R" "$(default_mirror)" >"$OUT/install-root.log" 2>&1 ||
  { tail -20 "$OUT/install-root.log"; echo "FAIL a fresh $SUITE arm64 root (mmdebstrap)"; exit 1; }
check "a fresh $SUITE arm64 root ($((SECONDS - t)) s)" test -x "$R/usr/bin/apt-get"
cp "$deb" "$R/tmp/"
mnt -t proc proc "$R/proc"
t=$SECONDS
in_root apt-get update -q >"$OUT/install.log" 2>&1 || true
in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$deb")" >>"$OUT/install.log" 2>&1 || tail -20 "$OUT/install.log"
check "apt-get install ./$(basename "$deb") ($((SECONDS - t)) s, $(grep -oE '[0-9]+ newly installed' "$OUT/install.log"))" \
  in_root dpkg-query -W -f='${Status}' scangate
check "postinst: the scangate user" in_root getent passwd scangate
check "postinst: /var/lib/scangate owned by scangate" test "$(in_root stat -c %U /var/lib/scangate)" = scangate
check "/etc/scangate/config.toml is 0640 root:scangate" test "$(in_root stat -c '%a %U:%G' /etc/scangate/config.toml)" = "640 root:scangate"
check "the systemd unit is installed" test -e "$R/lib/systemd/system/scangate.service" -o -e "$R/usr/lib/systemd/system/scangate.service"
in_root /usr/bin/scangate check-config --config /etc/scangate/config.toml >"$OUT/check-config.log" 2>&1 && cc=0 || cc=$?
check "scangate check-config on the installed configuration: $(tail -1 "$OUT/check-config.log")" test "$cc" = 0
cleanup
MOUNTS=()
SCANGATE_ARM64_SMOKE_ROOT=$R "$REPO/deploy/arm64/smoke.sh" "$OUT" 20 >"$OUT/installed-smoke.out" 2>&1 || true
sed -n 's/^\(PASS\|FAIL\) /\1 installed: /p' "$OUT/installed-smoke.out"
passed=$((passed + $(grep -c '^PASS' "$OUT/installed-smoke.out" || true)))
smoke_failed=$(grep -c '^FAIL' "$OUT/installed-smoke.out" || true)
grep -q '^PASS' "$OUT/installed-smoke.out" || { tail -5 "$OUT/installed-smoke.out"; smoke_failed=$((smoke_failed + 1)); }
failed=$((failed + smoke_failed))
echo "arm64 install: $passed passed, $failed failed"
[ "$failed" = 0 ]
