#!/bin/bash
# ScanGate's test suite: everything CI runs, in order. Needs deploy/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH

# Unit, adapter, corpus (when ../shared/corpus exists) and allocation tests.
swift build --build-tests
swift test --skip-build
