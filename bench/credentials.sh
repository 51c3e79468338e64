#!/bin/bash
# Signed passes: verification time per pass, frame-to-decision and frame-to-edge with signed and
# rotating passes against the same scenes on the allow-list, and the size of the QR code a
# typical pass needs against lockoff's format (base45 of user id, expiry, type, 4-byte nonce and
# a 10-byte keyed SHAKE-256 digest: 24 bytes). Usage: bench/credentials.sh SCANGATE OUT_DIR [FRAMES]
set -euo pipefail
B=$1; OUT=$2; FRAMES=${3:-30000}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$B" credential keygen --issuer "$W/issuer.key" --kid hq-2026 > "$W/trust.toml"
SITE=$("$B" credential keygen --site "$W/site.key" | grep -o '[0-9a-f]\{64\}')
"$B" credential issue --key "$W/issuer.key" --kid hq-2026 --sub emp-0042 --label "Alice Example" --zones main-door \
  --valid 90d --png "$W/static.png" > "$W/static.txt" 2> "$W/static.size"
"$B" credential issue --key "$W/issuer.key" --kid hq-2026 --sub emp-0042 --label "Alice Example" --zones main-door \
  --valid 90d --rotating --site-public "$SITE" --png "$W/rotating.png" > "$W/rotating.txt" 2> "$W/rotating.size"
{
  echo "# verification (scangate credential show --repeat 20000, inspect mode, one core)"
  for kind in static rotating; do
    printf '%s: ' "$kind"
    "$B" credential show --trust "$W/trust.toml" --site-key "$W/site.key" --repeat 20000 "$(cat "$W/$kind.txt")" 2>&1 >/dev/null \
      | grep verification
  done
  echo "# QR code size (error correction M)"
  for kind in static rotating; do
    echo "$kind SG1 pass: $(wc -c < "$W/$kind.txt") characters, $(grep -o 'QR version.*' "$W/$kind.size")"
  done
  # lockoff's token: struct >IIH (10 bytes) + 4-byte nonce + 10-byte digest = 24 bytes, base45 → 36 characters.
  LOCKOFF=$(python3 -c "
A='0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ \$%*+-./:'
import os
b=os.urandom(24); out=[]
for i in range(0,24,2):
    v=b[i]<<8|b[i+1]; out+=[A[v%45],A[v//45%45],A[v//2025]]
print(''.join(out))")
  modules=$(qrencode -l M -t ASCII -m 0 "$LOCKOFF" | head -1 | tr -d '\n' | wc -c)
  echo "lockoff token (shared-secret digest, no signature): ${#LOCKOFF} characters, QR $((modules / 2))×$((modules / 2)) modules"
} > "$OUT/credentials.txt"
for passes in allow-list signed rotating; do
  "$B" soak --frames "$FRAMES" --passes $passes > "$OUT/soak-$passes.csv"
done
cat "$OUT/credentials.txt"
grep -h "frame-to" "$OUT"/soak-{allow-list,signed,rotating}.csv
