#!/bin/bash
# Builds and tests ScanGate against Debian 13 (trixie, as Raspberry Pi OS trixie: zxing-cpp 2.3,
# libgpiod 2.2) from a Debian 12 machine: a trixie root made with debootstrap from the same
# Debian mirror the host uses, the host's Swift toolchain and this source tree bind-mounted
# into it, trixie's -dev packages installed inside, then the full build and test suite.
#
# Usage (as root): deploy/trixie/run.sh [swift test arguments...]
#        deploy/trixie/run.sh --run COMMAND...   build, then run COMMAND in the chroot from the
#                                                source folder ($SCANGATE is the built binary)
# Environment: TRIXIE_ROOT (default /var/cache/scangate-trixie/root; kept between runs),
#   SWIFT_DIR (the toolchain root; default: found from `swift` on PATH or /opt/swift).
# Ends with the test run's own summary; exits with its status.
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=$(pwd)
R=${TRIXIE_ROOT:-/var/cache/scangate-trixie/root}
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH
SWIFT=${SWIFT_DIR:-$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")}
T0=$(date +%s)
log() { echo "[trixie +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "FAIL trixie: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
[ -x "$SWIFT/usr/bin/swift" ] || die "no Swift toolchain at $SWIFT"

# The Debian mirror this machine already uses (not the security archive).
MIRROR=$(grep -rhoE '^(URIs:|deb)\s+\S+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | awk '{print $2}' | grep -E '/debian/?$' | head -1)
[ -n "$MIRROR" ] || die "cannot find this machine's Debian mirror in /etc/apt"

command -v debootstrap >/dev/null || { apt-get install -y -q debootstrap >/dev/null || die "apt-get install debootstrap"; }
if [ ! -x "$R/usr/bin/apt-get" ] || [ ! -e "$R/.scangate-ready" ]; then
  log "debootstrap trixie into $R"
  rm -rf "$R"; mkdir -p "$R"
  debootstrap --variant=minbase --arch=amd64 trixie "$R" "$MIRROR" > "$R.debootstrap.log" 2>&1 \
    || { tail -20 "$R.debootstrap.log"; die "debootstrap"; }
fi
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null

mounted=()
mnt() { mount "$@" && mounted+=("${@: -1}"); }
cleanup() { for ((i=${#mounted[@]}-1; i>=0; i--)); do umount -l "${mounted[i]}" 2>/dev/null; done; }
trap cleanup EXIT
mnt -t proc proc "$R/proc"
mnt -t sysfs sysfs "$R/sys"
mnt --bind /dev "$R/dev"
mnt --bind /dev/pts "$R/dev/pts"
mnt -t tmpfs tmpfs "$R/tmp"
mkdir -p "$R$SWIFT" "$R/work/scangate"
mnt --bind "$SWIFT" "$R$SWIFT"; mount -o remount,ro,bind "$R$SWIFT"
mnt --bind "$SRC" "$R/work/scangate"
if [ -d "$SRC/../shared" ]; then
  mkdir -p "$R/work/shared"
  mnt --bind "$SRC/../shared" "$R/work/shared"; mount -o remount,ro,bind "$R/work/shared"
fi

IN() { chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
         PATH=$SWIFT/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
PKGS="build-essential pkg-config libzxing-dev libgpiod-dev libevdev-dev libv4l-dev libturbojpeg0-dev libjpeg62-turbo-dev libstb-dev libcamera-dev
      libsqlite3-dev libsodium-dev libseccomp-dev libtomlplusplus-dev libqrencode-dev libssl-dev libcbor-dev nettle-dev
      libmosquitto-dev mosquitto libcairo2-dev zbar-tools poppler-utils libmicrohttpd-dev
      libsqlite3-0 libncurses6 libtinfo6 libuuid1 zlib1g libxml2 libcurl4t64
      python3 openssl socat"  # python3: the independent HMAC check in AuditLogTests; openssl, socat: ConsoleTLSTests;
      # zbar-tools, poppler-utils: PassSheetTests read the sheets back
if [ ! -e "$R/.scangate-ready" ] || ! IN dpkg-query -W $PKGS >/dev/null 2>&1; then
  log "installing trixie packages"
  IN apt-get update -q >/dev/null || die "apt-get update in the chroot"
  IN apt-get install -y -q --no-install-recommends $PKGS > "$R.apt.log" 2>&1 || { tail -20 "$R.apt.log"; die "apt-get install"; }
  touch "$R/.scangate-ready"
fi
log "trixie: $(IN dpkg-query -W -f='libzxing-dev ${Version}, ' libzxing-dev)$(IN dpkg-query -W -f='libgpiod-dev ${Version}' libgpiod-dev)"

# A build folder of its own: the host's .build holds objects built against bookworm.
SCRATCH=/root/scangate-build
log "building"
IN bash -c "cd /work/scangate && swift build --build-tests --scratch-path $SCRATCH 2>&1 | tail -5; exit \${PIPESTATUS[0]}" \
  || die "build against trixie's libraries"
if [ "${1:-}" = --run ]; then
  shift
  IN env SCANGATE=$SCRATCH/debug/scangate bash -c "cd /work/scangate && $*"
  status=$?
else
  log "testing"
  # The random kill -9 test 25 times here (SQLite 3.46's recovery), not the host's 80: it was this
  # run's longest path at 80 (180 s of 322 s).
  IN env SCANGATE_CRASH_ITERATIONS="${SCANGATE_CRASH_ITERATIONS:-25}" \
    bash -c "cd /work/scangate && swift test --skip-build --scratch-path $SCRATCH $*"
  status=$?
fi
log "done (status $status)"
exit $status
