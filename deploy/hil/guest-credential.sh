#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh after the V4L2 checks: a rotating signed
# pass (SG1, TOTP sealed to the site key) rendered into vivid frames opens the relay once; the
# same frames shown again 40 s later do not (a screenshot of a rotating pass is dead). On the
# trixie userland only (Debian 13's libsodium, nettle and libcbor; bookworm's are the host's, in
# the signed-pass stage): its ~80 s balance the bookworm guest's camera checks, which only it runs.
[ "${USERLAND:-trixie}" = trixie ] || return 0 2>/dev/null || exit 0
C=/tmp/credential; rm -rf $C; mkdir -p $C
"$BIN" credential keygen --issuer $C/issuer.key --kid rig > $C/trust.toml
site=$("$BIN" credential keygen --site $C/site.key | grep -o '[0-9a-f]\{64\}')
"$BIN" credential issue --key $C/issuer.key --kid rig --sub rig-0001 --label rotating --rotating --site-public "$site" \
  --json > $C/pass.json
python3 ./frames.py --grey $C rotating="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["text"])' $C/pass.json)"
config cred grey 1000 ""
cat >> "$W/cred.toml" <<TOML
[credentials]
trust_file = "$C/trust.toml"
site_key_file = "$C/site.key"
TOML
feed GREY "$W/blank.grey"
check "signed pass: the service started with the trust file and the site key" start cred
sample "$W/gpio-cred.txt"
feed GREY "$C/rotating.grey"
check "signed pass: the rotating pass from vivid was verified offline and granted (by=credential)" \
  waitfor "$W/cred.out" "decision granted qr label=rotating.*by=credential" 60
shown=$(date +%s)
feed GREY "$W/blank.grey"; sleep 3
p=$(pulse_ms "$W/gpio-cred.txt")
check "signed pass: gpio-sim saw the relay pulse ($p ms, tolerance 900-1400)" test "$p" -ge 900 -a "$p" -le 1400
stop_sample
while [ $(( $(date +%s) - shown )) -lt 40 ]; do sleep 1; done
sample "$W/gpio-cred-replay.txt"
feed GREY "$C/rotating.grey"
check "signed pass: the same frames 40 s later were refused (replayed or TOTP out of its window)" \
  waitfor "$W/cred.out" "decision denied-\(replayed\|totp\) qr label=rotating" 60
feed GREY "$W/blank.grey"; sleep 2.5; stop_sample
check "signed pass: no relay pulse on the replay" test "$(pulse_ms "$W/gpio-cred-replay.txt")" = 0
check "signed pass: one grant in all ($(grep -c 'decision granted' "$W/cred.out"))" test "$(grep -c 'decision granted' "$W/cred.out")" = 1
kill -TERM $pid; wait $pid
check "signed pass: the audit log verifies and records the credential decisions" \
  bash -c "'$BIN' log verify --db /tmp/cred.db && '$BIN' log --db /tmp/cred.db | grep -q credential"
