#!/bin/bash
# The rig's guest job, once per userland: guest-job.sh (it sets up vivid and gpio-sim and defines
# the helpers), then every other deploy/hil/guest-*.sh check script in name order, all sourced into
# this one shell so they share the devices and helpers; then the completion mark. $BIN is the
# service in this boot's userland ($USERLAND: bookworm is the host's root, trixie runs it chrooted
# in the Debian 13 root at /run/userland).
cd "$(dirname "$0")" || exit 1
. ./guest-job.sh
for script in guest-*.sh; do
  case $script in guest-run.sh | guest-job.sh) ;; *) . "./$script" ;; esac
done

# The service's libraries are this userland's: bookworm links libgpiod 1.6 (v1 API), trixie 2.2 (v2).
"$BIN" version > "$W/version.out" 2>&1
gpiod=$(grep -o 'libgpiod [0-9.]*' "$W/version.out")
case $USERLAND in bookworm) want='libgpiod 1.' ;; trixie) want='libgpiod 2.' ;; *) want='libgpiod' ;; esac
check "userland: the service ran on $USERLAND's libraries ($gpiod, want $want*)" grep -qF "$want" <<< "$gpiod"
[ -n "$feeder" ] && kill $feeder 2>/dev/null
echo done > "$W/guest-done"
