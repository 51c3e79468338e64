#!/bin/bash
# ScanGate as an OSDP reader for a real control panel: libosdp's Python binding (PyPI
# `libosdp`, deploy/peers.sh) on one end of a socat pty pair, the real `scangate run` on the
# other, in panel mode, with a replayed QR frame (blank frames first, then the pass) and
# simulated GPIO. Phases: a wrong SCBK (no secure session, no card in the clear); the right
# SCBK (ID, CAP, Secure Channel, LED/BUZ/OUT acted on, the card read with the right bits, the
# relay never driven); noise and cut-off packets (NAK or silence, no crash); osdp_COMSET (the
# reader moves to the new address and baud, and keeps them across a restart); install mode (a
# panel with only the default key SCBK-D installs a key with osdp_KEYSET; from then on, and after
# a restart with install_mode still true, a panel that knows only SCBK-D gets no session).
# Prints PASS/FAIL lines and "panel: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/panel-test.sh [path/to/scangate]   (default: .build/debug/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
pass=0; fail=0
ok() { echo "PASS panel: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL panel: $*"; fail=$((fail + 1)); }
finish() { echo "panel: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
for tool in socat qrencode; do command -v $tool >/dev/null || die "$tool is not installed"; done
PY=$(deploy/peers.sh) || die "deploy/peers.sh (the PyPI peers' venv)"

D=$(mktemp -d /tmp/scangate-panel.XXXXXX)
SOCAT=""; SVC=""
stop_service() { [ -n "$SVC" ] && kill "$SVC" 2>/dev/null && wait "$SVC" 2>/dev/null; SVC=""; }
cleanup() {
  stop_service
  [ -n "$SOCAT" ] && kill "$SOCAT" 2>/dev/null && wait "$SOCAT" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Frames: 8 s of blank frames at 10 fps, then the pass for 2 s (looped).
mkdir -p "$D/frames"
"$PY" - "$D/frames" <<'PYEOF'
import sys
for i in range(80):
    open(f"{sys.argv[1]}/{i:04d}-blank.pgm", "wb").write(b"P5\n16 16\n255\n" + b"\xff" * 256)
PYEOF
for i in $(seq 80 99); do qrencode -s 8 -m 4 -o "$D/frames/$(printf %04d $i)-code.png" "PANEL-PASS-0001" || die qrencode; done
echo "text:PANEL-PASS-0001 label=visitor card=26:212:7041" > "$D/allow-list.txt"
PORT=$((20000 + RANDOM % 20000))
KEY=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
WRONG=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$KEY" > "$D/scbk"; chmod 600 "$D/scbk"
cat > "$D/config.toml" <<TOML
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = 10
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = ""
[console]
listen = ["127.0.0.1:$PORT"]
[panel]
mode = "panel"
osdp_port = "$D/reader"
osdp_address = 0
osdp_baud = 9600
scbk_file = "$D/scbk"
enforce_secure = true
com_file = "$D/osdp-com"
TOML

start_link() {
  socat -d -d "pty,raw,echo=0,link=$D/reader" "pty,raw,echo=0,link=$D/panel" 2> "$D/socat.log" &
  SOCAT=$!
  for _ in $(seq 50); do [ -e "$D/reader" ] && [ -e "$D/panel" ] && break; sleep 0.1; done
  [ -e "$D/reader" ] && [ -e "$D/panel" ] || die "socat made no pty pair: $(cat "$D/socat.log")"
}
stop_link() { [ -n "$SOCAT" ] && kill "$SOCAT" 2>/dev/null && wait "$SOCAT" 2>/dev/null; SOCAT=""; }
start_service() {  # journal
  "$BIN" run --config "$D/config.toml" > "$1" 2>&1 &
  SVC=$!
}

"$BIN" check-config --config "$D/config.toml" > "$D/check.txt" 2>&1 && ok "check-config accepts [panel]" \
  || bad "check-config rejects [panel]: $(head -5 "$D/check.txt")"

# ---------------------------------------------------------------- a wrong SCBK
start_link
start_service "$D/journal-wrong"
"$PY" deploy/panel-cp.py wrongkey "$D/panel" "$WRONG" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "wrong-key control panel run"
grep -q "panel-card" "$D/journal-wrong" && ok "wrong SCBK: the pass was validated and queued for the panel (journal)" \
  || bad "wrong SCBK: no pass was queued during the run (the check above proves nothing)"
stop_service; stop_link

# ---------------------------------------------------------------- the right SCBK
start_link
start_service "$D/journal"
"$PY" deploy/panel-cp.py secure "$D/panel" "$KEY" > "$D/cp.txt" 2>&1
rc=$?
grep -E '^(PASS|FAIL)' "$D/cp.txt"
[ $rc = 0 ] || { bad "secure control panel run"; tail -20 "$D/cp.txt"; }
grep -q "panel-secure 1" "$D/journal" && ok "journal: panel-secure 1 (Secure Channel up)" || bad "journal: no panel-secure event"
grep -q "panel-command 105" "$D/journal" && ok "journal: the panel's LED command" || bad "journal: no LED command"
grep -q "panel-command 106" "$D/journal" && ok "journal: the panel's buzzer command" || bad "journal: no buzzer command"
grep -q "panel-command 104" "$D/journal" && ok "journal: the panel's output command" || bad "journal: no output command"
grep -q "buzzer active" "$D/journal" && ok "the buzzer line followed the panel (edge buzzer active)" || bad "the buzzer never sounded"
grep -q "panel-card 26" "$D/journal" && ok "journal: the pass forwarded as a 26-bit card" || bad "journal: no panel-card event"
grep -q "relay active" "$D/journal" && bad "panel mode drove the local relay" || ok "panel mode never drove the local relay"
console_status() {  # the console's STATUS reply, its continuation lines joined (one line each)
  "$PY" - "$PORT" <<'PYEOF'
import socket, sys
sys.path.insert(0, "deploy/faults")
from common import join_continuations
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"STATUS\n")
data = b""
while b"OK status" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(join_continuations(data.decode(errors="replace")))
PYEOF
}
status=$(console_status)
echo "$status" | grep -E "panel mode=panel osdp.*last_poll=[0-9]+ms.*secure=up.*last_card=26-bit" >/dev/null \
  && ok "STATUS shows the panel link: $(echo "$status" | grep mode=panel | cut -c1-110)" \
  || bad "STATUS has no panel line with online, secure=up, last card: $(echo "$status" | head -20)"
grep -q "7041\|212:7041" "$D/journal" && bad "the card number appears in the journal" || ok "the card number is not in the journal"

# ---------------------------------------------------------------- noise on the line
"$PY" deploy/panel-cp.py garbage "$D/panel" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "garbage run"
kill -0 "$SVC" 2>/dev/null && ok "the reader is still running after the noise" || bad "the reader died: $(tail -5 "$D/journal")"

# ---------------------------------------------------------------- osdp_COMSET
"$PY" deploy/panel-cp.py comset "$D/panel" "$KEY" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "COMSET control panel run"
speed=$(stty -F "$D/reader" speed 2>&1)
[ "$speed" = 19200 ] && ok "COMSET: the reader's line is at 19200 baud (stty)" || bad "COMSET: the line is at '$speed' baud"
[ "$(cat "$D/osdp-com" 2>/dev/null)" = "address=5 baud=19200" ] && ok "COMSET: kept in panel.com_file" \
  || bad "COMSET: panel.com_file holds '$(cat "$D/osdp-com" 2>/dev/null)'"
stop_service
start_service "$D/journal-restarted"
"$PY" deploy/panel-cp.py online "$D/panel" "$KEY" 5 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "COMSET: after a restart, no answer at address 5"
stop_service; stop_link

# ---------------------------------------------------------------- install mode ends once a key exists
# No key yet, install_mode = true: a panel with only SCBK-D sets up Secure Channel and installs a
# key with KEYSET. From then on (at once, and after a restart with install_mode still true) a panel
# that knows only SCBK-D gets no session: an impersonator on the bus must not read cards or
# install its own key.
NEWKEY=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
ROGUE=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')  # what an impersonator would install
sed -e "s#^scbk_file = .*#scbk_file = \"$D/scbk-installed\"#" -e '/^com_file = /d' "$D/config.toml" > "$D/install.toml"
echo "install_mode = true" >> "$D/install.toml"
"$BIN" check-config --config "$D/install.toml" > "$D/check-install.txt" 2>&1
grep -q "warning: panel: install mode is on" "$D/check-install.txt" && ok "check-config: install mode is on while no key is installed" \
  || bad "check-config says nothing of install mode: $(grep -i install "$D/check-install.txt")"
start_install() {  # journal
  "$BIN" run --config "$D/install.toml" > "$1" 2>&1 &
  SVC=$!
}
start_link
start_install "$D/journal-install"
"$PY" deploy/panel-cp.py install "$D/panel" "$NEWKEY" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "install-mode control panel run"
[ "$(tr -d '\n' < "$D/scbk-installed" 2>/dev/null)" = "$NEWKEY" ] && [ "$(stat -c %a "$D/scbk-installed")" = 600 ] \
  && ok "KEYSET: the installed key is in scbk_file, mode 0600" || bad "KEYSET: scbk_file holds '$(cat "$D/scbk-installed" 2>/dev/null)'"
grep -q "panel-secure 2" "$D/journal-install" && grep -q "panel-key 1" "$D/journal-install" \
  && ok "journal: panel-secure 2 (default key) then panel-key 1 (stored)" || bad "journal: no panel-secure 2 / panel-key 1"
"$PY" deploy/panel-cp.py defaultkey "$D/panel" "$ROGUE" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "install mode: right after KEYSET a default-key panel still got a session"
status=$(console_status)
echo "$status" | grep -q 'install_mode="ignored: a key is installed"' \
  && ok "STATUS after KEYSET: $(echo "$status" | grep -o 'secure=[a-z-]* install_mode="[^"]*"')" \
  || bad "STATUS after KEYSET does not say install mode is ignored: $(echo "$status" | grep mode=panel)"
stop_service
# The reproduction: key installed, install_mode = true, a panel that knows only SCBK-D.
"$BIN" check-config --config "$D/install.toml" > "$D/check-install.txt" 2>&1
grep -q "panel: install mode ignored: a key is installed ($D/scbk-installed)" "$D/check-install.txt" \
  && ok "check-config: install mode ignored: a key is installed" || bad "check-config: $(grep -i install "$D/check-install.txt")"
start_install "$D/journal-install-restarted"
"$PY" deploy/panel-cp.py defaultkey "$D/panel" "$ROGUE" 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "restarted with install_mode = true and a key: a default-key panel got a session"
grep -q "panel-secure 2" "$D/journal-install-restarted" && bad "restarted: a default-key session came up (panel-secure 2)" \
  || ok "restarted with install_mode = true and a key installed: no default-key session in the journal"
[ "$(tr -d '\n' < "$D/scbk-installed")" = "$NEWKEY" ] && ok "the impersonator's KEYSET never happened: scbk_file still holds the installed key" \
  || bad "scbk_file was replaced (the impersonator installed its key)"
status=$(console_status)
echo "$status" | grep -q 'install_mode="ignored: a key is installed"' && ! echo "$status" | grep -q "secure=default-key" \
  && ok "STATUS after a restart: install mode ignored, no default-key session" \
  || bad "STATUS after a restart: $(echo "$status" | grep mode=panel)"
"$PY" deploy/panel-cp.py online "$D/panel" "$NEWKEY" 0 2>&1 | grep -E '^(PASS|FAIL)'
[ "${PIPESTATUS[0]}" = 0 ] || bad "the panel that installed the key is not brought online (Secure Channel on the installed key)"
stop_service; stop_link
finish
