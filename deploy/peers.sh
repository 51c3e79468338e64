#!/bin/bash
# The independent implementations the tests check ScanGate against, from PyPI, in one venv
# (never product code): pycose + cbor2 (COSE_Sign1 / CWT), pyotp (RFC 6238 TOTP), PyNaCl (sealed
# boxes), libosdp (an OSDP control panel), paho-mqtt (an MQTT client), selenium (drives Debian's
# chromium through chromium-driver: the web admin page), prometheus-client (parses /metrics). Idempotent;
# prints the venv's python.
#   PY=$(deploy/peers.sh)   then   "$PY" script.py
# The venv lives in /var/cache/scangate-peers (SCANGATE_PEERS overrides), outside the checkout.
set -euo pipefail
VENV=${SCANGATE_PEERS:-/var/cache/scangate-peers}/venv
# pycose 1.1.0 cannot decode any message with cbor2 >= 6 (arrays come back as tuples): pinned.
REQS="pycose==1.1.0 cbor2<6 pyotp==2.9.0 libosdp==3.2.9 paho-mqtt==2.1.0 pynacl==1.5.0 selenium==4.27.1 prometheus-client==0.21.1"
stamp="$VENV/.scangate-reqs"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$REQS" ]; then
  echo "peers: installing $REQS into $VENV" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  /usr/bin/python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install -q --disable-pip-version-check $REQS >&2
  echo "$REQS" > "$stamp"
fi
echo "$VENV/bin/python"
