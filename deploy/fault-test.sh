#!/bin/bash
# The fault stage (issue 27): the real binary under disk, file, clock and process faults, each
# script in deploy/faults/ run with the peers' venv python (paho-mqtt is the fleet consumer).
# Each ends with `log verify` and a consumer that has seen every record as the log has it, or a
# loud, recorded reason why not. Prints PASS/FAIL lines. Needs root (a tmpfs for disk full).
# Usage: deploy/fault-test.sh SCANGATE
set -uo pipefail
BIN=$(readlink -f "${1:?usage: fault-test.sh SCANGATE}")
cd "$(dirname "$0")"
PY=/var/cache/scangate-peers/venv/bin/python
[ -x "$PY" ] || ./peers.sh >/dev/null || { echo "FAIL the peers' venv (deploy/peers.sh) is not there"; exit 1; }
for t in mosquitto qrencode cc; do command -v $t >/dev/null || { echo "FAIL $t is not installed"; exit 1; }; done
W=$(mktemp -d /tmp/scangate-faults.XXXXXX)
trap 'grep -o " $W/[^ ]*" /proc/mounts | xargs -r -n1 umount -l; rm -rf "$W"' EXIT
rc=0
for script in faults/*.py; do
  name=$(basename "$script" .py)
  [ "$name" = common ] && continue
  t0=$SECONDS
  echo "-- $name"
  out=$(timeout 300 "$PY" "$script" "$BIN" "$W/$name" 2>&1); code=$?
  echo "$out"
  if [ $code != 0 ]; then
    rc=1
    # A script that stopped without saying what failed (a trace, a timeout) still counts as a failure.
    grep -q '^FAIL' <<<"$out" || echo "FAIL $name: the script exited with $code without a FAIL line (above)"
  fi
  echo "-- $name: $((SECONDS - t0)) s"
done
exit $rc
