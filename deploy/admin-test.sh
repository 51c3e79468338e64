#!/bin/bash
# The web admin page end to end: a real `scangate run` (replayed QR frames, simulated GPIO) with
# its console on a Unix socket only, `scangate admin` serving HTTPS on a free loopback port with a
# certificate made here by openssl, two accounts made by `scangate admin user add`; then Debian's
# chromium, driven by selenium (PyPI) through Debian's chromium-driver, signs in as a viewer and
# as an operator (deploy/admin-page.py). openssl s_client, an independent TLS client, checks the
# fingerprint `scangate admin fingerprint` prints. Needs chromium and chromium-driver (installed
# here when missing, from Debian). Prints PASS/FAIL lines and "admin-page: N passed, M failed".
#
# Usage: deploy/admin-test.sh [path/to/scangate]   (default: .build/debug/scangate)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-.build/debug/scangate}")
pass=0; fail=0
ok() { echo "PASS admin-page: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL admin-page: $*"; fail=$((fail + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
finish() { echo "admin-page: $pass passed, $fail failed"; [ $fail = 0 ] && exit 0 || exit 1; }
die() { bad "$*"; finish; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
missing=$(for p in chromium chromium-driver openssl qrencode; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  echo "admin-page: installing $missing"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null || die "apt-get install $missing failed"
fi
PY=$(deploy/peers.sh) || die "deploy/peers.sh"

D=$(mktemp -d /tmp/scangate-admin.XXXXXX)
READER=""; ADMIN=""
cleanup() {
  for p in $ADMIN $READER; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
. deploy/site-broker.sh  # free_port, waitfor

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$D/admin.key" -out "$D/admin.crt" -days 30 \
  -subj /CN=scangate-admin -addext subjectAltName=IP:127.0.0.1 2> "$D/openssl.err" || die "openssl: $(cat "$D/openssl.err")"
chmod 600 "$D/admin.key"
mkdir -p "$D/frames"
qrencode -s 6 -m 4 -o "$D/frames/alice.png" "ADMIN-PAGE-ALICE" || die "qrencode"
qrencode -s 6 -m 4 -o "$D/frames/dan.png" "ADMIN-PAGE-DAN" || die "qrencode"  # unknown: enrolled on the page
printf 'text:ADMIN-PAGE-ALICE label=alice\n' > "$D/allow-list.txt"
# A site of 10,000 people (the default allow_list.entries_max): the people page pages and
# searches on the reader's side.
python3 -c 'import hashlib
for i in range(1, 9991): print("sha256:%s label=person-%05d" % (hashlib.sha256(b"P%d" % i).hexdigest(), i))' >> "$D/allow-list.txt"
PORT=$(free_port)
cat > "$D/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = 4
[presence]
repeat_ms = 1000
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
relay_pulse_ms = 100
[log]
path = "$D/audit.db"
commit_interval_ms = 100
raw_payloads = true
[console]
listen = []
unix_path = "$D/console.sock"
[admin]
listen = "127.0.0.1:$PORT"
tls_cert_file = "$D/admin.crt"
tls_key_file = "$D/admin.key"
users_file = "$D/admin-users"
metrics_token_file = "$D/metrics-token"
EOF
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$D/metrics-token"; chmod 600 "$D/metrics-token"
echo "correct horse battery" | "$BIN" admin user add olga --role operator --config "$D/config.toml" 2> "$D/users.err" || die "admin user add: $(cat "$D/users.err")"
echo "viewer password 1" | "$BIN" admin user add vic --role viewer --config "$D/config.toml" 2>> "$D/users.err" || die "admin user add"

# The page refuses to start without the reader's Unix socket configured.
sed '/^unix_path/d' "$D/config.toml" > "$D/nosocket.toml"
"$BIN" admin --config "$D/nosocket.toml" > "$D/nosocket.out" 2>&1
grep -q "admin.listen.* needs console.unix_path" "$D/nosocket.out"
check $? "without console.unix_path the page does not start, and says why ($(tail -1 "$D/nosocket.out"))"

"$BIN" run --config "$D/config.toml" > "$D/journal" 2>&1 &
READER=$!
waitfor "$D/journal" "state started" 60 || die "the reader did not start: $(tail -3 "$D/journal")"
"$BIN" admin --config "$D/config.toml" > "$D/admin.log" 2>&1 &
ADMIN=$!
waitfor "$D/admin.log" "serving https://" 10 || die "scangate admin did not start: $(tail -3 "$D/admin.log")"

# What a browser should see, by a TLS client we did not write.
printed=$("$BIN" admin fingerprint --config "$D/config.toml" 2>/dev/null | sed 's/^SHA-256 //')
seen=$(echo | openssl s_client -connect "127.0.0.1:$PORT" 2>/dev/null | openssl x509 -noout -fingerprint -sha256 | sed 's/.*=//')
[ -n "$printed" ] && [ "$printed" = "$seen" ]
check $? "admin fingerprint prints what openssl s_client is served (${printed:0:23}...)"
# TLS 1.1 offered by a client that would take it (OpenSSL's own floor lowered): refused by the page.
echo | openssl s_client -connect "127.0.0.1:$PORT" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' > "$D/tls11.out" 2>&1
grep -q "Cipher is (NONE)" "$D/tls11.out" && ! grep -q "^    Cipher *: [A-Z]" "$D/tls11.out"
check $? "TLS 1.1 is refused (1.2 and 1.3 only): $(grep -m1 -o 'alert [a-z ]*' "$D/tls11.out" || grep -m1 'Cipher is' "$D/tls11.out")"

# SCANGATE_SCREENSHOTS=docs/images keeps the pages' pictures for docs/admin.md (made either way).
mkdir -p "$D/shots"
SCREENSHOTS="$D/shots" METRICS_TOKEN=$(cat "$D/metrics-token") "$PY" deploy/admin-page.py "https://127.0.0.1:$PORT" "$D/journal" "$D/admin.log" > "$D/page.out" 2>&1
status=$?
grep -q '^Traceback' "$D/page.out" && bad "the browser run stopped early: $(grep -A3 '^Traceback' "$D/page.out" | tail -1; grep -m1 -E '^[a-z.]+Exception|Error:' "$D/page.out")"
[ $status = 0 ] || grep -q '^FAIL' "$D/page.out" || bad "the browser run exited $status with no FAIL line"
cat "$D/page.out" | grep -E '^(PASS|FAIL)'
pass=$((pass + $(grep -c '^PASS' "$D/page.out"))); fail=$((fail + $(grep -c '^FAIL' "$D/page.out")))
grep -q '^PASS\|^FAIL' "$D/page.out" || bad "the browser run said nothing: $(tail -5 "$D/page.out")"
grep -aq "ADMIN-PAGE-ALICE" "$D"/audit.db*
check $? "the reader's log holds raw payloads (log.raw_payloads), so the page's hiding them is tested"
n=$(ls "$D/shots"/*.png 2>/dev/null | wc -l)
notpng=$(for f in "$D/shots"/*.png; do [ "$(head -c 4 "$f" | tail -c 3)" = PNG ] || echo "$f"; done)
[ "$n" -ge 10 ] && [ -z "$notpng" ]
check $? "the pages' pictures for docs/admin.md, desk and phone widths ($n PNGs)"
[ -n "${SCANGATE_SCREENSHOTS:-}" ] && cp "$D/shots"/*.png "$SCANGATE_SCREENSHOTS"/
! grep -q "ADMIN-PAGE-" "$D/admin.log"
check $? "the page's own journal never holds a payload"
finish
