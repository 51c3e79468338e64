#!/bin/bash
# The console abuse run (security review): the real `scangate run` replaying, at full speed,
# frames where a listed code (ALICE-0001) and an unlisted one (MALLORY-9999) alternate with
# empty frames (presence.leave_after_ms = 50, cooldown 0: each is decided again every cycle),
# with the audit log on and an operator secret. A baseline without clients, then CLIENTS (64)
# concurrent Python clients for ABUSE_S seconds (deploy/console-abuse.py: garbage, NULs,
# overlong lines, mistyped AUTH lines holding the real secret, wrong AUTHs, CHECK guesses,
# STATUS/LAST, bursts past the line budget, QUIT and resets; they reconnect). Then checks:
#   (a) every decision is in the audit log: decision records (sqlite3) = decision lines in the
#       journal = the exit summary's granted + denied, per verdict; no event lost on the way
#   (b) every `ERR 403 wrong secret` the clients got is an auth-failure record
#   (c) the secret is nowhere in audit.db, -wal, -shm (while running and after) nor the journal
#   (d) lockout: the RIGHT secret from another loopback address right after gets ERR 423/429
#       (the abuse clients and that probe run as the same user, root: one peer to the service)
#   (s) the serial console (a socat pty pair) answers STATUS and takes the right AUTH while
#       the 64 clients are at it
#   (e) the frame rate during abuse against the baseline (goal >= 95%): printed as a MEASURED line;
#       a pass/fail check only with ABUSE_STRICT_FPS=1 (performance targets live in bench/)
#   (f) QUIT closes the connection after OK bye
#   and `scangate log verify --head` (from the journal) passes.
# Then (g), issue 26 item 8, against a second reader with the default console limits (16 clients,
# 4 per peer, 5 failures, 300 s lockout): as user nobody (setpriv), 20 idle loopback sockets and
# 5 wrong AUTHs; while they are held, root's client still connects and authenticates, the serial
# console still answers and authenticates, and nobody alone is locked out.
# Prints PASS/FAIL lines and "console-abuse: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/console-abuse.sh [path/to/scangate]   (default: .build/debug/scangate)
# Environment: BASE_S (10), ABUSE_S (30), CLIENTS (64);
#   ABUSE_BREAK=a,a2,a3,b,c,c2,d,d2,e,f,s,g,g2,g3,verify (any of them) gives those checks a deliberately wrong expectation (to see it fail).
set -uo pipefail
cd "$(dirname "$0")/.."
HERE=$(pwd)
BIN=$(realpath "${1:-.build/debug/scangate}")
BASE_S=${BASE_S:-10}; ABUSE_S=${ABUSE_S:-30}; CLIENTS=${CLIENTS:-64}
BREAK=${ABUSE_BREAK:-}
broken() { [[ ",$BREAK," == *",$1,"* ]]; }  # ABUSE_BREAK=a,b,...
pass=0; fail=0
ok() { echo "PASS console-abuse: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL console-abuse: $*"; fail=$((fail + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
finish() { echo "console-abuse: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
log() { echo "[abuse +$SECONDS s] $*"; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
for t in sqlite3 qrencode python3 socat setpriv; do command -v $t >/dev/null || die "$t is missing (deploy/setup.sh)"; done
[ "$(id -u)" = 0 ] || die "run as root: (g) runs a client as user nobody (setpriv)"
PY="python3 $HERE/deploy/console-abuse.py"

D=$(mktemp -d /tmp/scangate-abuse.XXXXXX)
SVC=""; PEERS=""; PTYS=""; NOBODY=""
cleanup() {
  [ -n "$PEERS" ] && kill "$PEERS" 2>/dev/null && wait "$PEERS" 2>/dev/null
  [ -n "$NOBODY" ] && kill "$NOBODY" 2>/dev/null && wait "$NOBODY" 2>/dev/null
  [ -n "$SVC" ] && kill "$SVC" 2>/dev/null && wait "$SVC" 2>/dev/null
  for p in $PTYS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---------------------------------------------------------------- frames, list, secret, config
mkdir -p "$D/frames"
qrencode -s 8 -m 4 -o "$D/frames/a00.png" "ALICE-0001" && qrencode -s 8 -m 4 -o "$D/frames/b00.png" "MALLORY-9999" \
  || die qrencode
printf 'P5\n16 16\n255\n' > "$D/blank.pgm"; head -c 256 /dev/zero | tr '\0' '\377' >> "$D/blank.pgm"
for i in $(seq -w 1 30); do cp "$D/blank.pgm" "$D/frames/a$i.pgm"; cp "$D/blank.pgm" "$D/frames/b$i.pgm"; done
echo "text:ALICE-0001 label=alice" > "$D/allow-list.txt"
SECRET="abuse-$(head -c 10 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$SECRET" > "$D/secret"; chmod 600 "$D/secret"
mkdir -p "$D/log"
# A serial cable stand-in: the reader opens tty, the checks talk on tty-peer.
pty_pair() {  # $1: name
  socat pty,raw,echo=0,link="$D/$1" pty,raw,echo=0,link="$D/$1-peer" 2>/dev/null &
  PTYS="$PTYS $!"
  for _ in $(seq 50); do [ -e "$D/$1" ] && [ -e "$D/$1-peer" ] && return 0; sleep 0.1; done
  die "socat made no pty pair"
}
pty_pair tty
cat > "$D/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = 0
[decoder]
variant_mode = "upright"
[presence]
leave_after_ms = 50
cooldown_ms = 0
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
relay_pulse_ms = 50
[log]
path = "$D/log/audit.db"
commit_interval_ms = 50
[console]
listen = ["127.0.0.1:0"]
clients_max = 70
clients_per_peer_max = 70
secret_file = "$D/secret"
auth_lockout_s = 25
serial_path = "$D/tty"
EOF
# The 64 clients all run as root, one peer: the per-peer cap is raised so they run at once, as
# before it existed. A binary from before the cap does not know the key (a before/after run).
if grep -q 'clients_per_peer_max: unknown key' <<<"$("$BIN" check-config --config "$D/config.toml" 2>&1)"; then
  sed -i '/^clients_per_peer_max/d' "$D/config.toml"
  log "this binary has no console.clients_per_peer_max (a build from before issue 26 item 8)"
fi
"$BIN" check-config --config "$D/config.toml" > "$D/check-config" 2>&1 || die "check-config: $(cat "$D/check-config")"

"$BIN" run --config "$D/config.toml" > "$D/journal" 2>&1 &
SVC=$!
for _ in $(seq 100); do grep -q "state started" "$D/journal" && break; sleep 0.1; done
PORT=$(sed -n 's/^console listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$D/journal" | head -1)
[ -n "$PORT" ] && grep -q "state started" "$D/journal" || die "the service did not start: $(tail -5 "$D/journal")"
log "service pid $SVC, console 127.0.0.1:$PORT, lockout 25 s"

# STATS frames and the time it was read; the loop thread's CPU ticks.
sample() {  # -> "frames monotonic loop_ticks"
  local r; r=$($PY probe "$PORT" STATS) || { echo "0 0 0"; return; }
  local f t c
  f=$(grep -oE '^\| frames [0-9]+' <<<"$r" | grep -oE '[0-9]+$')
  t=$(grep -oE '^# monotonic [0-9.]+' <<<"$r" | grep -oE '[0-9.]+$')
  c=$(awk '{ print $14 + $15 }' "/proc/$SVC/task/$SVC/stat" 2>/dev/null)
  echo "${f:-0} ${t:-0} ${c:-0}"
}
rate() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); d = y[2] - x[2]; printf "%.1f", (d > 0 ? (y[1] - x[1]) / d : 0) }'; }
per_cpu() { awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { split(a, x, " "); split(b, y, " "); d = (y[3] - x[3]) / hz; printf "%.1f", (d > 0 ? (y[1] - x[1]) / d : 0) }'; }

# ---------------------------------------------------------------- baseline
sleep 2
s0=$(sample); sleep "$BASE_S"; s1=$(sample)
BASE_FPS=$(rate "$s0" "$s1"); BASE_CPU=$(per_cpu "$s0" "$s1")
log "baseline: $BASE_FPS fps over ${BASE_S} s without clients ($(per_cpu "$s0" "$s1") frames per loop-thread CPU second)"

# ---------------------------------------------------------------- abuse
$PY abuse "$PORT" "$D/secret" "$ABUSE_S" "$CLIENTS" "$D/counts.json" > "$D/peers.log" 2>&1 &
PEERS=$!
sleep 5; s2=$(sample)
sleep $((ABUSE_S - 8)); s3=$(sample)
ABUSE_FPS=$(rate "$s2" "$s3"); ABUSE_CPU=$(per_cpu "$s2" "$s3")
# (s) the serial console through all of it (the clients are still running)
ser_status=$($PY serial "$D/tty-peer" STATUS | tail -1)
ser_auth=$($PY serial "$D/tty-peer" "AUTH $SECRET" | tail -1)
ser_expect='^OK operator'; broken s && ser_expect='^ERR 423'
grep -q '^OK status' <<<"$ser_status" && grep -qE "$ser_expect" <<<"$ser_auth"
check $? "(s) during the abuse the serial console answers STATUS ('$ser_status') and AUTH with the right secret ('$ser_auth')"
clients_now=$($PY probe "$PORT" STATUS | grep -oE 'console [0-9]+ TCP client' | grep -oE '[0-9]+')
log "abuse: $ABUSE_FPS fps over $((ABUSE_S - 8)) s with $CLIENTS clients ($clients_now connected at the end; $(per_cpu "$s2" "$s3") frames per loop-thread CPU second)"
wait "$PEERS"; peers_status=$?; PEERS=""
[ $peers_status = 0 ] && [ -s "$D/counts.json" ] || die "the clients failed: $(tail -5 "$D/peers.log")"
count() { python3 -c "import json,sys; print(json.load(open('$D/counts.json')).get('$1', 0))"; }
log "clients: $(cat "$D/counts.json")"
log "the clients used $(( $(count cpu_ms) / 1000 )) s of CPU in ${ABUSE_S} s"

# (d) the lockout holds against the right secret, from another loopback address
lock_reply=$($PY probe "$PORT" "AUTH $SECRET" 127.0.77.1 | grep -E '^(OK|ERR)')
if broken d; then lock_expect='^OK operator'; else lock_expect='^ERR (423|429) '; fi
grep -qE "$lock_expect" <<<"$lock_reply"
check $? "(d) after the failures, AUTH with the right secret from 127.0.77.1 is refused: '$lock_reply'"
n423=$(count err423); n429=$(count err429_backoff); broken d2 && n423=0
[ "$n423" -gt 0 ] && [ "$n429" -gt 0 ] && [ "$(count leak_operator)" = 0 ]
check $? "(d) during the run the clients got backoff (ERR 429: $n429) and lockout (ERR 423: $n423) replies, never OK operator"

quit_reply=$($PY quit "$PORT"); qst=$?
broken f && qst=$((1 - qst))
check $qst "(f) QUIT is answered OK bye and the service closes the connection: $quit_reply (during the run: $(count quit_closed) closed, $(count quit_not_closed) left open of $(count sent_quit) QUITs)"

s4=$(sample); sleep 8; s5=$(sample)
AFTER_FPS=$(rate "$s4" "$s5")
log "after the clients: $AFTER_FPS fps over 8 s"

stats=$($PY probe "$PORT" STATS)
log "console after the run: $($PY probe "$PORT" STATUS | grep -E '^\| console') / $(grep -E '^\| console' <<<"$stats")"
stats_dec=$(grep -oE 'decisions granted [0-9]+ denied [0-9]+' <<<"$stats")
mkdir -p "$D/live"; cp "$D"/log/audit.db* "$D/live/" 2>/dev/null  # the files as they are while running
kill -TERM "$SVC"; wait "$SVC"; svc_status=$?; SVC=""
check $svc_status "the service exits 0 on SIGTERM after the abuse"

# ---------------------------------------------------------------- (a) decisions
summary=$(grep '^summary: ' "$D/journal")
log "$summary"
sum_g=$(sed -n 's/.* \([0-9]*\) granted, \([0-9]*\) denied,.*/\1/p' <<<"$summary")
sum_d=$(sed -n 's/.* \([0-9]*\) granted, \([0-9]*\) denied,.*/\2/p' <<<"$summary")
db_g=$(sqlite3 "file:$D/log/audit.db?mode=ro" "SELECT count(*) FROM events WHERE kind='decision' AND verdict='granted'")
db_d=$(sqlite3 "file:$D/log/audit.db?mode=ro" "SELECT count(*) FROM events WHERE kind='decision' AND verdict<>'granted'")
j_g=$(grep -cE '^#[0-9]+ \+[0-9.]+s decision granted ' "$D/journal")
j_d=$(grep -cE '^#[0-9]+ \+[0-9.]+s decision denied-' "$D/journal")
broken a && db_g=$((db_g + 1))
log "decisions: summary $sum_g granted $sum_d denied; audit log $db_g / $db_d; journal $j_g / $j_d; STATS before the stop: $stats_dec"
[ -n "$sum_g" ] && [ "$((sum_g + sum_d))" -gt 0 ] && [ "$db_g" = "$sum_g" ] && [ "$db_d" = "$sum_d" ] && [ "$j_g" = "$sum_g" ] && [ "$j_d" = "$sum_d" ]
check $? "(a) every decision is in the audit log: $db_g granted + $db_d denied records = journal $j_g + $j_d = summary $sum_g + $sum_d"
st_g=$(awk '{ print $3 }' <<<"$stats_dec"); st_d=$(awk '{ print $5 }' <<<"$stats_dec"); broken a2 && st_g=$((sum_g + 1))
[ -n "$st_g" ] && [ "$st_g" -le "$sum_g" ] && [ "$st_d" -le "$sum_d" ] && [ "$((sum_g + sum_d - st_g - st_d))" -le 100 ]
check $? "(a) STATS read just before the stop ($stats_dec) is at most the final count, within the last seconds' decisions"
lost_pattern='overwritten before|records-lost'; broken a3 && lost_pattern='decision granted'
! grep -qE "$lost_pattern" "$D/journal" \
  && [ "$(sqlite3 "file:$D/log/audit.db?mode=ro" "SELECT count(*) FROM events WHERE kind='records-lost'")" = 0 ]
check $? "(a) no event overwritten before the journal printed it, no records-lost record"

# ---------------------------------------------------------------- (b) failed AUTHs
db_af=$(sqlite3 "file:$D/log/audit.db?mode=ro" "SELECT count(*) FROM events WHERE kind='auth-failure'")
n403=$(count err403); broken b && n403=$((n403 + 1))
log "auth failures: clients counted $n403 'ERR 403 wrong secret', the audit log holds $db_af auth-failure records ($(sqlite3 "file:$D/log/audit.db?mode=ro" "SELECT group_concat(code, ',') FROM events WHERE kind='auth-failure'") failures each)"
[ "$n403" -gt 0 ] && [ "$db_af" = "$n403" ]
check $? "(b) every ERR 403 wrong secret the clients got ($n403) is an auth-failure record ($db_af)"

# ---------------------------------------------------------------- (c) the secret nowhere
needle=$SECRET; broken c && needle="granted"
hex=${SECRET#abuse-}
files=("$D"/log/audit.db* "$D"/live/audit.db* "$D/journal")
found=$(for f in "${files[@]}"; do grep -a -l -F -e "$needle" -e "$hex" -e "${hex:0:12}" "$f"; done | xargs)
[ -z "$found" ]
check $? "(c) the secret (or its random part) is in none of ${#files[@]} files: $(basename -a "${files[@]}" | xargs)${found:+ — found in $found}"
lk=$(( $(count leak_secret) + $(count leak_payload) + $(count unframed) )); broken c2 && lk=$(count body)
[ "$lk" = 0 ]; check $? "(c) no reply to the clients held the secret or a payload, and every line was body, status or event"

# ---------------------------------------------------------------- (e) frame rate
ratio=$(awk -v a="$ABUSE_FPS" -v b="$BASE_FPS" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
need=0.95; broken e && need=1.5
cpu_ratio=$(awk -v a="$ABUSE_CPU" -v b="$BASE_CPU" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
fps_line="(e) frame rate under abuse $ABUSE_FPS fps vs baseline $BASE_FPS fps: ratio $ratio (goal >= $need; after the clients $AFTER_FPS fps; frames per loop-thread CPU second $ABUSE_CPU vs $BASE_CPU: $cpu_ratio)"
if [ "${ABUSE_STRICT_FPS:-0}" = 1 ] || broken e; then
  awk -v r="$ratio" -v n="$need" 'BEGIN { exit !(r >= n) }'
  check $? "$fps_line"
else
  # A figure, not a pass/fail test (performance targets live in bench/): on a shared 2-core
  # machine the clients and other jobs move the wall-clock rate by tens of percent.
  echo "MEASURED console-abuse: $fps_line"
fi

# ---------------------------------------------------------------- log verify
head=$(sed -n 's/^audit log: \([0-9]*:[0-9a-f]*\)$/\1/p' "$D/journal")
broken verify && head="${head%:*}:$(printf '%s' "${head#*:}" | tr '0-9a-f' '1-9a-f0')"
verify=$("$BIN" log verify --db "$D/log/audit.db" --head "$head" 2>&1); vst=$?
log "log verify --head $head: $(tail -1 <<<"$verify")"
[ $vst = 0 ] && grep -q "keyed chain intact" <<<"$verify"
check $? "scangate log verify --head $head passes"

# ---------------------------------------------------------------- (g) another local user
# A second reader with the default console limits; nobody runs the same script from a folder
# it can read.
mkdir -p "$D/g/log" "$D/nobody"; chmod 711 "$D"; chmod 755 "$D/nobody"
cp "$HERE/deploy/console-abuse.py" "$D/nobody/"; chmod 644 "$D/nobody/console-abuse.py"
pty_pair tty-g
sed -e '/^\[console\]/,$d' -e "s|$D/log/audit.db|$D/g/log/audit.db|" "$D/config.toml" > "$D/g/config.toml"
cat >> "$D/g/config.toml" <<EOF
[console]
listen = ["127.0.0.1:0"]
secret_file = "$D/secret"
serial_path = "$D/tty-g"
EOF
"$BIN" run --config "$D/g/config.toml" > "$D/g/journal" 2>&1 &
SVC=$!
for _ in $(seq 100); do grep -q "state started" "$D/g/journal" && break; sleep 0.1; done
PORT=$(sed -n 's/^console listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$D/g/journal" | head -1)
[ -n "$PORT" ] || die "the second reader did not start: $(tail -5 "$D/g/journal")"
NOBODY_PY="setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 $D/nobody/console-abuse.py"
t0=$SECONDS
$NOBODY_PY hold "$PORT" 20 5 120 > "$D/g/nobody.log" 2>&1 &
NOBODY=$!
for _ in $(seq 600); do grep -q '^done' "$D/g/nobody.log" && break; kill -0 $NOBODY 2>/dev/null || break; sleep 0.1; done
log "nobody (uid $(id -u nobody)), $((SECONDS - t0)) s: $(tr '\n' ';' < "$D/g/nobody.log")"
grep -q '^auth 4: ERR 403 wrong secret' "$D/g/nobody.log"
check $? "(g) nobody held 20 idle sockets to the console and made 5 wrong AUTHs"
g_greeted=$(sed -n 's/^greeted \([0-9]*\) refused \([0-9]*\).*/\1/p' "$D/g/nobody.log")
t1=$(date +%s.%N)
root_reply=$($PY probe "$PORT" "AUTH $SECRET" 127.0.88.1 | grep -E '^(OK|ERR)|^no greeting' | head -1)
t2=$(date +%s.%N)
root_expect='^OK operator'; broken g && root_expect='^ERR 423'
grep -qE "$root_expect" <<<"$root_reply"
check $? "(g) with nobody's sockets open (it got $g_greeted of 16 slots), root's client connects and AUTHs: '$root_reply' ($(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms)"
g_status=$($PY serial "$D/tty-g-peer" STATUS | tail -1); g_auth=$($PY serial "$D/tty-g-peer" "AUTH $SECRET" | tail -1)
broken g2 && g_auth="ERR"
grep -q '^OK status' <<<"$g_status" && grep -q '^OK operator' <<<"$g_auth"
check $? "(g) the serial console answers ('$g_status') and authenticates ('$g_auth') while nobody's sockets are held"
log "console: $($PY probe "$PORT" STATUS | grep -E '^\| console')"
kill $NOBODY 2>/dev/null; wait $NOBODY 2>/dev/null; NOBODY=""
root_after=$($PY probe "$PORT" "AUTH $SECRET" 127.0.88.2 | grep -E '^(OK|ERR)|^no greeting' | head -1)
grep -q '^OK operator' <<<"$root_after"
check $? "(g) nobody's 5 failures did not lock root out: with nobody's sockets closed, root's AUTH gets '$root_after'"
again=$($NOBODY_PY hold "$PORT" 1 1 0 2>&1 | grep '^auth 0')
again_expect='^auth 0: ERR 423'; broken g3 && again_expect='^auth 0: OK'
grep -qE "$again_expect" <<<"$again"
check $? "(g) nobody itself is locked out: '$again'"
kill -TERM "$SVC"; wait "$SVC"; SVC=""
finish
