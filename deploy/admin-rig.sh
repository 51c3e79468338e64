# Sourced by deploy/admin-test.sh and bench/admin-load.sh: a real `scangate run` (replayed QR
# frames, simulated GPIO, 10,000 people) with its console on a Unix socket only, and `scangate
# admin` serving HTTPS on a free loopback port with a certificate made here by openssl, and two
# accounts (olga, operator; vic, viewer; ada, admin) made by `scangate admin user add`.
#   admin_rig BIN   sets D (a new folder, removed at exit unless KEEP=1), PORT, READER, ADMIN,
#                   IPORT, ISSUER (an issuer's page: guest passes, no reader), RPORT, REMOTE (the
#                   page as on another host: the reader's TLS console, CPORT); all killed at
#                   exit; calls the caller's `die` when a step fails.
# Environment: RIG_FPS (the replay camera's frames a second, 4).
admin_rig() {
BIN=$1
D=$(mktemp -d /tmp/scangate-admin.XXXXXX)
READER=""; ADMIN=""; ISSUER=""; REMOTE=""
cleanup() {
  for p in $REMOTE $ISSUER $ADMIN $READER; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
. deploy/site-broker.sh  # free_port, waitfor

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$D/admin.key" -out "$D/admin.crt" -days 30 \
  -subj /CN=scangate-admin -addext subjectAltName=IP:127.0.0.1 2> "$D/openssl.err" || die "openssl: $(cat "$D/openssl.err")"
chmod 600 "$D/admin.key"
# The page on another host reaches the reader's TLS console with a client certificate that the
# console's client CA signed (here a self-signed one, its own CA), and the reader's operator secret.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$D/client.key" -out "$D/client.crt" -days 30 \
  -subj /CN=office-page 2>> "$D/openssl.err" || die "openssl: $(cat "$D/openssl.err")"
chmod 600 "$D/client.key"
head -c 18 /dev/urandom | base64 > "$D/console-secret"; chmod 600 "$D/console-secret"
mkdir -p "$D/frames"
qrencode -s 6 -m 4 -o "$D/frames/alice.png" "ADMIN-PAGE-ALICE" || die "qrencode"
qrencode -s 6 -m 4 -o "$D/frames/dan.png" "ADMIN-PAGE-DAN" || die "qrencode"  # unknown: enrolled on the page
printf 'text:ADMIN-PAGE-ALICE label=alice\n' > "$D/allow-list.txt"
# A site of 10,000 people (the default allow_list.entries_max): the people page pages and
# searches on the reader's side.
python3 -c 'import hashlib
for i in range(1, 9991): print("sha256:%s label=person-%05d" % (hashlib.sha256(b"P%d" % i).hexdigest(), i))' >> "$D/allow-list.txt"
# The site's issuer: its key stays with the issuer's page (below); the reader trusts its public half.
"$BIN" credential keygen --issuer "$D/issuer.key" --kid front-desk > "$D/keygen.out" 2>&1 || die "credential keygen: $(cat "$D/keygen.out")"
grep -v '^#' "$D/keygen.out" > "$D/trust.toml"
PORT=$(free_port); CPORT=$(free_port)
cat > "$D/config.toml" <<EOF
[camera]
source = "replay"
replay_path = "$D/frames"
replay_fps = ${RIG_FPS:-4}
[presence]
repeat_ms = 1000
[allow_list]
path = "$D/allow-list.txt"
[gpio]
backend = "sim"
relay_pulse_ms = 100
[credentials]
trust_file = "$D/trust.toml"
[log]
path = "$D/audit.db"
commit_interval_ms = 100
raw_payloads = true
[console]
listen = ["tls:127.0.0.1:$CPORT"]
tls_cert_file = "$D/admin.crt"
tls_key_file = "$D/admin.key"
tls_client_ca_file = "$D/client.crt"
secret_file = "$D/console-secret"
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
echo "admin password 12" | "$BIN" admin user add ada --role admin --config "$D/config.toml" 2>> "$D/users.err" || die "admin user add"

# The issuer's page: a second `scangate admin` on a config with no reader (no console socket),
# holding the issuer key; the same accounts.
IPORT=$(free_port)
cat > "$D/issuer.toml" <<EOF
[admin]
listen = "127.0.0.1:$IPORT"
tls_cert_file = "$D/admin.crt"
tls_key_file = "$D/admin.key"
users_file = "$D/admin-users"
issuer_key_file = "$D/issuer.key"
issuer_kid = "front-desk"
EOF

# The page on another host: a third `scangate admin`, no socket of the reader's, its TLS console.
RPORT=$(free_port)
cat > "$D/remote.toml" <<EOF
[admin]
listen = "127.0.0.1:$RPORT"
tls_cert_file = "$D/admin.crt"
tls_key_file = "$D/admin.key"
users_file = "$D/admin-users"
reader = "127.0.0.1:$CPORT"
reader_ca_file = "$D/admin.crt"
reader_cert_file = "$D/client.crt"
reader_key_file = "$D/client.key"
reader_secret_file = "$D/console-secret"
EOF

"$BIN" run --config "$D/config.toml" > "$D/journal" 2>&1 &
READER=$!
waitfor "$D/journal" "state started" 60 || die "the reader did not start: $(tail -3 "$D/journal")"
"$BIN" admin --config "$D/config.toml" > "$D/admin.log" 2>&1 &
ADMIN=$!
waitfor "$D/admin.log" "serving https://" 10 || die "scangate admin did not start: $(tail -3 "$D/admin.log")"
"$BIN" admin --config "$D/issuer.toml" > "$D/issuer.log" 2>&1 &
ISSUER=$!
waitfor "$D/issuer.log" "serving https://" 10 || die "the issuer's page did not start: $(tail -3 "$D/issuer.log")"
"$BIN" admin --config "$D/remote.toml" > "$D/remote.log" 2>&1 &
REMOTE=$!
waitfor "$D/remote.log" "serving https://" 10 || die "the page on another host did not start: $(tail -3 "$D/remote.log")"
}
