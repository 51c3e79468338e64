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
missing=$(for p in chromium chromium-driver openssl qrencode zbar-tools poppler-utils; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  echo "admin-page: installing $missing"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null || die "apt-get install $missing failed"
fi
PY=$(deploy/peers.sh) || die "deploy/peers.sh"

. deploy/admin-rig.sh
admin_rig "$BIN"

# The page refuses to start without the reader's Unix socket configured.
sed '/^unix_path/d' "$D/config.toml" > "$D/nosocket.toml"
"$BIN" admin --config "$D/nosocket.toml" > "$D/nosocket.out" 2>&1
grep -q "admin.listen: the web page needs a reader" "$D/nosocket.out"
check $? "without console.unix_path the page does not start, and says why ($(tail -1 "$D/nosocket.out"))"

# An issuer key never sits beside a reader: a config with both is refused, and a reader refuses
# an issuer's config.
printf '[console]\nunix_path = "%s"\n' "$D/x.sock" | cat "$D/issuer.toml" - > "$D/both.toml"
"$BIN" check-config --config "$D/both.toml" > "$D/both.out" 2>&1
[ $? != 0 ] && grep -q "issuer key never sits beside a reader" "$D/both.out"
check $? "an issuer key beside a reader's console socket is refused ($(grep -m1 -o 'admin.issuer_key_file.*' "$D/both.out" | cut -c1-70))"
"$BIN" run --config "$D/issuer.toml" > "$D/issuer-run.out" 2>&1
[ $? != 0 ] && grep -q "refused: admin.issuer_key_file is set" "$D/issuer-run.out"
check $? "scangate run refuses an issuer's configuration ($(head -c 70 "$D/issuer-run.out"))"

# The reader's TLS console asks for a client certificate: a client without one (openssl
# s_client) gets no session, so AS is for the page's certificate alone.
printf 'VERSION\n' | timeout 10 openssl s_client -connect "127.0.0.1:$CPORT" -quiet > "$D/nocert.out" 2>&1
! grep -q "console ready" "$D/nocert.out" && grep -qi "alert\|error" "$D/nocert.out"
check $? "the reader's TLS console refuses a client without a certificate ($(grep -m1 -o 'alert certificate required' "$D/nocert.out" || tail -1 "$D/nocert.out"))"
printf 'VERSION\n' | timeout 10 openssl s_client -connect "127.0.0.1:$CPORT" -quiet -cert "$D/client.crt" -key "$D/client.key" > "$D/cert.out" 2>&1
grep -q "console ready" "$D/cert.out"
check $? "and serves one with the page's certificate ($(grep -m1 -o 'scangate [^ ]* console ready' "$D/cert.out"))"

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
ISSUER_URL="https://127.0.0.1:$IPORT" REMOTE_URL="https://127.0.0.1:$RPORT" TMPDIR_FOR_BROWSER="$D" SCREENSHOTS="$D/shots" METRICS_TOKEN=$(cat "$D/metrics-token") "$PY" deploy/admin-page.py "https://127.0.0.1:$PORT" "$D/journal" "$D/admin.log" > "$D/page.out" 2>&1
status=$?
grep -q '^Traceback' "$D/page.out" && bad "the browser run stopped early: $(grep -A3 '^Traceback' "$D/page.out" | tail -1; grep -m1 -E '^[a-z.]+Exception|Error:' "$D/page.out")"
[ $status = 0 ] || grep -q '^FAIL' "$D/page.out" || bad "the browser run exited $status with no FAIL line"
cat "$D/page.out" | grep -E '^(PASS|FAIL)'
pass=$((pass + $(grep -c '^PASS' "$D/page.out"))); fail=$((fail + $(grep -c '^FAIL' "$D/page.out")))
grep -q '^PASS\|^FAIL' "$D/page.out" || bad "the browser run said nothing: $(tail -5 "$D/page.out")"
# The guest pass the issuer's page made, shown to a reader that trusts the issuer (its replay
# camera on the page's PNG, 10 frames a second, deciding again each second): granted twice, then
# spent.
if [ -s "$D/guest-pass.png" ]; then
  mkdir -p "$D/guest/frames" && cp "$D/guest-pass.png" "$D/guest/frames/"
  sed -e "s#^replay_path = .*#replay_path = \"$D/guest/frames\"#" -e 's#^replay_fps = .*#replay_fps = 10#' \
    -e "s#^path = \"$D/audit.db\"#path = \"$D/guest/audit.db\"#" -e '/^unix_path/d' -e '/^\[admin\]/,$d' "$D/config.toml" > "$D/guest/config.toml"
  "$BIN" run --config "$D/guest/config.toml" --frames 60 > "$D/guest/journal" 2>&1
  verdicts=$(grep -o "decision [a-z-]* qr label=Vera[^ ]*" "$D/guest/journal" | cut -d' ' -f2 | uniq -c | xargs)
  [ "$(grep -o "decision [a-z-]* qr label=Vera" "$D/guest/journal" | head -3 | cut -d' ' -f2 | xargs)" = "granted granted denied-used" ]
  check $? "a reader grants the page's guest pass twice, then denies it as used ($verdicts)"
else
  bad "the issuer's page made no guest pass to show a reader"
fi
grep -aq "ADMIN-PAGE-ALICE" "$D"/audit.db*
check $? "the reader's log holds raw payloads (log.raw_payloads), so the page's hiding them is tested"
n=$(ls "$D/shots"/*.png 2>/dev/null | wc -l)
notpng=$(for f in "$D/shots"/*.png; do [ "$(head -c 4 "$f" | tail -c 3)" = PNG ] || echo "$f"; done)
[ "$n" -ge 10 ] && [ -z "$notpng" ]
check $? "the pages' pictures for docs/admin.md, desk and phone widths ($n PNGs)"
[ -n "${SCANGATE_SCREENSHOTS:-}" ] && cp "$D/shots"/*.png "$SCANGATE_SCREENSHOTS"/
# The passes in the imported CSVs (one applied, one refused) are in no log, record or journal.
! grep -aql "IMPORT-ZOE-1\|IMPORT-YAN-2\|IMPORT-XENA-1\|SECRET-PASS-9" "$D"/audit.db* "$D/journal" "$D/admin.log" "$D/allow-list.txt"
check $? "imported passes reach no log, record or journal, and the file holds their SHA-256 only"
! grep -q "ADMIN-PAGE-" "$D/admin.log"
check $? "the page's own journal never holds a payload"
finish
