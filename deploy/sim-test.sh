#!/bin/bash
# The deterministic simulation (docs/testing.md, "The simulator"): a fixed number of seeds, each
# replayed byte for byte, and every deliberate mutation caught by the invariant meant to catch it.
# Prints PASS/FAIL lines and "sim: N passed, M failed".
# Usage: deploy/sim-test.sh [path/to/scangate-sim] [SEEDS]   (.build/debug/scangate-sim, 300)
set -uo pipefail
cd "$(dirname "$0")/.."
SIM=$(realpath "${1:-.build/debug/scangate-sim}")
SEEDS=${2:-300}
pass=0; fail=0
check() { if [ "$1" = 0 ]; then echo "PASS sim: $2"; pass=$((pass + 1)); else echo "FAIL sim: $2"; fail=$((fail + 1)); fi; }
[ -x "$SIM" ] || { echo "FAIL sim: no scangate-sim at $SIM (swift build first)"; echo "sim: 0 passed, 1 failed"; exit 1; }
D=$(mktemp -d /tmp/scangate-sim.XXXXXX)
trap 'rm -rf "$D"' EXIT

t0=$SECONDS
"$SIM" --seeds "$SEEDS" > "$D/seeds.out" 2>&1
check $? "$(tail -1 "$D/seeds.out") in $((SECONDS - t0)) s"

# A seed replays exactly: the same trace, line for line, and the same digest.
"$SIM" --seed 4242 --trace > "$D/a.out" 2>&1; "$SIM" --seed 4242 --trace > "$D/b.out" 2>&1
cmp -s "$D/a.out" "$D/b.out" && [ "$(wc -l < "$D/a.out")" -gt 100 ] && grep -q '^digest [0-9a-f]\{64\}$' "$D/a.out"
check $? "seed 4242 replays byte for byte ($(wc -l < "$D/a.out") trace lines, $(tail -1 "$D/a.out" | cut -c1-23)...)"
"$SIM" --seed 4243 > "$D/c.out" 2>&1
[ "$(tail -1 "$D/c.out")" != "$(tail -1 "$D/a.out")" ]
check $? "another seed, another trace (its digest differs)"
# The digest covers the whole trace: it is SHA-256 of the trace lines, as sha256sum computes it.
grep -v '^scangate-sim\|^digest' "$D/a.out" > "$D/trace"
[ "$(sha256sum < "$D/trace" | cut -c1-64)" = "$(tail -1 "$D/a.out" | cut -c8-)" ]
check $? "the digest is SHA-256 of the trace (sha256sum agrees)"

# Every mutation is caught, by the invariant written for it.
declare -A expect=(
  [relay-stuck]=relay-cap [spurious-pulse]=grant-recorded-with-edge [decoder-confusion]=no-grant-unlisted
  [revocation-not-reloaded]=no-grant-after-revocation [lockdown-not-applied]=no-grant-in-lockdown
  [restart-forgets-lockdown]=no-grant-in-lockdown [restart-forgets-revocation]=no-grant-after-revocation
  [fsync-lies]=no-grant-beyond-uses [use-store-forgets]=no-grant-beyond-uses
  [lamps-not-told-at-start]=lamps-say-lockdown [lamps-miss-lockdown]=lamps-say-lockdown
)
listed=$("$SIM" --list-mutations)
[ "$(echo "$listed" | wc -l)" -ge 5 ] && [ "$(echo "$listed" | sort | xargs)" = "$(printf '%s\n' "${!expect[@]}" | sort | xargs)" ]
check $? "--list-mutations: $(echo "$listed" | wc -l) mutations, each with an expected invariant here"
for m in $listed; do
  out=$("$SIM" --mutate "$m" 2>&1); status=$?
  line=$(echo "$out" | tail -1)
  [ $status = 1 ] && echo "$line" | grep -q "caught by ${expect[$m]:-?} at seed"
  check $? "--mutate $m: $line"
done
# The mutations live in the simulator only: the reader's binary does not hold their names.
BIN=$(dirname "$SIM")/scangate
if [ -x "$BIN" ]; then
  ! grep -aq "revocation-not-reloaded\|restart-forgets-lockdown" "$BIN"
  check $? "scangate holds no mutation ($(basename "$BIN"): $(du -h "$BIN" | cut -f1))"
fi
echo "sim: $pass passed, $fail failed"
[ $fail = 0 ]
