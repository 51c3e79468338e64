#!/bin/bash
# Site-wide anti-passback on a real broker (docs/turnstiles.md "Site-wide anti-passback"): its
# own mosquitto on loopback (ACL: the site topic and each reader's own topics), two real
# `scangate run` readers (replayed QR frames, gpio.backend = "sim" with --sim-passages, the
# turnstile in hard anti-passback, passback_site = true, the same site key). A pass that entered
# at gate-north is refused entry (denied-passback) at gate-south; then the broker stopped:
# passback_offline = "deny" refuses (denied-offline), "allow" grants and logs it. Run by
# deploy/fleet-test.sh (the fleet stage); no root needed.
# Prints PASS/FAIL lines and "fleet-passback: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/fleet-passback.sh [path/to/scangate]   (default: .build/debug/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
pass=0; fail=0
ok() { echo "PASS fleet-passback: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL fleet-passback: $*"; fail=$((fail + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
finish() { echo "fleet-passback: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
for t in mosquitto qrencode; do command -v $t >/dev/null || die "$t is not installed"; done

. deploy/site-broker.sh
site_folder passback

# ---------------------------------------------------------------- the broker (loopback, a free port) and the site key
site_broker passages || die "mosquitto did not start: $(tail -3 "$D/mosquitto.err")"

# ---------------------------------------------------------------- two readers of one site
mkdir -p "$D/frames-north" "$D/frames-south" "$D/north" "$D/south"
qrencode -s 8 -m 4 -o "$D/frames-north/p1.png" "SITE-PASS-1" || die "qrencode"
cp "$D/frames-north/p1.png" "$D/frames-south/p1.png"
qrencode -s 8 -m 4 -o "$D/frames-south/p2.png" "SITE-PASS-2" || die "qrencode"
printf 'text:SITE-PASS-1 label=p1\n' > "$D/north/allow-list.txt"
printf 'text:SITE-OTHER label=other\n' > "$D/south/allow-list.txt"  # south knows neither pass yet
config() {  # reader offline-rule
  cat > "$D/$1/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames-$1"
replay_fps = 20
[presence]
repeat_ms = 300
[allow_list]
path = "$D/$1/allow-list.txt"
[gpio]
backend = "sim"
[turnstile]
enabled = true
passback = "hard"
passback_site = true
site_key_file = "$D/site.key"
passback_offline = "$2"
passage_timeout_ms = 2000
[log]
path = "$D/$1/audit.db"
commit_interval_ms = 100
[console]
listen = []
[fleet]
brokers = ["mqtt://127.0.0.1:$PORT"]
reader_id = "gate-$1"
keepalive_s = 5
max_offline_s = 2
EOF
}
start() { reader_start "$D/$1/journal" "$D/$1/config.toml" --sim-passages; }  # reader: sets PID

config north deny; config south deny
# A site key others can read: the reader refuses to start, and says why.
cp "$D/site.key" "$D/open.key"; chmod 644 "$D/open.key"
sed "s|$D/site.key|$D/open.key|" "$D/north/config.toml" > "$D/open.toml"
timeout 20 "$BIN" run --config "$D/open.toml" > "$D/open.out" 2>&1
status=$?
[ $status != 0 ] && [ $status != 124 ] && grep -q "passback_site = true, and the site key cannot be read: .*open.key: is readable by group or others" "$D/open.out"
check $? "passback_site with a site key mode 0644: refused at startup (exit $status: $(grep -m1 -o 'site key cannot be read.*' "$D/open.out"))"
start south; SOUTH=$PID
waitfor "$D/mosquitto.log" "as gate-south " 10; check $? "gate-south connected to the broker"
sleep 0.5
# A listener on the site topic (any client the broker lets read it) captures gate-north's passage.
mosquitto_sub -h 127.0.0.1 -p "$PORT" -t scangate/site/passages -C 1 -W 30 > "$D/captured" 2>&1 &
LISTENER=$!
sleep 0.3
start north; NORTH=$PID
waitfor "$D/north/journal" "passage entry.*p1" 20
check $? "gate-north: SITE-PASS-1 granted and passed ($(grep -m1 -oE 'decision granted [^ ]+' "$D/north/journal"))"
wait $LISTENER 2>/dev/null
# The key tree, checked by an implementation we did not write (Python's hashlib and hmac).
python3 deploy/site-passage-peer.py verify "$D/site.key" "$D/captured" SITE-PASS-1 | tee "$D/peer.out" | grep -E '^(PASS|FAIL)' | while read -r r rest; do
  [ "$r" = PASS ] && echo "PASS fleet-passback: $rest" || echo "FAIL fleet-passback: $rest"
done
pass=$((pass + $(grep -c '^PASS' "$D/peer.out"))); fail=$((fail + $(grep -c '^FAIL' "$D/peer.out")))
# The attack of issue 40: a passage forged under a key a listener could have learned (the identity
# of a code whose payload is the old MAC label) is refused; the pass stays "entered" at gate-south.
mosquitto_pub -h 127.0.0.1 -p "$PORT" -t scangate/site/passages -q 1 \
  -m "$(python3 deploy/site-passage-peer.py forge "$D/site.key" SITE-PASS-1 "$(date +%s)")"
waitfor "$D/south/journal" "site passage refused: the MAC does not verify" 10
check $? "a forged exit passage (MACed under a published identity) is refused by gate-south"
sleep 1
# South learns the pass now: the next decisions about it.
printf 'text:SITE-OTHER label=other\ntext:SITE-PASS-1 label=p1\n' > "$D/south/allow-list.txt.new"
mv "$D/south/allow-list.txt.new" "$D/south/allow-list.txt"
waitfor "$D/south/journal" "decision [a-z-]+ .*label=p1" 10
first=$(grep -m1 -oE "decision [a-z-]+ .*label=p1" "$D/south/journal" | awk '{print $2}')
[ "$first" = denied-passback ] && ! grep -q "decision granted .*label=p1" "$D/south/journal"
check $? "gate-south: the pass that entered at gate-north is refused entry (first decision: $first)"

# ---------------------------------------------------------------- the broker down: offline rule deny
kill -9 $BROKER; wait $BROKER 2>/dev/null; BROKER=""
waitfor "$D/south/journal" "fleet: .*(lost|cannot connect)" 10; check $? "gate-south noticed the broker gone"
mark=$(wc -l < "$D/south/journal")
printf 'text:SITE-OTHER label=other\ntext:SITE-PASS-1 label=p1\ntext:SITE-PASS-2 label=p2\n' > "$D/south/allow-list.txt.new"
mv "$D/south/allow-list.txt.new" "$D/south/allow-list.txt"
sleep 3
after() { tail -n +"$((mark + 1))" "$1"; }
denied=$(after "$D/south/journal" | grep -c "decision denied-offline .*label=p2")
[ "$denied" -gt 0 ] && [ "$(after "$D/south/journal" | grep -c "decision granted")" = 0 ]
check $? "broker down, passback_offline = deny: gate-south refuses a pass it never saw ($denied denied-offline, none granted)"
kill -TERM $SOUTH; wait $SOUTH 2>/dev/null; SOUTH=""

# ---------------------------------------------------------------- offline rule allow (broker still down)
config south allow
mark=$(wc -l < "$D/south/journal")
start south; SOUTH=$PID
sleep 3
granted=$(after "$D/south/journal" | grep -c "decision granted .*label=p2")
logged=$(after "$D/south/journal" | grep -c "fleet link down: anti-passback granted on this reader's records alone")
[ "$granted" -gt 0 ] && [ "$logged" -gt 0 ]
check $? "broker down, passback_offline = allow: gate-south grants on its own records and logs it ($granted granted, $logged logged)"
still=$(after "$D/south/journal" | grep -oE "decision [a-z-]+ .*label=p1" | awk '{print $2}' | sort -u | tr '\n' ' ')
[ "$still" = "denied-passback " ]
check $? "broker down, allow: the entry learned from gate-north is kept durably across the restart (p1: $still)"
kill -TERM $SOUTH $NORTH; wait $SOUTH $NORTH 2>/dev/null; SOUTH=""; NORTH=""
finish
