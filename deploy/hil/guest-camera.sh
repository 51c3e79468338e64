#!/bin/bash
# Runs inside the rig's guest, after the V4L2 checks: the libcamera source on the kernel's vimc
# virtual camera (vimc.ko built out of tree by run.sh; libcamera's vimc pipeline handler is
# compiled into Debian's libcamera), camera loss and reopen by unbinding and rebinding the
# driver, libcamera's allocations per frame, and the `libcamerify scangate run` fallback.
# Appends PASS/FAIL lines to $W/results.txt.
. "$(dirname "$0")/env.sh"
# Once, on the host's userland: the guest's udev and libcamera runtime are bookworm's.
[ "${USERLAND:-bookworm}" = bookworm ] || return 0 2>/dev/null || exit 0
res=$W/results.txt
pass() { echo "PASS $*" | tee -a "$res"; }
fail() { echo "FAIL $*" | tee -a "$res"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
waitfor() {  # file pattern seconds
  local end=$(( $(date +%s) + $3 ))
  while [ "$(date +%s)" -le $end ]; do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
  return 1
}
summary() { grep -o "summary: [0-9]* frames in [0-9.]* ms ([0-9.]* fps)" "$1" | head -1; }
frames_of() { summary "$1" | awk '{print $2}'; }
fps_of() { summary "$1" | sed 's/.*(\([0-9.]*\) fps)/\1/'; }

# libcamera lists only devices udev has initialized, and learns of a camera's removal from udev:
# the guest runs udevd for these checks, as a reader's system does (systemd-udevd).
# (The job runs in a chroot of the host's root: systemd's tools ignore requests there unless told.)
export SYSTEMD_IGNORE_CHROOT=1
udevd=""
if [ -x /lib/systemd/systemd-udevd ]; then
  /lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null && udevd=1
fi
check "udev: systemd-udevd runs in the guest (libcamera's device enumeration and hotplug)" test -n "$udevd"
udev_db() { [ -n "$udevd" ] && udevadm trigger --action=add --subsystem-match=media --subsystem-match=video4linux && udevadm settle -t 30; }
modprobe -d "$K" vimc || { fail "vimc: modprobe (vimc.ko built out of tree from linux-source)"; return 0; }
dev=""
for _ in $(seq 100); do dev=$(ls /sys/bus/platform/drivers/vimc 2>/dev/null | grep '^vimc'); [ -n "$dev" ] && break; sleep 0.1; done
check "vimc: modprobe (out of tree), platform device '$dev' bound" test -n "$dev"
sleep 1  # the media graph's nodes appear in devtmpfs
udev_db

"$BIN" probe > "$W/camera-probe.out" 2>&1
check "libcamera probe: lists vimc's camera with its stream modes ($(grep -m1 'vimc' "$W/camera-probe.out" | xargs))" \
  bash -c "grep -q 'platform/vimc' '$W/camera-probe.out' && grep -q 'stream BGR888' '$W/camera-probe.out'"

: > "$W/allow-list.txt"
camconfig() {  # name extra-camera-lines
  cat > "$W/$1.toml" <<EOF
[camera]
source = "libcamera"
width = 640
height = 480
fps = 30
reopen_backoff_ms_max = 500
frame_timeout_ms = 3000
$2
[decoder]
variant_mode = "upright"
# The camera checks decode in the service (each run starts in seconds under TCG); the workers
# decode on vivid in guest-job.sh's YUYV run, and natively in DecoderWorkerTests and the fault stage.
isolation = "inline"
[allow_list]
path = "$W/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = "/tmp/$1.db"
[console]
listen = []
EOF
}

# ---------------------------------------------------------------- streaming, rate
camconfig lc 'exposure_us = 4000'
timeout 180 "$BIN" run --config "$W/lc.toml" --frames 120 > "$W/lc.out" 2>&1; rc=$?
check "libcamera: 120 frames from vimc through the loop (exit $rc; $(summary "$W/lc.out"))" \
  test "$rc" = 0 -a "$(frames_of "$W/lc.out")" = 120
fps=$(fps_of "$W/lc.out"); fps=${fps%.*}
check "libcamera: frame rate ${fps:-0} fps over the run, camera open included (vimc paces itself: ~60 fps at most; want >= 5 under TCG)" \
  test "${fps:-0}" -ge 5

# ---------------------------------------------------------------- allocations per frame (the test binary, when present)
# On bookworm the test binary is always there (run.sh copies it beside the service): a missing one fails.
[ "$USERLAND" = bookworm ] && [ ! -x "${TESTS:-}" ] && fail "libcamera allocations: the test binary is missing in the guest ('${TESTS:-}')"
if [ -x "${TESTS:-}" ]; then
  SCANGATE_LIBCAMERA_CAMERA=0 timeout 240 "$TESTS" --testing-library swift-testing --filter LibcameraAllocationTests \
    > "$W/camera-alloc.out" 2>&1; rc=$?
  check "libcamera allocations measured ($(grep -o 'allocations per frame: .*' "$W/camera-alloc.out" | head -1))" \
    bash -c "[ $rc = 0 ] && grep -q 'allocations per frame' '$W/camera-alloc.out'"
fi

# ---------------------------------------------------------------- loss and reopen: unbind and rebind vimc
n=$(( ${fps:-5} * 3 + 60 ))  # more frames than come before the loss: the run ends only if frames resume
camconfig loss ''
"$BIN" run --config "$W/loss.toml" --frames $n > "$W/loss.out" 2>&1 &
pid=$!
check "camera loss: the libcamera source started" waitfor "$W/loss.out" "state started" 90
sleep 2
echo "$dev" > /sys/bus/platform/drivers/vimc/unbind
check "camera loss: unbinding vimc makes the service report the camera lost" waitfor "$W/loss.out" "fault camera-lost" 30
check "camera loss: the service keeps running, degraded (no exit)" kill -0 $pid
sleep 1.5
echo "$dev" > /sys/bus/platform/drivers/vimc/bind
check "camera loss: the camera is reopened through libcamera when vimc comes back" waitfor "$W/loss.out" "state camera-restored" 60
for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.2; done
kill -0 $pid 2>/dev/null && { kill -TERM $pid; sleep 2; }
wait $pid; rc=$?
check "camera loss: frames resumed in the same process until its $n-frame limit (exit $rc; $(summary "$W/loss.out"))" \
  bash -c "[ $rc = 0 ] && [ '$(frames_of "$W/loss.out")' = $n ] && grep -q '1 camera losses' '$W/loss.out'"

# ---------------------------------------------------------------- the libcamerify fallback (V4L2 source over libcamera)
node=""
for v in /sys/class/video4linux/video*; do grep -q "RGB/YUV Capture" "$v/name" 2>/dev/null && node=/dev/$(basename "$v"); done
if command -v libcamerify >/dev/null && [ -n "$node" ]; then
  cat > "$W/compat.toml" <<EOF
[camera]
source = "v4l2"
device = "$node"
width = 640
height = 480
[decoder]
isolation = "inline"
[allow_list]
path = "$W/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = "/tmp/compat.db"
[console]
listen = []
EOF
  # Under libcamerify the V4L2 source drives the node through the C library's open, ioctl and
  # mmap (libv4l2's raw system calls would bypass the LD_PRELOAD layer), and reads the format the
  # compatibility layer offers: RGB from vimc's pipeline (the green bytes as luma), YUV 4:2:0 on a Pi.
  timeout 90 libcamerify "$BIN" run --config "$W/compat.toml" --frames 30 > "$W/compat.out" 2>&1; rc=$?
  fmt=$(grep -o "RGB3\|BGR3\|YU12\|NV12\|NV21" "$W/compat.out" | head -1)
  echo "guest: libcamerify on $node: exit $rc: $(grep -v '^#' "$W/compat.out" | head -3 | tr '\n' ' ')"
  check "libcamerify fallback: 'libcamerify scangate run' on $node streamed its 30 frames through libcamera's V4L2 compatibility layer (${fmt:-format not shown}; exit $rc; $(summary "$W/compat.out"))" \
    bash -c "[ $rc = 0 ] && [ '$(frames_of "$W/compat.out")' = 30 ] && ! grep -q 'fault camera-lost' '$W/compat.out'"
else
  fail "libcamerify fallback: no libcamerify ($(command -v libcamerify)) or no vimc capture node ($node)"
fi
udevadm control --exit 2>/dev/null
