#!/bin/bash
# ScanGate's test suite: everything CI runs, in order. Needs deploy/setup.sh first.
#   0. swift-format lint (the tree as .swift-format writes it); README's figures against bench/RESULTS.md
#      and its links (deploy/readme-check.py)
#   1. swift test: unit, adapter, console, corpus (when ../shared/corpus exists) and allocation tests
#   1a. deploy/console-tools.sh: picocom and screen (under tmux) on the serial console through a socat
#      pty pair; deploy/console-abuse.sh: 64 abusive TCP clients against the real service (audit log,
#      secret, lockouts, frame rate)
#   1c. deploy/credential-interop.sh: signed passes against pycose + cbor2, pyotp and PyNaCl (PyPI peers' venv)
#   1d. deploy/fault-test.sh: the real binary under faults (deploy/faults/*.py): disk full, the log
#      directory deleted, a damaged page, a torn WAL, the clock ±1 year, FIFOs and directories at
#      configured paths, hostile frames; each ends with `log verify` and a fleet consumer's view
#   2. fuzz/run: the parsers under libFuzzer for a fixed budget (FUZZ_SECONDS, default 20 each)
#   3. deploy/hil/run.sh: the real binary on real drivers (vivid, gpio-sim, a UART) in a qemu guest,
#      once on the bookworm userland and once on trixie's (libgpiod v2), with the allocation proof;
#      fails loudly where qemu cannot run, never passes silently
#   4. deploy/package-test.sh: the .deb built, installed into a clean Debian 12 root, run there
#   5. deploy/trixie/run.sh: the whole build and test suite again against Debian 13's libraries
#      (zxing-cpp 2.3, libgpiod 2.2) in a debootstrap'd chroot (cached in /var/cache/scangate-trixie),
#      and the trixie .deb
#   5a. deploy/arm64/ci.sh: the arm64 cross build (Debian's swiftlang, a trixie arm64 sysroot), a
#      chosen set of the tests and `scangate demo` as arm64 programs under qemu-user
#   6. bench/run --smoke: the benchmark harness against the peers (its scorer's self-test, the QR
#      sets, a short soak); bench/run --short and --long make the figures (bench/RESULTS.md)
# Ends with one line "suite: N passed, M failed" counting tests and stages.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH

passed=0; failed=0
SUITE_START=$SECONDS
stage() {  # name, command...; prints each stage's wall time, so the suite's budget can be kept
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name"
  if "$@"; then echo "== $name: ok ($((SECONDS - t0)) s)"; return 0; fi
  echo "== $name: FAILED ($((SECONDS - t0)) s)"; return 1
}

# Runs a stage whose output is a Swift test run; adds its test (or issue) count.
swift_stage() {  # name command
  local log; log=$(mktemp)
  if stage "$1" bash -c "$2 2>&1 | tee '$log'; exit \${PIPESTATUS[0]}"; then
    n=$(grep -oE 'Test run with [0-9]+ tests' "$log" | tail -1 | grep -oE '[0-9]+')
    passed=$((passed + ${n:-0}))
  else
    n=$(grep -oE 'with [0-9]+ issues?' "$log" | tail -1 | grep -oE '[0-9]+')
    failed=$((failed + ${n:-1}))
  fi
  rm -f "$log"
}
# Runs a stage that prints PASS/FAIL lines; adds them up.
check_stage() {  # name command
  local log; log=$(mktemp)
  local ok=1
  stage "$1" bash -c "$2 2>&1 | tee '$log'; exit \${PIPESTATUS[0]}" || ok=0
  passed=$((passed + $(grep -c '^PASS' "$log")))
  local fails; fails=$(grep -c '^FAIL' "$log")
  # A stage that failed without saying what failed still counts as a failure.
  [ $ok = 0 ] && [ "$fails" = 0 ] && fails=1
  failed=$((failed + fails))
  rm -f "$log"
}

# Formatting: the tree as swift-format (in the toolchain) writes it with .swift-format.
if stage "swift-format lint" swift format lint --strict --configuration .swift-format -r Sources Tests fuzz Package.swift; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

# README: every "At a glance" figure is in bench/RESULTS.md where the row says; every link resolves.
if stage "README figures and links" python3 deploy/readme-check.py; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

swift_stage "swift test" "swift build --build-tests && swift test --skip-build"

check_stage "deterministic simulation (seeds, replay, mutations)" "deploy/sim-test.sh .build/debug/scangate-sim"
check_stage "console with picocom and screen (serial, pty pair)" "deploy/console-tools.sh .build/debug/scangate"
check_stage "console abuse (64 clients, audit log, lockouts, frame rate)" "deploy/console-abuse.sh .build/debug/scangate"
check_stage "web admin page in Debian's chromium (selenium, TLS, roles, CSRF)" "deploy/admin-test.sh .build/debug/scangate"
check_stage "fleet link on a real broker (TLS, ACLs, broker kill, link cut, kill -9, Home Assistant)" "deploy/fleet-test.sh .build/debug/scangate"

check_stage "signed passes against pycose, cbor2, pyotp and PyNaCl" "deploy/credential-interop.sh .build/debug/scangate"
check_stage "faults (disk full, deleted and damaged files, clock jumps, odd file types, hostile frames)" "deploy/fault-test.sh .build/debug/scangate"

if stage "fuzz" fuzz/run "${FUZZ_SECONDS:-20}"; then passed=$((passed + 2)); else failed=$((failed + 1)); fi

check_stage "OSDP panel (libosdp control panel, pty pair)" "deploy/panel-test.sh .build/debug/scangate"
check_stage "hardware in the loop (qemu guest)" "deploy/hil/run.sh .build/debug/scangate"

check_stage "Debian package (installed into a clean Debian 12 root)" "deploy/package-test.sh"

swift_stage "Debian 13 (trixie) chroot" "deploy/trixie/run.sh"

# The trixie package: built there, with trixie's library versions as its dependencies.
if stage "Debian 13 (trixie) package" bash -c "deploy/trixie/run.sh --run 'deploy/package.sh /root/scangate-build' | tail -3 && dpkg-deb -f dist/scangate_*+trixie_*.deb Depends | grep -q libgpiod3"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

# arm64: the cross build with Debian's swiftlang, a chosen set of tests and the demo as arm64
# programs under qemu-user (the whole arm64 run and the .deb: deploy/arm64/build.sh, test.sh).
check_stage "arm64 (cross build, tests and demo under qemu-user)" "deploy/arm64/ci.sh"

# The benchmarks' smoke mode: the harness and its scorer work against every peer; figures, and the
# release build's allocation tests, come from bench/run --short and --long (minutes each).
if stage "benchmarks (bench/run --smoke)" bench/run --smoke; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

echo "suite: $passed passed, $failed failed in $((SECONDS - SUITE_START)) s"
[ $failed = 0 ]
