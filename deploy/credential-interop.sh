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
