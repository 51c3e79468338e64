#!/bin/bash
# The serial console with the tools a technician really uses: picocom (and screen) in a terminal
# (tmux), on one end of a pty pair made by socat, the real `scangate run` on the other end with a
# replayed QR frame and simulated GPIO. Enter in picocom and screen sends a bare CR, and no
# mapping is added: a bare CR must end a line. picocom runs in a terminal of 80 columns and 24
# rows (the technician's): STATUS must arrive with no line wrapped by the terminal (tmux's
# capture-pane -J rejoins wrapped rows: none may be wider than 80) and with its fields, the
# continuation lines joined back (`|   ` lines, docs/console.md). Checks roles on the screen itself: STATUS, LAST
# without AUTH (label, never the payload), OPEN without AUTH (ERR 401), AUTH, then LAST with the
# payload and OPEN with a relay pulse in the journal.
# Prints PASS/FAIL lines and "console-tools: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/console-tools.sh [path/to/scangate]   (default: .build/debug/scangate)
# TOOLS_BREAK=<check>: deliberately wrong expectation for one check (status, hidden, label, 401,
#   auth, shown, open, exit, screen, width, fields), to see that check fail.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
BREAK=${TOOLS_BREAK:-}
pass=0; fail=0
ok() { echo "PASS console-tools: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL console-tools: $*"; fail=$((fail + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }  # status, text
finish() { echo "console-tools: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"

# ---------------------------------------------------------------- tools
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
missing=$(for p in picocom screen tmux socat qrencode; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  echo "console-tools: installing $missing"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null \
    || die "apt-get install $missing failed"
fi

# ---------------------------------------------------------------- set-up and clean-up
D=$(mktemp -d /tmp/scangate-tools.XXXXXX)
TM="tmux -L scangate-tools-$$"   # a private tmux server: never touches anyone else's sessions
SOCAT=""; SVC=""
cleanup() {
  $TM kill-server 2>/dev/null
  [ -n "$SVC" ] && kill "$SVC" 2>/dev/null && wait "$SVC" 2>/dev/null
  [ -n "$SOCAT" ] && kill "$SOCAT" 2>/dev/null && wait "$SOCAT" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

PAYLOAD="TECH-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
SECRET="tools-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$D/frames"
qrencode -s 8 -m 4 -o "$D/frames/code.png" "$PAYLOAD" || die "qrencode"
echo "text:$PAYLOAD label=technician" > "$D/allow-list.txt"
printf '%s\n' "$SECRET" > "$D/secret"; chmod 600 "$D/secret"
cat > "$D/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = 10
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
relay_pulse_ms = 200
[log]
path = ""
[console]
listen = []
serial_path = "$D/reader"
secret_file = "$D/secret"
EOF

socat -d -d "pty,raw,echo=0,link=$D/reader" "pty,raw,echo=0,link=$D/tech" 2> "$D/socat.log" &
SOCAT=$!
for _ in $(seq 50); do [ -e "$D/reader" ] && [ -e "$D/tech" ] && break; sleep 0.1; done
[ -e "$D/reader" ] && [ -e "$D/tech" ] || die "socat made no pty pair: $(cat "$D/socat.log")"

"$BIN" run --config "$D/config.toml" > "$D/journal" 2>&1 &
SVC=$!
wait_file() {  # file pattern seconds
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
wait_file "$D/journal" "decision granted qr label=technician" 20 \
  || die "the service did not decide on the replayed code: $(tail -5 "$D/journal")"
grep -q "console on serial $D/reader" "$D/journal" || die "no serial console in the journal: $(head -5 "$D/journal")"

# ---------------------------------------------------------------- picocom under tmux
screen_text() { $TM capture-pane -p -J -S - -t "$1" 2>/dev/null; }
wait_screen() {  # session pattern seconds: waits until the pane shows pattern (fixed string)
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do screen_text "$1" | grep -qF -- "$2" && return 0; sleep 0.1; done
  return 1
}
# Continuation lines (`|   `, `!   `) joined to the line before, as docs/console.md says: a
# line ending in `\` was cut inside a word and joins without a space.
join_lines() {
  awk '/^[|!]   / && n { if (line ~ /\\$/) line = substr(line, 1, length(line) - 1) substr($0, 5);
                         else line = line " " substr($0, 5); next }
       { if (n) print line; line = $0; n = 1 } END { if (n) print line }'
}
# No --imap: the reader's serial port sends CR LF itself (a bare LF would step down without
# returning, a staircase that wraps at once).
$TM new-session -d -s pc -x 80 -y 24 "picocom -b 115200 $D/tech" || die "tmux new-session"
$TM set-option -t pc remain-on-exit on >/dev/null
wait_screen pc "Terminal ready" 10 || die "picocom did not start: $(screen_text pc)"

# One command: type it, Enter, wait for its status line; returns the pane text from the
# command's own line on (the screen is not cleared, so each check looks only at its reply).
run_cmd() {  # session command status-pattern seconds
  # (the pane's blank rows below the cursor are not counted: the reply is written over them)
  local before; before=$(screen_text "$1" | awk 'NF { n = NR } END { print n + 1 }')
  $TM send-keys -t "$1" -l "$2"; $TM send-keys -t "$1" Enter
  local end=$((SECONDS + $4))
  while [ $SECONDS -lt $end ]; do
    REPLY_TEXT=$(screen_text "$1" | tail -n +"$before")
    grep -qF -- "$3" <<<"$REPLY_TEXT" && return 0
    sleep 0.1
  done
  return 1
}
expect() { [ "$BREAK" = "$1" ] && echo "${2}-broken" || echo "$2"; }

run_cmd pc STATUS "$(expect status 'OK status')" 10
check $? "picocom: STATUS with a bare CR gets its reply ($(grep -m1 -oE 'camera [a-z]+' <<<"$REPLY_TEXT"), 'OK status' on screen)"
status_text=$(sed -n '/^| camera /,/^OK status/p' <<<"$REPLY_TEXT")
width_max=80; [ "$BREAK" = width ] && width_max=40
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' <<<"$status_text")
wrapped=$(awk -v m="$width_max" 'length($0) > m' <<<"$status_text" | head -3)
[ "$($TM display-message -p -t pc '#{window_width}x#{window_height}')" = 80x24 ] && [ -n "$status_text" ] && [ -z "$wrapped" ]
check $? "picocom at 80x24: no STATUS line wrapped by the terminal (widest $widest columns)${wrapped:+: $wrapped}"
rows=$(grep -c '^|' <<<"$status_text"); said=$(grep -oE '^OK status [0-9]+' <<<"$status_text" | grep -oE '[0-9]+$')
joined=$(join_lines <<<"$status_text")
fields_ok=1
for field in "| camera " "| gpio relay " "| allow-list version 1, 1 entries" "| decoder " "| aim " "| presence " \
  "| uptime " "$(expect fields 'operator secret loaded')"; do
  grep -qF -- "$field" <<<"$joined" || { fields_ok=0; bad "picocom: STATUS has no '$field' (continuation lines joined): $joined"; }
done
console_line=$(grep -m1 '^| console ' <<<"$joined")
[ $fields_ok = 1 ] && [ "$rows" = "$said" ] && grep -q '; serial .*; operator secret loaded$' <<<"$console_line"
check $? "picocom: STATUS's fields all there, one logical line each once joined ($(grep -c '^|' <<<"$joined") lines in $rows rows; 'OK status $said lines' counts the rows)"

run_cmd pc "LAST 1" "OK last 1 decisions" 10; st=$?
hidden_payload=$PAYLOAD; [ "$BREAK" = hidden ] && hidden_payload="label="
if [ $st = 0 ] && ! screen_text pc | grep -qF -- "$hidden_payload"; then
  ok "picocom: LAST 1 without AUTH does not show the payload anywhere on screen"
else bad "picocom: LAST 1 without AUTH: payload on screen or no reply: $REPLY_TEXT"; fi
grep -qF -- "$(expect label 'decision granted qr label=technician tag=')" <<<"$(join_lines <<<"$REPLY_TEXT")"
check $? "picocom: LAST 1 without AUTH shows the decision by label and keyed tag"

run_cmd pc OPEN "$(expect 401 'ERR 401')" 10; st=$?
sleep 0.3
[ $st = 0 ] && ! grep -q "manual-open" "$D/journal"
check $? "picocom: OPEN without AUTH is refused with ERR 401 and nothing opens ($(grep -m1 -oE 'ERR 401.*' <<<"$REPLY_TEXT"))"

run_cmd pc "AUTH $SECRET" "$(expect auth 'OK operator')" 10; st=$?
if [ $st = 0 ] && ! screen_text pc | grep -qF -- "$SECRET"; then
  ok "picocom: AUTH with the secret gets OK operator, and the secret is not echoed on screen"
else bad "picocom: AUTH: $REPLY_TEXT"; fi

run_cmd pc "LAST 1" "OK last 1 decisions" 10; st=$?
grep -qF -- "$(expect shown "label=technician payload=$PAYLOAD")" <<<"$(join_lines <<<"$REPLY_TEXT")" && [ $st = 0 ]
check $? "picocom: after AUTH, LAST 1 shows the payload ($PAYLOAD)"

run_cmd pc "OPEN 150" "OK #" 10; st=$?
wait_file "$D/journal" "manual-open relay 150ms" 5; st2=$?
[ $st = 0 ] && [ $st2 = 0 ] && grep -qE "$(expect open 'OK #[0-9]+ open 150 ms')" <<<"$REPLY_TEXT"
check $? "picocom: after AUTH, OPEN 150 pulses the relay (reply '$(grep -m1 -oE 'OK #[0-9]+ open [0-9]+ ms' <<<"$REPLY_TEXT")', journal 'manual-open relay 150ms')"

$TM send-keys -t pc C-a C-x
end=$((SECONDS + 10)); dead=0
while [ $SECONDS -lt $end ]; do
  [ "$($TM display-message -p -t pc '#{pane_dead}' 2>/dev/null)" = 1 ] && { dead=1; break; }; sleep 0.1
done
[ $dead = 1 ] && screen_text pc | grep -qF "$(expect exit 'Thanks for using picocom')"
check $? "picocom: C-a C-x exits picocom"

# ---------------------------------------------------------------- screen, one STATUS
# The new session first: a server left with no session exits, and a new-session racing that
# exit fails with "server exited unexpectedly".
$TM new-session -d -s sc -x 80 -y 24 "TERM=screen screen -q $D/tech 115200" || die "tmux new-session (screen)"
$TM kill-session -t pc 2>/dev/null
$TM set-option -t sc remain-on-exit on >/dev/null
sleep 1
run_cmd sc STATUS "$(expect screen 'OK status')" 10
check $? "screen: STATUS with a bare CR gets its reply"
$TM send-keys -t sc C-a k; sleep 0.3; $TM send-keys -t sc y
end=$((SECONDS + 10)); dead=0
while [ $SECONDS -lt $end ]; do
  [ "$($TM display-message -p -t sc '#{pane_dead}' 2>/dev/null)" = 1 ] && { dead=1; break; }; sleep 0.1
done
[ $dead = 1 ]; check $? "screen: C-a k y exits screen"

# ---------------------------------------------------------------- the service after the session
kill -TERM "$SVC"; wait "$SVC"; st=$?; SVC=""
[ $st = 0 ] && grep -q "state stopping" "$D/journal" && ! grep -qF -- "$PAYLOAD" "$D/journal" && ! grep -qF -- "$SECRET" "$D/journal"
check $? "the service exits 0 on SIGTERM; its journal holds neither the payload nor the secret"
finish
