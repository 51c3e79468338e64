#!/bin/bash
# ScanGate on real kernel drivers without hardware: boots Debian 12's own kernel under qemu with
# the host's root file system shared read-only over 9p, and runs the real `scangate` binary
# (built on the host) inside the guest against
#   - vivid, a V4L2 test driver whose output is looped into its capture device (GREY and YUYV
#     640x480, QR frames injected through the output device),
#   - gpio-sim (built here, out of tree, from Debian's kernel source), whose sysfs shows what the
#     service drives on the relay and buzzer lines,
#   - a guest UART bridged to a host pty, for the serial console.
# Prints PASS/FAIL lines and "hil: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/hil/run.sh [path/to/scangate]     (default: .build/debug/scangate)
# Environment: HIL_CACHE (default /var/cache/scangate-hil: kernel + modules survive runs),
#   HIL_ACCEL kvm|tcg|auto, HIL_TIMEOUT (guest seconds, default 480), HIL_VERBOSE=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BIN=$(realpath "${1:-.build/debug/scangate}")
CACHE=${HIL_CACHE:-/var/cache/scangate-hil}
RUN=$(mktemp -d /tmp/scangate-hil.XXXXXX)
T0=$(date +%s)
log() { echo "[hil +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "FAIL hil: $*"; echo "hil: 0 passed, 1 failed"; exit 1; }
[ -x "$BIN" ] || die "no scangate binary at $BIN (build first)"
[ "$(uname -m)" = x86_64 ] || die "the rig boots an x86_64 Debian kernel; this machine is $(uname -m)"

# ---------------------------------------------------------------- host packages
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
KVER=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -1)
if [ -z "$KVER" ]; then
  $SUDO apt-get update -q >/dev/null
  KVER=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)$/\1/p' | head -1)
fi
[ -n "$KVER" ] || die "cannot find Debian's current kernel (apt-cache depends linux-image-amd64)"
KSERIES=$(echo "$KVER" | cut -d. -f1,2)
PKGS="qemu-system-x86 busybox-static cpio kmod xz-utils python3 make gcc libc6-dev linux-headers-$KVER
      linux-source-$KSERIES v4l-utils gpiod socat qrencode"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  log "installing $missing"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null \
    || die "apt-get install $missing failed"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is not available: the rig cannot run here"

# ---------------------------------------------------------------- kernel (cached)
mkdir -p "$CACHE" || die "cannot create $CACHE"
K=$CACHE/kernel-$KVER
if [ ! -e "$K/lib/modules/$KVER/modules.dep" ] || [ ! -s "$K/vmlinux" ]; then
  log "fetching linux-image-$KVER"
  rm -rf "$K" "$CACHE/dl"; mkdir -p "$K" "$CACHE/dl"
  ( cd "$CACHE/dl" && apt-get download "linux-image-$KVER" >/dev/null 2>&1 ) || die "apt-get download linux-image-$KVER"
  deb=$(ls "$CACHE"/dl/linux-image-"$KVER"_*.deb | head -1)
  dpkg-deb -x "$deb" "$K" || die "dpkg-deb -x"
  dpkg-deb -f "$deb" Version > "$K/VERSION"
  depmod -b "$K" "$KVER" || die depmod
  # The uncompressed ELF boots through PVH, skipping the xz decompressor (slow under TCG).
  python3 - "$K/boot/vmlinuz-$KVER" "$K/vmlinux" <<'EOF' || die "vmlinux extraction"
import lzma, sys
d = open(sys.argv[1], "rb").read()
i = d.find(b"\xfd7zXZ\x00")
out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[i:])
assert out[:4] == b"\x7fELF"
open(sys.argv[2], "wb").write(out)
EOF
  rm -rf "$CACHE/dl"
fi

# ---------------------------------------------------------------- gpio-sim (cached)
EXTRA=$K/lib/modules/$KVER/extra
if [ ! -e "$EXTRA/gpio-sim.ko" ]; then
  log "building gpio-sim and irq-sim against linux-headers-$KVER"
  srcver=$(dpkg-query -W -f='${Version}' "linux-source-$KSERIES")
  [ "$srcver" = "$(cat "$K/VERSION")" ] || echo "WARN hil: linux-source $srcver != kernel $(cat "$K/VERSION")"
  B=$CACHE/gpiosim-build; rm -rf "$B"; mkdir -p "$B"
  tar -xJf "/usr/src/linux-source-$KSERIES.tar.xz" -C "$B" --strip-components=1 \
    "linux-source-$KSERIES/drivers/gpio/gpio-sim.c" "linux-source-$KSERIES/drivers/gpio/gpiolib.h" \
    "linux-source-$KSERIES/kernel/irq/irq_sim.c" || die "extracting gpio-sim from linux-source"
  mv "$B/drivers/gpio/"* "$B/"; mv "$B/kernel/irq/irq_sim.c" "$B/irq_sim_core.c"
  # Debian builds without CONFIG_IRQ_SIM: build it as a module. irq_to_desc() is not exported;
  # generic_handle_irq() does the same dispatch.
  sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$B/irq_sim_core.c"
  grep -q 'generic_handle_irq(irqnum)' "$B/irq_sim_core.c" || die "irq_sim patch did not apply"
  printf '#include "irq_sim_core.c"\n#include <linux/module.h>\nMODULE_LICENSE("GPL");\n' > "$B/irq-sim.c"
  echo 'obj-m := irq-sim.o gpio-sim.o' > "$B/Makefile"
  make -s -C "/usr/src/linux-headers-$KVER" M="$B" modules > "$B/build.log" 2>&1 || { tail "$B/build.log"; die "module build"; }
  mkdir -p "$EXTRA"; cp "$B/irq-sim.ko" "$B/gpio-sim.ko" "$EXTRA/"
  depmod -b "$K" "$KVER" || die depmod
fi

# ---------------------------------------------------------------- initramfs
IR=$RUN/initramfs; mkdir -p "$IR"/{bb,modules,proc,sys,dev,host}
cp /bin/busybox "$IR/bb/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$IR/bb/$a"; done
for m in virtio_pci 9pnet_virtio 9p; do
  modprobe -d "$K" -S "$KVER" --show-depends $m | awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++' | while read -r p; do cp "$p" "$IR/modules/"; basename "$p" >> "$IR/modules/order"; done
cat > "$IR/init" <<'EOF'
#!/bb/sh
export PATH=/bb
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do insmod /modules/$m || echo "HIL: insmod $m failed"; done
arg() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" /proc/cmdline; }
W=$(arg hil.work); JOB=$(arg hil.job); K=$(arg hil.kernel)
O=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $O,ro,cache=loose hostroot /host || { echo "HIL: 9p mount failed"; poweroff -f; }
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
# devtmpfs has no /dev/fd: bash process substitution and /dev/stdin need these.
ln -sfn /proc/self/fd /host/dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -sfn /proc/self/fd/${i%%:*} /host/dev/${i#*:}; done
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run
# Mounted after the tmpfs: the kernel tree and the work folder (which holds the binary) are
# visible wherever they live on the host, /tmp included.
mkdir -p /host$K; mount -t 9p -o $O,ro hilkernel /host$K || echo "HIL: 9p kernel mount failed"
mkdir -p /host$W; mount -t 9p -o $O hilwork /host$W || echo "HIL: 9p work mount failed"
echo "HIL: guest ready uptime=$(cut -d' ' -f1 /proc/uptime)"
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb /bin/bash $JOB
echo "HIL: job exit=$?"
sync; poweroff -f
EOF
chmod +x "$IR/init"
# The core_pattern helper for the crash checks. It runs in this root, not in the job's chroot:
# it holds the dying process (and so its GPIO request) for 1.5 s, then logs the core.
cat > "$IR/core-sink" <<EOF
#!/bb/sh
/bb/sleep 1.5
echo "pid \$1 signal \$2 core \$(/bb/wc -c) bytes" >> /host$RUN/cores.txt
EOF
chmod +x "$IR/core-sink"
( cd "$IR" && find . | cpio -o -H newc --quiet ) | gzip -1 > "$RUN/initramfs.cpio.gz"

# ---------------------------------------------------------------- frames and config
python3 "$ROOT/deploy/hil/frames.py" "$RUN" || die "frame generation"
cp "$ROOT/deploy/hil/guest-job.sh" "$RUN/job.sh"
cp "$ROOT/deploy/hil/stall-thread.py" "$RUN/stall-thread.py"
# The guest sees the host root read-only but with its own tmpfs on /tmp and /run: the binary
# (and any library it loads from there) is copied into the work folder, which the guest mounts.
mkdir -p "$RUN/bin"; cp "$BIN" "$RUN/bin/scangate" || die "copying $BIN"
LIBPATH=""
for lib in $(ldd "$BIN" 2>/dev/null | awk '$3 ~ "^/(tmp|run)/" {print $3}'); do
  cp "$lib" "$RUN/bin/" && LIBPATH=$RUN/bin
done
{ echo "BIN='$RUN/bin/scangate'"; echo "W='$RUN'"; echo "K='$K'"
  [ -n "$LIBPATH" ] && echo "export LD_LIBRARY_PATH='$LIBPATH'"; } > "$RUN/env.sh"

# ---------------------------------------------------------------- libcamera on vimc (cached; guest-camera.sh)
# Debian's kernel ships no vimc.ko: built out of tree from linux-source like gpio-sim. libcamera's
# vimc pipeline handler needs its IPA module (libcamera-ipa) and udev (which devices exist, and
# hotplug); libcamerify is in libcamera-tools.
cam_missing=$(for p in libcamera-ipa libcamera-tools libcamera-v4l2 udev; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done | xargs)
if [ -n "$cam_missing" ]; then
  log "installing $cam_missing"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $cam_missing >/dev/null \
    || die "apt-get install $cam_missing failed"
fi
if [ ! -e "$EXTRA/vimc.ko" ]; then
  log "building vimc against linux-headers-$KVER"
  ( flock 9; [ -e "$EXTRA/vimc.ko" ] && exit 0
    B=$CACHE/vimc-build; V=$B/drivers/media/test-drivers/vimc; rm -rf "$B"; mkdir -p "$B"
    tar -xJf "/usr/src/linux-source-$KSERIES.tar.xz" -C "$B" --strip-components=1 --wildcards \
      "linux-source-$KSERIES/drivers/media/test-drivers/vimc/*" || exit 1
    sed -i 's/^obj-$(CONFIG_VIDEO_VIMC)/obj-m/' "$V/Makefile"
    make -s -C "/usr/src/linux-headers-$KVER" M="$V" modules > "$B/build.log" 2>&1 || { tail "$B/build.log"; exit 1; }
    mkdir -p "$EXTRA"; cp "$V/vimc.ko" "$EXTRA/vimc.ko.new" && mv "$EXTRA/vimc.ko.new" "$EXTRA/vimc.ko"
    depmod -b "$K" "$KVER" ) 9> "$CACHE/vimc.lock" || die "vimc module build"
fi
cp "$ROOT/deploy/hil/guest-camera.sh" "$RUN/guest-camera.sh"
tests=$(dirname "$BIN")/ScanGatePackageTests.xctest
[ -x "$tests" ] && echo "TESTS='$tests'" >> "$RUN/env.sh"

# ---------------------------------------------------------------- host side of the UART
socat UNIX-LISTEN:"$RUN/uart1.sock",unlink-early PTY,link="$RUN/ttyHOST",raw,echo=0 2>"$RUN/socat.log" &
SOCAT=$!
python3 "$ROOT/deploy/hil/uart-host.py" "$RUN/ttyHOST" "$RUN/uart-host.txt" > "$RUN/uart-host.log" 2>&1 &
UARTHOST=$!
trap 'kill $SOCAT $UARTHOST 2>/dev/null; wait 2>/dev/null' EXIT
for _ in $(seq 50); do [ -S "$RUN/uart1.sock" ] && break; sleep 0.1; done

# ---------------------------------------------------------------- boot
ACCEL=${HIL_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  ACCEL=tcg
  [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && ACCEL=kvm
fi
if [ "$ACCEL" = kvm ]; then ACC="-enable-kvm -cpu host"; else ACC="-accel tcg -cpu max"; fi
log "booting linux $KVER ($ACCEL) with scangate $BIN"
timeout "${HIL_TIMEOUT:-480}" qemu-system-x86_64 $ACC -M pc -smp 1 -m 1024 -nographic -no-reboot -net none \
  -kernel "$K/vmlinux" -initrd "$RUN/initramfs.cpio.gz" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1 hil.work=$RUN hil.job=$RUN/job.sh hil.kernel=$K" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs local,path="$K",mount_tag=hilkernel,security_model=none,readonly=on \
  -virtfs local,path="$RUN",mount_tag=hilwork,security_model=none \
  -serial mon:stdio -chardev socket,id=uart1,path="$RUN/uart1.sock" -serial chardev:uart1 \
  < /dev/null 2>&1 | tr -d '\r' | { if [ "${HIL_VERBOSE:-0}" = 1 ]; then tee "$RUN/console.log"; else cat > "$RUN/console.log"; fi; }
qemu=${PIPESTATUS[0]}
log "guest finished (qemu exit $qemu)"

# ---------------------------------------------------------------- verdict
passed=0; failed=0
result() { echo "$1 $2"; if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
[ "$qemu" = 0 ] && result PASS "boot: qemu exited cleanly ($ACCEL)" || result FAIL "boot: qemu exit $qemu (124 = timeout); see $RUN/console.log"
[ -e "$RUN/guest-done" ] && result PASS "guest: job ran to completion" || result FAIL "guest: job did not complete"
if [ -s "$RUN/results.txt" ]; then
  while read -r status rest; do result "$status" "$rest"; done < "$RUN/results.txt"
fi
if grep -q "OK status" "$RUN/uart-host.txt" 2>/dev/null; then
  result PASS "serial console: STATUS from the host pty over the guest's ttyS1 got 'OK status'"
else
  result FAIL "serial console: no STATUS reply on the host pty ($(head -c 200 "$RUN/uart-host.txt" 2>/dev/null))"
fi
[ $((passed + failed)) -ge 14 ] || result FAIL "guest: fewer checks than expected ran"
if [ $failed != 0 ]; then
  echo "--- guest console (tail)"; tail -40 "$RUN/console.log"
  for f in "$RUN"/*.out; do [ -e "$f" ] && { echo "--- $f (tail)"; tail -15 "$f"; }; done
fi
log "done in $(( $(date +%s) - T0 ))s; work folder $RUN"
echo "hil: $passed passed, $failed failed"
[ $failed = 0 ]
