#!/bin/bash
# Builds ScanGate for arm64 (aarch64) on an x86_64 Debian machine from Debian's packages only, as
# a cross build (docs/arm64.md):
#   - the compiler: Debian's swiftlang (unstable; 6.2.3 when written) in a Debian unstable amd64
#     root, because Debian ships no Swift >= 6.2 for bookworm or trixie and ScanGate needs 6.2;
#   - the sysroot: a Debian arm64 root (trixie unless SCANGATE_ARM64_SUITE says otherwise) made
#     with debootstrap under qemu-user (binfmt_misc), with the -dev packages of deploy/setup.sh,
#     and the aarch64 Swift runtime and standard library of the same swiftlang version, taken
#     from Debian's arm64 swiftlang package;
#   - the .deb: deploy/package.sh run inside that arm64 root (qemu-user) on the cross-built
#     binary, so Depends names that root's packages and versions.
# Leaves OUTDIR/scangate (ELF aarch64, Swift standard library linked in statically) and
# OUTDIR/scangate_<version>+<suite>_arm64.deb. Run as root. Roots, downloads and the build's
# scratch folder are kept under SCANGATE_ARM64_CACHE (default /var/cache/scangate-arm64) and
# reused: a second run rebuilds only what changed.
# Usage: deploy/arm64/build.sh OUTDIR
# Environment: SCANGATE_ARM64_CACHE, SCANGATE_ARM64_SUITE (trixie), SCANGATE_DEBIAN_MIRROR
# (this machine's Debian mirror), SCANGATE_ARM64_JOBS (2), SCANGATE_ARM64_NO_DEB=1 (binary only),
# SCANGATE_ARM64_TESTS=1 (also the debug test bundle: deploy/arm64/test.sh runs it),
# SCANGATE_ARM64_TESTS=only (the test bundle alone; OUTDIR/scangate is then the debug binary),
# SCANGATE_ARM64_EXTRACT=1 (the arm64 root's packages extracted by mmdebstrap, nothing configured
# and nothing run under qemu: seconds instead of minutes; enough for a sysroot, the tests and
# smoke.sh, not for the .deb, so it implies SCANGATE_ARM64_NO_DEB=1).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "arm64: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CACHE=${SCANGATE_ARM64_CACHE:-/var/cache/scangate-arm64}
SUITE=${SCANGATE_ARM64_SUITE:-trixie}
JOBS=${SCANGATE_ARM64_JOBS:-2}
# The mirror this machine's apt uses (deb.debian.org unless sources say otherwise).
default_mirror() {
  local m
  m=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=${SCANGATE_DEBIAN_MIRROR:-$(default_mirror)}
HOSTROOT=$CACHE/sid-amd64       # Debian unstable, amd64: Debian's swiftlang runs here
TRIPLE=aarch64-unknown-linux-gnu
TESTS=${SCANGATE_ARM64_TESTS:-0}
NO_DEB=${SCANGATE_ARM64_NO_DEB:-0}
[ "${SCANGATE_ARM64_EXTRACT:-0}" = 1 ] && NO_DEB=1
[ "$TESTS" = only ] && NO_DEB=1

log() { echo "arm64: $*" >&2; }
T0=$SECONDS
step() { log "[$((SECONDS - T0)) s] $*"; }

. "$REPO/deploy/arm64/mounts.sh" # also ROOT (the arm64 root: the sysroot, where the .deb is made) and WORK
in_root() { # ROOT COMMAND...: a clean environment inside a root
  local r=$1
  shift
  chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}
# apt in the roots: no recommends; the mirror's unstable Release file may be past its
# Valid-Until date (a frozen mirror), which apt would otherwise refuse.
# Removes a half-made root, never through a mount left inside it (a host /dev bound by an
# interrupted smoke.sh, say).
remove_root() {
  if awk -v d="$1/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    echo "arm64: something is mounted under $1; unmount it first" >&2
    exit 1
  fi
  rm -rf "$1"
}
apt_settings() {
  printf 'APT::Install-Recommends "false";\nAcquire::Check-Valid-Until "false";\n' >"$1/etc/apt/apt.conf.d/90scangate"
}

# --- This machine: debootstrap, and qemu-user registered with binfmt_misc for aarch64 ---------
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
[ -x /usr/bin/qemu-aarch64-static ] || missing+=(qemu-user-static)
command -v update-binfmts >/dev/null || missing+=(binfmt-support)
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]} on this machine"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
if ! grep -qs enabled /proc/sys/fs/binfmt_misc/qemu-aarch64; then
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
if ! grep -qs enabled /proc/sys/fs/binfmt_misc/qemu-aarch64; then
  echo "arm64: no binfmt_misc entry for aarch64: debootstrap and package.sh run arm64 programs in the arm64 root;" >&2
  echo "  mount binfmt_misc (mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc) and run update-binfmts --enable qemu-aarch64" >&2
  exit 1
fi
mkdir -p "$CACHE"

# --- The compiler: Debian unstable's swiftlang in an amd64 root --------------------------------
if [ ! -e "$HOSTROOT/.scangate-debootstrap" ]; then
  step "debootstrap sid amd64 (for Debian's swiftlang) from $MIRROR"
  remove_root "$HOSTROOT"
  debootstrap --variant=minbase sid "$HOSTROOT" "$MIRROR" >"$CACHE/debootstrap-sid-amd64.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap-sid-amd64.log" >&2; exit 1; }
  touch "$HOSTROOT/.scangate-debootstrap"
fi
apt_settings "$HOSTROOT"
mnt -t proc proc "$HOSTROOT/proc" # swift's tools find their libraries through /proc/self/exe
if [ ! -x "$HOSTROOT/usr/libexec/swift/bin/swift-frontend" ] || ! in_root "$HOSTROOT" dpkg --print-foreign-architectures | grep -qx arm64; then
  step "installing swiftlang in the sid root"
  in_root "$HOSTROOT" dpkg --add-architecture arm64
  in_root "$HOSTROOT" apt-get update -q >/dev/null
  in_root "$HOSTROOT" apt-get install -y -q swiftlang libc6-dev >"$CACHE/sid-swiftlang.log" 2>&1 ||
    { tail -20 "$CACHE/sid-swiftlang.log" >&2; exit 1; }
fi
SWIFT_DEB=$(dpkg-query --admindir="$HOSTROOT/var/lib/dpkg" -W -f='${Version}' swiftlang)
step "compiler: $(in_root "$HOSTROOT" swift --version 2>/dev/null | head -1) (swiftlang $SWIFT_DEB, Debian sid)"

# --- The sysroot: a Debian arm64 root with ScanGate's -dev packages ----------------------------
# The C libraries are deploy/setup.sh's -dev packages; g++ brings the C++ library's headers, the
# C runtime's start files and binutils (package.sh strips the binary).
mapfile -t DEV < <(sed -n 's/^  \([a-z0-9.+-]*-dev\)\([[:space:]].*\)\{0,1\}$/\1/p' "$REPO/deploy/setup.sh")
PACKAGES=(libc6-dev g++ "${DEV[@]}")
if [ "${SCANGATE_ARM64_EXTRACT:-0}" = 1 ]; then
  # The packages and their dependencies unpacked by the host's apt and dpkg-deb: no maintainer
  # script runs, which neither a sysroot nor a test binary needs (coreutils: chroot's env).
  if [ "$(cat "$ROOT/.scangate-packages" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
    step "mmdebstrap --variant=extract $SUITE arm64 (${#PACKAGES[@]} packages, no qemu) from $MIRROR"
    remove_root "$ROOT"
    mmdebstrap --mode=root --variant=extract --architectures=arm64 \
      --include="$(IFS=,; echo "coreutils,${PACKAGES[*]}")" "$SUITE" "$ROOT" "$MIRROR" >"$CACHE/mmdebstrap-$SUITE-arm64.log" 2>&1 ||
      { tail -20 "$CACHE/mmdebstrap-$SUITE-arm64.log" >&2; exit 1; }
    echo "${PACKAGES[*]}" >"$ROOT/.scangate-packages"
  fi
  # Merged /usr, which trixie's base-files would have made (the linker scripts and the program
  # interpreter name /lib/aarch64-linux-gnu/...).
  for d in bin sbin lib; do [ -e "$ROOT/$d" ] || ln -s "usr/$d" "$ROOT/$d"; done
  mkdir -p "$ROOT/proc" "$ROOT/root" "$ROOT/tmp"
  touch "$ROOT/.scangate-debootstrap"
fi
if [ ! -e "$ROOT/.scangate-debootstrap" ]; then
  step "debootstrap $SUITE arm64 (under qemu-user) from $MIRROR"
  remove_root "$ROOT"
  debootstrap --arch=arm64 --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$CACHE/debootstrap-$SUITE-arm64.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap-$SUITE-arm64.log" >&2; exit 1; }
  touch "$ROOT/.scangate-debootstrap"
fi
[ ! -d "$ROOT/etc/apt/apt.conf.d" ] || apt_settings "$ROOT"
root_proc() { mountpoint -q "$ROOT/proc" || mnt -t proc proc "$ROOT/proc"; }
if [ "$(cat "$ROOT/.scangate-packages" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
  step "installing ${#PACKAGES[@]} packages in the $SUITE arm64 root (dpkg under qemu-user)"
  root_proc
  in_root "$ROOT" apt-get update -q >/dev/null
  in_root "$ROOT" apt-get install -y -q "${PACKAGES[@]}" >"$CACHE/$SUITE-arm64-packages.log" 2>&1 ||
    { tail -20 "$CACHE/$SUITE-arm64-packages.log" >&2; exit 1; }
  echo "${PACKAGES[*]}" >"$ROOT/.scangate-packages"
fi
# The aarch64 Swift runtime, standard library and clang headers: the SAME swiftlang version as
# the compiler (a module is read only by the compiler that wrote it), from Debian's arm64 .debs.
if [ "$(cat "$ROOT/usr/libexec/swift/.scangate-version" 2>/dev/null)" != "$SWIFT_DEB" ]; then
  step "the aarch64 Swift runtime from swiftlang:arm64 $SWIFT_DEB"
  mkdir -p "$CACHE/debs" "$HOSTROOT/tmp/arm64-debs"
  chmod 0777 "$HOSTROOT/tmp/arm64-debs" # apt downloads as _apt
  in_root "$HOSTROOT" apt-get update -q >/dev/null
  in_root "$HOSTROOT" sh -c "cd /tmp/arm64-debs && apt-get download -q swiftlang:arm64=$SWIFT_DEB libswiftlang:arm64=$SWIFT_DEB" >/dev/null
  mv "$HOSTROOT"/tmp/arm64-debs/*.deb "$CACHE/debs/"
  rm -rf "$ROOT/usr/libexec/swift"
  dpkg-deb --fsys-tarfile "$CACHE/debs/swiftlang_${SWIFT_DEB/:/%3a}_arm64.deb" |
    tar -x -C "$ROOT" ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang
  dpkg-deb -x "$CACHE/debs/libswiftlang_${SWIFT_DEB/:/%3a}_arm64.deb" "$ROOT"
  # Where the driver looks in an SDK when it links (swiftrt.o, static-stdlib-args.lnk).
  ln -sfn ../libexec/swift/lib/swift "$ROOT/usr/lib/swift"
  ln -sfn ../libexec/swift/lib/swift_static "$ROOT/usr/lib/swift_static"
  echo "$SWIFT_DEB" >"$ROOT/usr/libexec/swift/.scangate-version"
fi

# --- The build --------------------------------------------------------------------------------
# Package.swift names some headers by absolute path (-I/usr/include/ZXing, …), which clang does
# not look up in the sysroot: in the compiler's root they point into it.
for dir in $(grep -oE -- '-I/usr/include/[A-Za-z0-9._+-]+' "$REPO/Package.swift" | sed 's/^-I//' | sort -u); do
  if [ ! -e "$HOSTROOT$dir" ] || [ -L "$HOSTROOT$dir" ]; then ln -sfn "/sysroot$dir" "$HOSTROOT$dir"; fi
done
# The working tree as it is (tracked and untracked, not ignored), times kept: SwiftPM rebuilds
# only what changed since the last run.
rm -rf "$WORK/src"
mkdir -p "$WORK/src" "$WORK/scratch" "$HOSTROOT/work" "$HOSTROOT/sysroot"
git -C "$REPO" ls-files -z --cached --others --exclude-standard |
  (cd "$REPO" && tar --null --ignore-failed-read -T - -cf -) 2>/dev/null | tar -x -C "$WORK/src"
mnt --bind "$WORK" "$HOSTROOT/work"
mnt --bind "$ROOT" "$HOSTROOT/sysroot"
mount -o remount,bind,ro "$HOSTROOT/sysroot"
if [ "$TESTS" != only ]; then
  step "swift build for $TRIPLE (release, static Swift standard library, -j $JOBS)"
  B0=$SECONDS
  in_root "$HOSTROOT" sh -c "cd /work/src && swift build -c release --static-swift-stdlib --product scangate \
    --triple $TRIPLE --sdk /sysroot -Xswiftc -sdk -Xswiftc /sysroot \
    -Xswiftc -resource-dir -Xswiftc /sysroot/usr/libexec/swift/lib/swift_static -Xswiftc -use-ld=lld \
    --scratch-path /work/scratch -j $JOBS" >"$WORK/build.log" 2>&1 || {
    grep -E 'error|Fatal' "$WORK/build.log" | head -40 >&2
    echo "arm64: swift build failed; the whole log: $WORK/build.log" >&2
    exit 1
  }
  step "built in $((SECONDS - B0)) s"
  BIN=$WORK/scratch/$TRIPLE/release/scangate
fi
if [ "$TESTS" != 0 ]; then
  # The test bundle (debug, the Swift runtime, XCTest and Testing linked dynamically from the
  # arm64 swiftlang in the sysroot) and the debug scangate beside it, as `swift test` has them.
  # Debian's swiftlang 6.2.3 ships the module of Testing's Foundation overlay but not its
  # library, which the test runner (XCTest imports Foundation) asks the linker for: an empty
  # archive stands in (no test uses the overlay, so nothing is taken from it).
  mkdir -p "$WORK/stubs"
  rm -f "$WORK/stubs/lib_Testing_Foundation.a"
  ar rc "$WORK/stubs/lib_Testing_Foundation.a"
  step "swift build --build-tests for $TRIPLE (debug)"
  B0=$SECONDS
  in_root "$HOSTROOT" sh -c "cd /work/src && swift build --build-tests \
    --triple $TRIPLE --sdk /sysroot -Xswiftc -sdk -Xswiftc /sysroot \
    -Xswiftc -resource-dir -Xswiftc /sysroot/usr/libexec/swift/lib/swift -Xswiftc -use-ld=lld -Xswiftc -L/work/stubs \
    --scratch-path /work/scratch -j $JOBS" >"$WORK/build-tests.log" 2>&1 || {
    grep -E 'error|Fatal' "$WORK/build-tests.log" | head -40 >&2
    echo "arm64: swift build --build-tests failed; the whole log: $WORK/build-tests.log" >&2
    exit 1
  }
  step "tests built in $((SECONDS - B0)) s: $WORK/scratch/$TRIPLE/debug/ScanGatePackageTests.xctest"
  [ "$TESTS" != only ] || BIN=$WORK/scratch/$TRIPLE/debug/scangate
fi
install -m 0755 "$BIN" "$OUT/scangate"
file "$OUT/scangate" | grep -q 'ARM aarch64' || { file "$OUT/scangate" >&2; exit 1; }
log "$(file -b "$OUT/scangate" | cut -d, -f1-2)"

# --- The .deb: deploy/package.sh inside the arm64 root, on the binary built above ---------------
if [ "$NO_DEB" != 1 ]; then
  step "packaging in the $SUITE arm64 root (deploy/package.sh under qemu-user)"
  mkdir -p "$ROOT/mnt/scangate"
  root_proc
  mnt --bind "$WORK" "$ROOT/mnt/scangate"
  rm -rf "$WORK/src/dist"
  deb=$(in_root "$ROOT" env SCANGATE_PREBUILT="/mnt/scangate/scratch/$TRIPLE/release/scangate" \
    bash /mnt/scangate/src/deploy/package.sh)
  cp "$WORK/src/$deb" "$OUT/"
  log "$OUT/$(basename "$deb"): $(dpkg-deb -f "$OUT/$(basename "$deb")" Architecture Depends | paste -sd' ')"
fi
step "done: $OUT"
