# Sourced by deploy/arm64/build.sh, smoke.sh and test.sh: mounts made by the script (`mnt`, as
# mount(8) takes its arguments), undone in reverse order on every exit.
MOUNTS=()
mnt() { mount "$@"; MOUNTS+=("${*: -1}"); }
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || true; done
}
trap cleanup EXIT
