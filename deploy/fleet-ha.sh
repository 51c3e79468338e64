#!/bin/bash
# Home Assistant's command entities against a real broker: a Mosquitto on this host's loopback
# (a free port, password accounts, the ACL docs/fleet.md gives: only Home Assistant's user may
# publish on a reader's command topics), the real `scangate run` with a door, a PIN-less open
# guarded by a code, and the lockdown switch; paho-mqtt acting as Home Assistant and as another
# client (deploy/ha-peer.py). Prints PASS/FAIL lines and "ha-commands: N passed, M failed".
#
# Usage: deploy/fleet-ha.sh [path/to/scangate]   (default: .build/debug/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
pass=0; fail=0
ok() { echo "PASS ha-commands: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL ha-commands: $*"; fail=$((fail + 1)); }
finish() { echo "ha-commands: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
for t in mosquitto mosquitto_passwd qrencode; do command -v $t >/dev/null || die "$t is not installed"; done
PY=$(deploy/peers.sh) || die "deploy/peers.sh"

D=$(mktemp -d /tmp/scangate-ha.XXXXXX)
. deploy/site-broker.sh
BROKER=""
cleanup() {
  [ -n "$BROKER" ] && kill -9 "$BROKER" 2>/dev/null && wait "$BROKER" 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

PORT=$(free_port)
for u in door-1 homeassistant intruder; do
  head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$D/$u.pw"
  mosquitto_passwd -b $([ -e "$D/passwd" ] || echo -c) "$D/passwd" "$u" "$(cat "$D/$u.pw")" || die "mosquitto_passwd"
done
chmod 600 "$D"/*.pw
# The ACL of docs/fleet.md ("Home Assistant's commands"), for reader door-1.
cat > "$D/acl" <<EOF
user door-1
topic write scangate/door-1/events
topic write scangate/door-1/status
topic write scangate/door-1/state
topic write scangate/door-1/reply
topic write scangate/door-1/decision
topic read scangate/door-1/command
topic read scangate/door-1/bundle
topic read scangate/door-1/ha/#
topic write homeassistant/+/door-1/#
user homeassistant
topic read homeassistant/#
topic read scangate/+/status
topic read scangate/+/state
topic read scangate/+/decision
topic write scangate/+/ha/#
user intruder
topic read scangate/#
topic read homeassistant/#
EOF
broker_start "allow_anonymous false" "password_file $D/passwd" || die "mosquitto did not start: $(cat "$D/mosquitto.err" "$D/mosquitto.log" 2>/dev/null | tail -3)"

CODE=$(( $(od -An -N2 -tu2 /dev/urandom) % 9000 + 1000 ))
printf '%s\n' "$CODE" > "$D/ha-code"; chmod 600 "$D/ha-code"
mkdir -p "$D/frames"
qrencode -s 8 -m 4 -o "$D/frames/code.png" "HA-VISITOR" || die "qrencode"
echo "# scangate: empty" > "$D/allow-list.txt"
cat > "$D/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = 2
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
relay_pulse_ms = 400
[door]
enabled = true
contact_line = 5
tamper_line = 6
[decoder]
isolation = "inline"
[log]
path = "$D/audit.db"
[console]
listen = []
[fleet]
brokers = ["mqtt://127.0.0.1:$PORT"]
username = "door-1"
password_file = "$D/door-1.pw"
reader_id = "door-1"
keepalive_s = 5
home_assistant_commands = ["open", "lockdown"]
home_assistant_code_file = "$D/ha-code"
EOF
"$BIN" check-config --config "$D/config.toml" > "$D/check.out" 2>&1 && ok "check-config accepts the commands over a loopback broker" \
  || bad "check-config: $(tail -3 "$D/check.out")"
# The same commands over a broker anyone on the network may reach are refused at the start.
sed "s|mqtt://127.0.0.1:$PORT|mqtt://192.0.2.1:1883|" "$D/config.toml" > "$D/remote.toml"
"$BIN" check-config --config "$D/remote.toml" > "$D/remote.out" 2>&1
grep -q "not an authenticated broker" "$D/remote.out" && ok "commands over an unauthenticated broker are refused by check-config" \
  || bad "an unauthenticated broker was accepted: $(tail -3 "$D/remote.out")"

"$PY" deploy/ha-peer.py "$BIN" "$D/config.toml" "$D/journal" 127.0.0.1 "$PORT" "$D" "$CODE" > "$D/peer.out" 2>&1
cat "$D/peer.out"
pass=$((pass + $(grep -c '^PASS' "$D/peer.out"))); fail=$((fail + $(grep -c '^FAIL' "$D/peer.out")))
grep -q '^PASS\|^FAIL' "$D/peer.out" || bad "the Home Assistant peer said nothing: $(tail -5 "$D/peer.out")"
# The journal: the refused code, the one pulse, the lockdown's authority; the intruder never acted.
opens=$(grep -c "manual-open relay [0-9]*ms by home-assistant" "$D/journal")
[ "$opens" = 1 ] && ok "exactly one relay pulse by home-assistant (the right code; not the wrong one, not the intruder's)" \
  || bad "$opens relay pulses by home-assistant: $(grep home-assistant "$D/journal" | head -5)"
grep -q "lockdown on home-assistant" "$D/journal" && grep -q "lockdown off home-assistant" "$D/journal" \
  && ok "the lockdown was latched and lifted by home-assistant" || bad "lockdown records: $(grep lockdown "$D/journal" | head -4)"
finish
