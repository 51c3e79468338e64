# Sourced by the fleet stage's scripts that run a broker and readers of their own
# (fleet-passback.sh, fleet-uses.sh, fleet-ha.sh); defines, with D the script's folder:
#   site_folder NAME             D, a new folder; at exit the broker and the readers (BROKER, NORTH,
#                                SOUTH, LISTENER) are killed and D removed (kept with KEEP=1)
#   free_port                    a port nothing listens on now (the kernel's choice, never fixed)
#   broker_start AUTH...         mosquitto on loopback at $PORT with the ACL in $D/acl and AUTH's
#                                lines (e.g. "allow_anonymous true"); sets BROKER; false unless it listens
#   site_broker TOPIC            PORT, the site's key ($D/site.key) and an anonymous loopback broker whose
#                                ACL lets each reader use TOPIC (under scangate/site/) and its own topics
#   reader_start JOURNAL CONFIG ARGS...   `$BIN run` appending to JOURNAL; sets PID; returns once
#                                it said "state started" (its decoder workers warm up first)
#   waitfor FILE PATTERN SECONDS true once FILE holds PATTERN (grep -E)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
broker_start() {
  {
    echo "per_listener_settings false"
    printf '%s\n' "$@"
    echo "listener $PORT 127.0.0.1"
    echo "acl_file $D/acl"
    echo "log_dest file $D/mosquitto.log"
    printf 'log_type %s\n' error warning notice
    [ "$(id -u)" = 0 ] && echo "user root"
  } > "$D/mosquitto.conf"
  mosquitto -c "$D/mosquitto.conf" 2> "$D/mosquitto.err" &
  BROKER=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
reader_start() {
  local journal=$1 config=$2 before
  shift 2
  before=$(grep -c "state started" "$journal" 2>/dev/null)
  "$BIN" run --config "$config" --quiet-edges "$@" >> "$journal" 2>&1 &
  PID=$!
  for _ in $(seq 300); do [ "$(grep -c "state started" "$journal" 2>/dev/null)" -gt "${before:-0}" ] && return 0; sleep 0.2; done
}
waitfor() {
  for _ in $(seq $(($3 * 5))); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done; return 1
}
site_folder() {
  D=$(mktemp -d "/tmp/scangate-$1.XXXXXX")
  BROKER=""; NORTH=""; SOUTH=""; LISTENER=""
  trap 'for p in $NORTH $SOUTH $BROKER $LISTENER; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"' EXIT
  trap 'exit 1' INT TERM HUP
}
site_broker() {
  PORT=$(free_port)
  printf '%s\n' "# Every reader may publish and read the site's $1, and only its own topics otherwise" \
    "# (anonymous here; a site uses certificates: docs/fleet.md)." "topic readwrite scangate/site/$1" "pattern readwrite scangate/%c/#" > "$D/acl"
  head -c 32 /dev/urandom > "$D/site.key"
  chmod 600 "$D/site.key"
  broker_start "allow_anonymous true"
}
