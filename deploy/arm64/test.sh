#!/bin/bash
# Runs ScanGate's own tests as arm64 programs under qemu-user (binfmt_misc), inside the arm64
# Debian root deploy/arm64/build.sh made (the libraries a Pi OS trixie has): the debug test
# bundle that `SCANGATE_ARM64_TESTS=1 deploy/arm64/build.sh` leaves in its scratch folder, with the
# debug `scangate` beside it, as `swift test` runs them. The chosen set (ARM64_SUITES below) is
# every domain's pure core, the checks of what differs on ARM, and the adapters whose C libraries
# matter most on a Pi (zxing-cpp, libsodium, libcbor and nettle, SQLite, libgpiod's simulator-free
# parts, the allocation counter on the hot path). Left out, with why: suites that start decoder
# workers (qemu-user refuses seccomp filters: docs/arm64.md), that drive peers this root does not
# have (openssl, python, qrencode, socat), or that time real threads (qemu is ~10x slower).
# Prints the Swift Testing summary and `arm64 tests: N passed, M failed (T s)`; the log is
# OUTDIR/tests.log. Usage: deploy/arm64/test.sh OUTDIR [REGEX]   (as root; REGEX replaces the set)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [REGEX]" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CACHE=${SCANGATE_ARM64_CACHE:-/var/cache/scangate-arm64}
SUITE=${SCANGATE_ARM64_SUITE:-trixie}
. "$REPO/deploy/arm64/mounts.sh" # ROOT, WORK, mnt
TRIPLE=aarch64-unknown-linux-gnu
BUNDLE=/work/scratch/$TRIPLE/debug/ScanGatePackageTests.xctest
[ -x "$WORK/scratch/$TRIPLE/debug/ScanGatePackageTests.xctest" ] ||
  { echo "arm64 tests: no test bundle (SCANGATE_ARM64_TESTS=1 deploy/arm64/build.sh OUTDIR first)" >&2; exit 2; }
grep -qs enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || { echo "arm64 tests: qemu-aarch64 is not registered with binfmt_misc" >&2; exit 2; }
file -L "$WORK/scratch/$TRIPLE/debug/ScanGatePackageTests.xctest" | grep -q 'ARM aarch64' ||
  { echo "arm64 tests: the bundle is not aarch64" >&2; exit 1; }

# Swift Testing's --filter (a regular expression over suite and test names), one alternation.
ARM64_SUITES=(
  # Every domain's pure core (ScanSim's fakes, no C).
  ScanBaseTests ScanAccessTests ScanDoorTests ScanReaderTests ScanConfigTests ScanConsoleTests
  ScanKeypadTests ScanTurnstileTests ScanEmergencyTests ScanFleetTests
  # What differs on ARM (docs/arm64.md).
  ArmAssumptionsTests SharedMemoryOrderingTests
  # C libraries on the reader's path: zxing-cpp on real photos and on every symbology, the
  # credential crypto (libsodium, libcbor, nettle), SQLite's audit log, and the allocation
  # counter on the hot path.
  CorpusTests DecodeEveryCodeTests DecoderTests CredentialTests GuestPassTests AuditLogTests
  AuditQueryTests HotPathAllocationTests
)
# Inside those: what starts decoder workers (seccomp), needs a camera stack this root lacks, or
# kills the service binary at random moments on a clock (AuditLogTests.crashes: emulated, the
# child has not made its key file when the first kill comes).
ARM64_SKIP=${SCANGATE_ARM64_SKIP:-DecoderWorker|Libcamera|AuditLogTests/crashes}
FILTER=${2:-$(IFS='|'; echo "${ARM64_SUITES[*]}")}

# The bundle's #filePath paths are the compiler root's /work/src: the same folder at the same path.
mkdir -p "$ROOT/work" "$ROOT/mnt/corpus"
mountpoint -q "$ROOT/proc" || mnt -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mnt --bind /dev "$ROOT/dev"
mnt --bind "$WORK" "$ROOT/work"
CORPUS=""
if [ -d "$REPO/../shared/corpus" ]; then
  mnt --bind "$REPO/../shared/corpus" "$ROOT/mnt/corpus"
  CORPUS=/mnt/corpus
fi

echo "arm64 tests: $(file -bL "$WORK/scratch/$TRIPLE/debug/ScanGatePackageTests.xctest" | cut -d, -f1-2), in $ROOT, qemu $(qemu-aarch64-static --version | head -1 | awk '{print $3}')"
t=$SECONDS
status=0
chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp \
  LD_LIBRARY_PATH=/usr/libexec/swift/lib/swift/linux SCANGATE_CORPUS="$CORPUS" \
  "$BUNDLE" --testing-library swift-testing --filter "$FILTER" --skip "$ARM64_SKIP" >"$OUT/tests.log" 2>&1 || status=$?
took=$((SECONDS - t))
grep -E '^✘|recorded an issue' "$OUT/tests.log" | head -40 || true
summary=$(grep -E 'Test run with [0-9]+ tests?' "$OUT/tests.log" | tail -1 || true)
echo "${summary:-no summary: $(tail -3 "$OUT/tests.log" | paste -sd' ')}"
tests=$(echo "$summary" | sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\}.*/\1/p')
failed=$(grep -c '^✘ Test .* failed' "$OUT/tests.log" || true)
echo "arm64 tests: $((${tests:-0} - failed)) passed, $failed failed ($took s, exit $status)"
[ "$status" = 0 ] && [ "${tests:-0}" -gt 0 ]
