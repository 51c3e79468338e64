#!/bin/bash
# CI's arm64 stage (deploy/test.sh): from this tree, with Debian's packages only,
#   1. the cross build of the debug test bundle and scangate (deploy/arm64/build.sh with Debian
#      sid's swiftlang; the trixie arm64 sysroot extracted by mmdebstrap, nothing run under qemu),
#   2. a chosen set of the tests as arm64 programs under qemu-user (deploy/arm64/test.sh with
#      CI_SET below: what differs on ARM, the cores, the C libraries on the reader's path, and the
#      allocation counter on the hot path),
#   3. `scangate --version`, `decode` and `demo` as arm64 (deploy/arm64/smoke.sh).
# The whole arm64 run (399 tests, the release binary and the .deb) is for each release:
# docs/arm64.md. Prints one PASS or FAIL line per step. Usage: deploy/arm64/ci.sh (as root)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export SCANGATE_ARM64_EXTRACT=1 SCANGATE_ARM64_TESTS=only
# test.sh's skips, and the reader's strategy schedule (pure integer code, a minute emulated).
export SCANGATE_ARM64_SKIP='DecoderWorker|Libcamera|StrategyScheduleTests'
# About two minutes under qemu on two cores (docs/arm64.md); the rest of the hot path's allocation
# suite (two cameras, the PIN, the whole run loop: four more minutes) is in the release run.
CI_SET=(
  ArmAssumptionsTests SharedMemoryOrderingTests
  ScanBaseTests ScanAccessTests ScanDoorTests ScanReaderTests ScanKeypadTests ScanTurnstileTests ScanEmergencyTests
  ScanFeedbackTests CredentialTests DecodeEveryCodeTests AllocationCounterTests FeedbackAllocationTests
  'HotPathAllocationTests\.HotPathAllocationTests/(engine|credentials|durableCredentialState|siteUses|door|turnstile|wiegandFeedback|unlockWindow)DoesNotAllocate'
)
t=$SECONDS
if "$REPO/deploy/arm64/build.sh" "$OUT" >"$OUT/build.log" 2>&1; then
  echo "PASS arm64 cross build of the tests ($((SECONDS - t)) s): $(grep -o 'compiler: .*' "$OUT/build.log")"
else
  tail -30 "$OUT/build.log"
  echo "FAIL arm64 cross build of the tests ($((SECONDS - t)) s)"
  exit 1
fi
t=$SECONDS
if "$REPO/deploy/arm64/test.sh" "$OUT" "$(IFS='|'; echo "${CI_SET[*]}")" >"$OUT/test.out" 2>&1; then
  echo "PASS $(tail -1 "$OUT/test.out")"
else
  cat "$OUT/test.out"
  echo "FAIL arm64 tests under qemu-user ($((SECONDS - t)) s)"
fi
"$REPO/deploy/arm64/smoke.sh" "$OUT" 20 | grep -E '^(PASS|FAIL)'
