#!/bin/bash
# Builds the Debian package of ScanGate for the Debian release this runs on (bookworm, or trixie
# inside deploy/trixie/run.sh): dist/scangate_<version>+<codename>_<arch>.deb. The binary is
# built with the Swift standard library linked in statically; Depends is computed from the
# libraries it links, with the versions this machine has.
# Usage: deploy/package.sh [SCRATCH_PATH]   (SCANGATE_PREBUILT=BINARY: package that binary instead)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH
SCRATCH=${1:-.build}
PKG_VERSION=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/Base/Core/Version.swift)

CODENAME=$(. /etc/os-release; echo "${VERSION_CODENAME:-unknown}")
ARCH=$(dpkg --print-architecture)
if [ -n "${SCANGATE_PREBUILT:-}" ]; then
  # A binary built elsewhere for this machine's architecture (deploy/arm64/build.sh runs this
  # script in an arm64 root under qemu-user): packaged as it is, not built here.
  BIN=$SCANGATE_PREBUILT
else
  swift build -c release --static-swift-stdlib --product scangate --scratch-path "$SCRATCH" >/dev/null
  BIN="$SCRATCH/release/scangate"
fi
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
P=$STAGE/scangate
install -D -m 0755 "$BIN" "$P/usr/bin/scangate"
strip --strip-unneeded "$P/usr/bin/scangate"
install -D -m 0644 deploy/scangate.service "$P/lib/systemd/system/scangate.service"
install -D -m 0644 deploy/scangate-admin.service "$P/lib/systemd/system/scangate-admin.service"
install -D -m 0644 deploy/99-scangate.rules "$P/lib/udev/rules.d/99-scangate.rules"
# 0640, group scangate (postinst): the configuration names every secret file, not for other local
# users. The allow-list is made by postinst in the state directory from this sample (0640
# scangate:scangate: text: entries are working passes), so that the service may edit it.
install -D -m 0640 config.toml "$P/etc/scangate/config.toml"
install -D -m 0644 deploy/allow-list.txt "$P/usr/share/scangate/allow-list.txt"
install -D -m 0644 README.md "$P/usr/share/doc/scangate/README.md"
for doc in docs/*.md; do install -D -m 0644 "$doc" "$P/usr/share/doc/scangate/$(basename "$doc")"; done

# Depends: the package of every shared library the binary links (ldd), at this machine's version.
depends=$(ldd "$BIN" | awk '/=> \//{print $3}' | while read -r lib; do
  real=$(readlink -f "$lib")
  pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$pkg" ] || pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$pkg" ] || continue
  version=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//; s/+b[0-9]*$//')
  echo "$pkg (>= $version)"
done | sort -u | paste -sd, | sed 's/,/, /g')
mkdir -p "$P/DEBIAN"
cat > "$P/DEBIAN/control" <<CONTROL
Package: scangate
Version: $PKG_VERSION+$CODENAME
Architecture: $ARCH
Maintainer: ScanGate maintainers <scangate@localhost>
Section: misc
Priority: optional
Depends: $depends, adduser, openssl
Recommends: systemd, udev
Description: camera barcode reader for doors and turnstiles
 ScanGate turns a V4L2 camera on a single-board computer into a door-access or turnstile
 reader: it decodes QR codes and other barcodes, checks them against an allow-list file, and
 drives a relay and a buzzer through libgpiod. Fixed memory, a technician console over serial
 and TCP, and a tamper-evident audit log. Built for Debian $CODENAME.
CONTROL
printf '/etc/scangate/config.toml\n' > "$P/DEBIAN/conffiles"
install -m 0755 deploy/debian/postinst "$P/DEBIAN/postinst"
install -m 0755 deploy/debian/prerm "$P/DEBIAN/prerm"
install -m 0755 deploy/debian/postrm "$P/DEBIAN/postrm"
mkdir -p dist
OUT=dist/scangate_${PKG_VERSION}+${CODENAME}_${ARCH}.deb
dpkg-deb --root-owner-group --build "$P" "$OUT" >/dev/null
echo "$OUT"
