#!/bin/bash
# Signed passes against independent implementations (pycose + cbor2, pyotp) from PyPI.
# Usage: deploy/credential-interop.sh SCANGATE   (prints PASS/FAIL lines)
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:-.build/debug/scangate}")
PY=$(deploy/peers.sh) || { echo "FAIL peers venv"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$PY" deploy/credential-interop.py "$B" "$W"
status=$?
# Issue 26's restart and clock holes, on the real binary (kill -9 loop, a clock set back, revocation).
mkdir -p "$W/restart"
"$PY" deploy/restart-security.py "$B" "$W/restart" || status=1
exit $status
