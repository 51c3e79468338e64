#!/bin/bash
# Installs what ScanGate needs to build, test and run on Debian 12 (Raspberry Pi OS bookworm),
# from Debian's archive only. Idempotent: does nothing when everything is there.
# Run as root (or through sudo).
set -euo pipefail

PACKAGES=(
  pkg-config
  libzxing-dev         # the barcode engine (zxing-cpp 1.4 on bookworm)
  libv4l-dev           # camera capture (libv4l2)
  libgpiod-dev         # GPIO character device (libgpiod 1.6, v1 API)
  libevdev-dev         # the PIN keypad: Linux input event devices (libevdev)
  libturbojpeg0-dev    # JPEG files (and the tests' JPEG encoder)
  libjpeg62-turbo-dev  # MJPEG camera frames (libjpeg API, per-frame memory from an arena)
  libstb-dev           # PNG/PNM/GIF files, PNG snapshots
  libsqlite3-dev       # the audit log
  libsodium-dev        # SHA-256 of payloads, constant-time compares
  libseccomp-dev       # the decoder worker's system call filter (docs/decoder.md)
  libtomlplusplus-dev  # config.toml
  libqrencode-dev      # QR fixtures for tests and the demo
  qrencode             # QR frames for the console stages (deploy/console-*.sh)
  socat                # the serial console's pty pair (deploy/console-tools.sh)
  picocom              # a technician's serial terminal, under test (deploy/console-tools.sh)
  screen               # another one
  tmux                 # drives picocom and screen, reads their screens
  sqlite3              # reads the audit log independently (deploy/console-abuse.sh)
  python3              # the abuse run's clients (deploy/console-abuse.py, standard library only)
  libssl-dev           # TLS on console listeners beyond loopback (OpenSSL libssl/libcrypto)
  openssl              # tests: the test CA and certificates, s_client as an independent TLS client
  libcbor-dev          # signed credentials: CBOR (COSE_Sign1, CWT claims)
  nettle-dev           # signed credentials: HMAC-SHA1 for TOTP (no allocation per call)
  libcairo2-dev        # a pass's printable sheet (PDF and PNG from one drawing, credential issue --sheet)
  tzdata               # schedules in the reader's local time zone
  libmosquitto-dev     # the fleet link (MQTT client library)
  mosquitto            # tests: a real broker, started per test run
  mosquitto-clients    # tests: mosquitto_sub/pub beside the independent client
  zbar-tools           # tests: zbarimg, an independent decoder, reads the fleet's snapshot PNGs and the pass sheets
  poppler-utils        # tests: pdftoppm, pdftotext, pdfinfo read the pass sheets' PDFs (PassSheetTests)
  libcamera-dev        # the libcamera frame source (Pi camera modules); optional at build time
  libmicrohttpd-dev    # the web admin page's HTTPS server (libmicrohttpd, TLS through GnuTLS)
  python3-venv         # tests: the PyPI peers' venv (deploy/peers.sh)
  chromium             # tests: the web admin page in a real browser (deploy/admin-test.sh)
  chromium-driver      # tests: selenium drives it (never a downloaded browser or driver)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Swift: 6.2 or later (InlineArray and integer generic parameters: docs/arm64.md, "Which Swift").
# Debian's own swiftlang is taken when it is new enough (6.2.3 in unstable; Debian 13 has 6.0.3).
SWIFT=$(command -v swift || { [ -x /opt/swift/usr/bin/swift ] && echo /opt/swift/usr/bin/swift; } || true)
candidate=""
if [ -z "$SWIFT" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  candidate=$(apt-cache policy swiftlang 2>/dev/null | sed -n 's/^ *Candidate: *//p')
  if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && dpkg --compare-versions "$candidate" ge 6.2; then
    echo "setup: installing Debian's swiftlang $candidate"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends swiftlang && SWIFT=$(command -v swift)
  fi
fi
if [ -z "$SWIFT" ]; then
  cat >&2 <<EOF
setup: no Swift toolchain found (swift on PATH or /opt/swift). ScanGate needs Swift 6.2 or later;
this Debian's swiftlang is ${candidate:-absent}${candidate:+ (too old)}. Install swift.org's toolchain for Debian 12 and
$(uname -m) from https://www.swift.org/install/linux/ into /opt/swift (so /opt/swift/usr/bin/swift
exists), then run this again; or build on another machine with deploy/arm64/build.sh (docs/arm64.md).
EOF
  exit 1
fi
version=$("$SWIFT" --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -1)
if [ -n "$version" ] && ! dpkg --compare-versions "$version" ge 6.2; then
  echo "setup: $SWIFT is Swift $version; ScanGate needs 6.2 or later (docs/arm64.md, \"Which Swift\")" >&2
  exit 1
fi
echo "setup: ok ($(dpkg-query -W -f='libzxing-dev ${Version}, ' libzxing-dev)$(dpkg-query -W -f='libgpiod-dev ${Version}' libgpiod-dev))"
