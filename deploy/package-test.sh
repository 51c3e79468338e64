#!/bin/bash
# Builds the .deb and installs it into a clean Debian 12 root (debootstrap minbase plus systemd
# and udev, as on any installed system; cached), where it
# must: resolve its dependencies from the Debian mirror, create its user, pass
# `systemd-analyze verify`, `scangate check-config` and `scangate demo`, and run as the service
# does (its unit's command line, as user scangate, in demo mode: replayed frames, simulated GPIO)
# and answer STATUS on its console. Prints PASS/FAIL lines and "package: N passed, M failed".
# Usage (as root): deploy/package-test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
R=${BOOKWORM_ROOT:-/var/cache/scangate-bookworm/root}
passed=0; failed=0
check() { local name=$1; shift; if "$@"; then echo "PASS $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi; }
finish() { echo "package: $passed passed, $failed failed"; [ $failed = 0 ]; exit $?; }
[ "$(id -u)" = 0 ] || { echo "FAIL package: needs root"; failed=1; finish; }

DEB=$(deploy/package.sh | tail -1)
check "package: built $DEB" test -s "$DEB"

MIRROR=$(grep -rhoE '^(URIs:|deb)\s+\S+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | awk '{print $2}' | grep -E '/debian/?$' | head -1)
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
if [ ! -e "$R/.base-ready-2" ]; then
  rm -rf "$R"; mkdir -p "$R"
  debootstrap --variant=minbase --include=systemd,procps,udev --arch=amd64 bookworm "$R" "$MIRROR" > "$R.debootstrap.log" 2>&1 \
    || { tail "$R.debootstrap.log"; check "package: debootstrap a clean Debian 12 root" false; finish; }
  touch "$R/.base-ready-2"
fi
# Each run starts from the clean root: install into a throwaway copy.
C=$(mktemp -d /var/tmp/scangate-pkgroot.XXXXXX)
cp -a "$R/." "$C/"
mounted=()
cleanup() { for ((i=${#mounted[@]}-1; i>=0; i--)); do umount -l "${mounted[i]}" 2>/dev/null; done; rm -rf "$C"; }
trap cleanup EXIT
mount -t proc proc "$C/proc" && mounted+=("$C/proc")
mount --bind /dev "$C/dev" && mounted+=("$C/dev")
mount -t tmpfs tmpfs "$C/tmp" && mounted+=("$C/tmp")
cp /etc/resolv.conf "$C/etc/resolv.conf" 2>/dev/null
cp "$DEB" "$C/tmp/scangate.deb"
IN() { chroot "$C" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
IN apt-get update -q > "$C/tmp/apt.log" 2>&1
check "install: apt-get install ./scangate.deb resolves its dependencies on a clean Debian 12" \
  IN bash -c 'apt-get install -y -q --no-install-recommends /tmp/scangate.deb >> /tmp/apt.log 2>&1'
check "install: service user scangate exists, in groups video, gpio and dialout" \
  IN bash -c 'id scangate | grep -q video && id scangate | grep -q gpio && id scangate | grep -q dialout'
check "install: /etc/scangate/config.toml is a conffile" IN bash -c 'grep -q config.toml /var/lib/dpkg/info/scangate.conffiles'
check "unit: systemd-analyze verify passes" \
  bash -c "systemd-analyze verify --root='$C' /lib/systemd/system/scangate.service 2>&1 | tee /dev/stderr | { ! grep -q .; }"
check "check-config: the installed default configuration is valid" \
  IN scangate check-config --config /etc/scangate/config.toml
check "demo: runs and prints decisions" IN bash -c 'scangate demo --fps 60 --dir /tmp/demo | grep -q "decision granted qr label=alice"'
# The service as its unit runs it (same command line, same user), in demo mode.
IN bash -c 'cat > /tmp/demo.toml <<TOML
[camera]
source = "replay"
replay_path = "/tmp/demo"
replay_fps = 30
[allow_list]
path = "/tmp/demo/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = "/var/lib/scangate/audit.db"
[console]
listen = ["127.0.0.1:4570"]
TOML
chmod -R a+rX /tmp/demo /tmp/demo.toml'
IN runuser -u scangate -- /usr/bin/scangate run --config /tmp/demo.toml --quiet-edges > "$C/tmp/service.out" 2>&1 &
for _ in $(seq 100); do grep -q "console listening" "$C/tmp/service.out" 2>/dev/null && break; sleep 0.1; done
sleep 1
check "service: started as user scangate in demo mode, answers STATUS on its console" \
  IN bash -c 'scangate console --tcp 127.0.0.1:4570 --command STATUS | tee /tmp/status.txt | grep -q "^OK status"'
check "service: its audit log in /var/lib/scangate verifies" IN bash -c 'sleep 1; scangate log verify --db /var/lib/scangate/audit.db'
pkill -TERM -f "scangate run --config /tmp/demo.toml"; sleep 1
check "remove: dpkg -r removes the package, the audit log stays" \
  IN bash -c 'dpkg -r scangate >/dev/null 2>&1 && ! test -e /usr/bin/scangate && test -e /var/lib/scangate/audit.db'
finish
