#!/bin/bash
# The deterministic simulation (docs/testing.md, "The simulator"): a fixed number of seeds, each
# replayed byte for byte, and every deliberate mutation caught by the invariant meant to catch it.
# Prints PASS/FAIL lines and "sim: N passed, M failed".
# Usage: deploy/sim-test.sh [path/to/scangate-sim] [SEEDS]   (.build/debug/scangate-sim, 100)
set -uo pipefail
cd "$(dirname "$0")/.."
SIM=$(realpath "${1:-.build/debug/scangate-sim}")
SEEDS=${2:-100}
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

# Every mutation is caught, by the invariant written for it, and its failure shrinks.
declare -A expect=(
  [relay-stuck]=relay-cap [spurious-pulse]=grant-recorded-with-edge [decoder-confusion]=no-grant-unlisted
  [revocation-not-reloaded]=no-grant-after-revocation [lockdown-not-applied]=no-grant-in-lockdown
  [restart-forgets-lockdown]=no-grant-in-lockdown [restart-forgets-revocation]=no-grant-after-revocation
  [console-lifts-any-lockdown]=lockdown-lifted-by-its-authority
  [fsync-lies]=no-grant-beyond-uses [use-store-forgets]=no-grant-beyond-uses
  [lamps-not-told-at-start]=lamps-say-lockdown [lamps-miss-lockdown]=lamps-say-lockdown
  [disk-full-ignored]=no-grant-unrecorded-use
  [fleet-acks-on-publish]=fleet-acked-was-accepted [fleet-saves-sent-mark]=fleet-acked-was-accepted
  [fleet-trusts-any-puback]=fleet-acked-was-accepted [fleet-misses-lost-connection]=fleet-catches-up
  [fleet-reads-next-record]=fleet-exactly-as-logged
)
listed=$("$SIM" --list-mutations)
[ "$(echo "$listed" | wc -l)" -ge 5 ] && [ "$(echo "$listed" | sort | xargs)" = "$(printf '%s\n' "${!expect[@]}" | sort | xargs)" ]
check $? "--list-mutations: $(echo "$listed" | wc -l) mutations, each with an expected invariant here"
# Each failure shrinks: the fewest of the seed's drawn actions found that still break the same
# invariant. The shrunk list replays (--keep) to that invariant with only its actions in the trace,
# and it is 1-minimal: without any one of its actions the run holds (each replayed here).
shrunk_total=0; drawn_total=0
for m in $listed; do
  out=$("$SIM" --mutate "$m" 2>&1); status=$?
  line=$(echo "$out" | tail -1)
  [ $status = 1 ] && echo "$line" | grep -q "caught by ${expect[$m]:-?} at seed"
  check $? "--mutate $m: $line"
  read -r kept drawn < <(echo "$out" | sed -n 's/^shrunk: \([0-9]*\) of \([0-9]*\) actions.*/\1 \2/p')
  replay=$(echo "$out" | sed -n 's/^replay the shrunk run: scangate-sim //p')
  indices=$(echo "$replay" | sed -n 's/.*--keep \([0-9,]*\).*/\1/p')
  args=$(echo "$replay" | sed 's/ --keep [0-9,]*//; s/ --trace//')
  ok=1
  if [ -n "${kept:-}" ] && [ "$kept" -le "$drawn" ] && [ -n "$indices" ]; then
    # shellcheck disable=SC2086
    r=$("$SIM" $args --keep "$indices" --trace 2>&1); rs=$?
    acted=$(echo "$r" | grep -c "^[0-9]* \(camera shows\|carol \(revoked\|restored\)\|lockdown o\|open\|wall clock\|restart$\|relay glitch\|disk \(full\|has room\)$\|broker \(up\|down\|refuses publishes\|accepts publishes\)$\|network cut$\)")
    [ $rs = 1 ] && echo "$r" | grep -q "invariant ${expect[$m]} violated" && [ "$acted" -le "$kept" ] || ok=0
    IFS=, read -ra all <<< "$indices"
    for drop in "${!all[@]}"; do
      rest=$(for i in "${!all[@]}"; do [ "$i" = "$drop" ] || printf '%s,' "${all[$i]}"; done); rest=${rest%,}
      # shellcheck disable=SC2086
      "$SIM" $args --keep "$rest" --no-shrink > /dev/null 2>&1 && continue
      "$SIM" $args --keep "$rest" --no-shrink 2>&1 | grep -q "invariant ${expect[$m]} violated" && ok=0
    done
  else ok=0; fi
  shrunk_total=$((shrunk_total + ${kept:-0})); drawn_total=$((drawn_total + ${drawn:-0}))
  [ $ok = 1 ]
  check $? "--mutate $m shrinks to ${kept:-?} of ${drawn:-?} drawn actions, replayed with --keep $indices; none of them can go"
done
# The mutations live in the simulator only: the reader's binary does not hold their names.
BIN=$(dirname "$SIM")/scangate
if [ -x "$BIN" ]; then
  ! grep -aq "revocation-not-reloaded\|restart-forgets-lockdown" "$BIN"
  check $? "scangate holds no mutation ($(basename "$BIN"): $(du -h "$BIN" | cut -f1))"
fi
echo "sim: $pass passed, $fail failed"
[ $fail = 0 ]
