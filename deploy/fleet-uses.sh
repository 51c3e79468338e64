#!/bin/bash
# Visitors across a site on a real broker (docs/credentials.md "Visitors across a site"): its own
# mosquitto on loopback (ACL: the site's uses topic and each reader's own topics), two real
# `scangate run` door readers (replayed QR frames, gpio.backend = "sim") that share a site key with
# credentials.uses_scope = "site". A guest pass issued with --uses 2 opens twice at door-north and
# then never at door-south; a use signed by an implementation we did not write (Python's hashlib)
# counts, a forged one does not; then the broker stopped: uses_offline = "deny" refuses
# (denied-offline), "allow" grants on the reader's own records and logs it. Run by
# deploy/fleet-test.sh (the fleet stage); no root needed.
# Prints PASS/FAIL lines and "fleet-uses: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/fleet-uses.sh [path/to/scangate]   (default: .build/debug/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
PEER=$(realpath deploy/site-passage-peer.py)
pass=0; fail=0
ok() { echo "PASS fleet-uses: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL fleet-uses: $*"; fail=$((fail + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
finish() { echo "fleet-uses: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
for t in mosquitto mosquitto_sub mosquitto_pub qrencode; do command -v $t >/dev/null || die "$t is not installed"; done

. deploy/site-broker.sh
site_folder uses

# ---------------------------------------------------------------- the broker (loopback, a free port) and the site key
site_broker uses || die "mosquitto did not start: $(tail -3 "$D/mosquitto.err")"

# ---------------------------------------------------------------- the site: issuer, site key, passes
"$BIN" credential keygen --issuer "$D/issuer.key" --kid site-hq > "$D/trust.toml" 2> "$D/keygen.err" || die "keygen: $(cat "$D/keygen.err")"
issue() {  # id-hex name uses -> the pass's text
  "$BIN" credential issue --key "$D/issuer.key" --kid site-hq --guest "$2" --uses "$3" --valid 1d --id "$1" 2>> "$D/issue.err"
}
mkdir -p "$D/frames-north" "$D/frames-south" "$D/north" "$D/south"
EVE=$(issue 6501a2 Eve 2)
qrencode -s 6 -m 4 -o "$D/frames-north/eve.png" "$EVE" || die "issue/qrencode: $(cat "$D/issue.err")"
config() {  # reader offline-rule
  cat > "$D/$1/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames-$1"
replay_fps = 20
[presence]
repeat_ms = 300
[gpio]
backend = "sim"
relay_pulse_ms = 50
[credentials]
trust_file = "$D/trust.toml"
uses_scope = "site"
uses_offline = "$2"
[log]
path = "$D/$1/audit.db"
commit_interval_ms = 100
[console]
listen = []
[fleet]
brokers = ["mqtt://127.0.0.1:$PORT"]
reader_id = "door-$1"
site_key_file = "$D/site.key"
keepalive_s = 5
max_offline_s = 3600
EOF
}
start() { reader_start "$D/$1/journal" "$D/$1/config.toml"; }  # reader: sets PID
verdicts() {  # journal label -> the verdicts of its decisions, in order, repeats folded
  grep -oE "decision [a-z-]+ .*label=$2" "$1" | awk '{print $2}' | uniq | tr '\n' ' '
}

config north deny; config south deny
# Site-wide counting without the site key: check-config says what is missing.
sed '/^site_key_file/d' "$D/north/config.toml" > "$D/nokey.toml"
"$BIN" check-config --config "$D/nokey.toml" > "$D/nokey.out" 2>&1
grep -q 'credentials.uses_scope.*"site" needs the site key (fleet.site_key_file)' "$D/nokey.out"
check $? "uses_scope = \"site\" without a site key: check-config refuses it ($(grep -m1 -o 'needs the site key[^;]*' "$D/nokey.out"))"

# ---------------------------------------------------------------- two uses in all, across two readers
# The replay source reads its folder when it opens: door-south is restarted to show it new codes.
shows() {  # codes... : door-south's camera shows exactly these (frames made above)
  rm -f "$D/frames-south"/*.png
  for c in "$@"; do cp "$D/codes/$c.png" "$D/frames-south/"; done
}
mkdir -p "$D/codes"
cp "$D/frames-north/eve.png" "$D/codes/"
qrencode -s 6 -m 4 -o "$D/codes/blank.png" "NOT-A-PASS" || die "qrencode"
qrencode -s 6 -m 4 -o "$D/codes/fay.png" "$(issue 6601b3 Fay 1)" || die "issue"
qrencode -s 6 -m 4 -o "$D/codes/gus.png" "$(issue 6701c4 Gus 3)" || die "issue"
shows blank
start south; SOUTH=$PID
waitfor "$D/mosquitto.log" "as door-south " 10; check $? "door-south connected to the broker"
mosquitto_sub -h 127.0.0.1 -p "$PORT" -t scangate/site/uses -C 1 -W 30 > "$D/captured" 2>&1 &
LISTENER=$!
sleep 0.3
start north; NORTH=$PID
waitfor "$D/north/journal" "decision denied-used .*label=Eve" 20
seen=$(verdicts "$D/north/journal" Eve)
[ "$(grep -c "decision granted .*label=Eve" "$D/north/journal")" = 2 ] && [ "$seen" = "granted denied-used " ]
check $? "door-north: Eve's pass (--uses 2) opens twice, then denied-used ($seen)"
wait $LISTENER 2>/dev/null; LISTENER=""
python3 "$PEER" verify-use "$D/site.key" "$D/captured" 6501a2 > "$D/peer.out"
while read -r r rest; do [ "$r" = PASS ] && ok "$rest" || bad "$rest"; done < <(grep -E '^(PASS|FAIL)' "$D/peer.out")
grep -q '^PASS' "$D/peer.out" || bad "the peer checked nothing: $(head -3 "$D/peer.out")"
kill -TERM $NORTH; wait $NORTH 2>/dev/null; NORTH=""
# A use signed by the Python peer (a third reader of the site) counts; a forged one does not.
mosquitto_pub -h 127.0.0.1 -p "$PORT" -t scangate/site/uses -q 1 -m "$(python3 "$PEER" use "$D/site.key" 6601b3 "$(date +%s)" door-py)"
forged=$(python3 "$PEER" use "$D/site.key" 6601b3 "$(date +%s)" door-ghost | sed 's/[0-9a-f]\{8\}$/deadbeef/')
mosquitto_pub -h 127.0.0.1 -p "$PORT" -t scangate/site/uses -q 1 -m "$forged"
waitfor "$D/south/journal" "site use refused: the MAC does not verify" 10
check $? "a use with a forged MAC is refused and said ($(grep -m1 -o 'site use refused: [^(]*' "$D/south/journal"))"
sleep 1
kill -TERM $SOUTH; wait $SOUTH 2>/dev/null; SOUTH=""
shows eve fay
start south; SOUTH=$PID
waitfor "$D/south/journal" "decision [a-z-]+ .*label=Fay" 20
seen=$(verdicts "$D/south/journal" Eve)
[ "${seen%% *}" = denied-used ] && ! grep -q "decision granted .*label=Eve" "$D/south/journal"
check $? "door-south: the pass used twice at door-north is refused from its first sight (${seen:-nothing decided})"
seen=$(verdicts "$D/south/journal" Fay)
[ "${seen%% *}" = denied-used ] && ! grep -q "decision granted .*label=Fay" "$D/south/journal"
check $? "door-south: Fay's single use, spent at a reader the Python peer played, is refused (${seen:-nothing decided})"
kill -TERM $SOUTH; wait $SOUTH 2>/dev/null; SOUTH=""

# ---------------------------------------------------------------- the broker down: uses_offline deny, then allow
kill -9 $BROKER; wait $BROKER 2>/dev/null; BROKER=""
mark=$(wc -l < "$D/south/journal")
after() { tail -n +"$((mark + 1))" "$1"; }
shows gus eve
start south; SOUTH=$PID
waitfor "$D/south/journal" "decision denied-offline .*label=Gus" 20
sleep 2
after "$D/south/journal" > "$D/offline-deny"
denied=$(grep -c "decision denied-offline .*label=Gus" "$D/offline-deny")
[ "$denied" -gt 0 ] && ! grep -q "decision granted .*label=Gus" "$D/offline-deny"
check $? "broker down, uses_offline = deny: a counted pass is refused denied-offline ($denied), none granted"
kill -TERM $SOUTH; wait $SOUTH 2>/dev/null; SOUTH=""
config south allow
mark=$(wc -l < "$D/south/journal")
start south; SOUTH=$PID
waitfor "$D/south/journal" "decision denied-used .*label=Gus" 20
after "$D/south/journal" > "$D/offline-allow"
granted=$(grep -c "decision granted .*label=Gus" "$D/offline-allow")
logged=$(grep -c "fleet link down: a counted pass admitted on this reader's records alone" "$D/offline-allow")
[ "$granted" = 3 ] && [ "$logged" = 3 ]
check $? "broker down, uses_offline = allow: Gus's 3 uses granted on door-south's own records, each logged ($granted granted, $logged logged)"
eve=$(verdicts "$D/offline-allow" Eve)
[ "${eve%% *}" = denied-used ] && ! grep -q "decision granted .*label=Eve" "$D/offline-allow"
check $? "after restarts, offline: the uses learned from door-north are kept durably (Eve: ${eve:-nothing decided})"
kill -TERM $SOUTH; wait $SOUTH 2>/dev/null; SOUTH=""
# What a site admin asks at the reader: how often has Eve's pass been used (at the site)?
"$BIN" credential show --config "$D/south/config.toml" "$EVE" > "$D/show.out" 2>&1
grep -q "^used     2 time(s)" "$D/show.out" && grep -q "denied-used" "$D/show.out"
check $? "credential show at door-south counts the site's uses: $(grep -m1 '^used' "$D/show.out" || tail -1 "$D/show.out")"
finish
