# Sourced by deploy/arm64/build.sh, smoke.sh and test.sh (after CACHE and SUITE are set).
# The arm64 root and the build's folder: a root made by mmdebstrap's extract variant
# (SCANGATE_ARM64_EXTRACT=1) is kept apart from a debootstrap'd one, which can make the .deb.
ROOT=$CACHE/$SUITE-arm64
[ "${SCANGATE_ARM64_EXTRACT:-0}" = 1 ] && ROOT=$CACHE/$SUITE-arm64-extract
WORK=$CACHE/work-$SUITE # src: a copy of the working tree; scratch: SwiftPM's
# The mirror this machine's apt uses (deb.debian.org unless sources say otherwise).
default_mirror() {
  local m
  m=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}
# Mounts made by the script (`mnt`, as mount(8) takes its arguments), undone in reverse order on
# every exit.
MOUNTS=()
mnt() { mount "$@"; MOUNTS+=("${*: -1}"); }
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || true; done
}
trap cleanup EXIT
