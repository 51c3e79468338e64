#!/bin/bash
# ScanGate on real kernel drivers without hardware: boots Debian 12's own kernel under qemu with
# the host's root file system shared read-only over 9p, and runs the real `scangate` binary
# (built on the host) inside the guest against
#   - vivid, a V4L2 test driver whose output is looped into its capture device (GREY and YUYV
#     640x480, QR frames injected through the output device),
#   - gpio-sim (built here, out of tree, from Debian's kernel source), whose sysfs shows what the
#     service drives on the relay and buzzer lines,
#   - a guest UART bridged to a host pty, for the serial console.
# The guest boots once per userland: "bookworm" runs the given binary on the host's root (Debian
# 12: libgpiod 1.6, the v1 API); "trixie" runs a binary built against Debian 13 (libgpiod 2.2,
# the v2 API) chrooted in the trixie root of deploy/trixie/run.sh, shared read-only over 9p, with
# the guest's /proc, /sys, /dev and /tmp. The same guest check scripts run in both boots (their
# tools, v4l2-ctl and the shell, are the host's; only the service changes userland), and every
# PASS/FAIL line names its userland.
# Prints PASS/FAIL lines and "hil: N passed, M failed"; exits non-zero unless all passed.
#
# Usage: deploy/hil/run.sh [path/to/scangate]     (default: .build/debug/scangate)
# Environment: HIL_CACHE (default /var/cache/scangate-hil: kernel + modules survive runs),
#   HIL_ACCEL kvm|tcg|auto, HIL_TIMEOUT (guest seconds per boot, default 1200), HIL_VERBOSE=1,
#   HIL_PARALLEL (1: the userlands' guests boot side by side, the default with 2 cores or more),
#   HIL_USERLANDS (default "bookworm trixie"), TRIXIE_ROOT (default
#   /var/cache/scangate-trixie/root), HIL_TRIXIE_BIN (a scangate built against trixie; default:
#   built from this tree by deploy/trixie/run.sh, which makes the trixie root when it is missing).
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

# ---------------------------------------------------------------- userlands and their binaries
passed=0; failed=0
result() { echo "$1 $2"; if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
USERLANDS=${HIL_USERLANDS:-bookworm trixie}
TRIXIE_ROOT=${TRIXIE_ROOT:-/var/cache/scangate-trixie/root}
command -v swift >/dev/null 2>&1 || export PATH=/opt/swift/usr/bin:$PATH
SWIFT_DIR=${SWIFT_DIR:-$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")}
TRIXIE_BIN=""
trixie() {  # sets TRIXIE_BIN, or why="the reason it cannot run"
  TRIXIE_BIN=${HIL_TRIXIE_BIN:-}
  if [ -z "$TRIXIE_BIN" ]; then
    log "building scangate against trixie's libraries (deploy/trixie/run.sh)"
    TRIXIE_ROOT=$TRIXIE_ROOT "$ROOT/deploy/trixie/run.sh" --run true > "$RUN/trixie-build.log" 2>&1 \
      || { why="deploy/trixie/run.sh could not build scangate: $(grep -m1 FAIL "$RUN/trixie-build.log") (log: $RUN/trixie-build.log)"; return; }
    TRIXIE_BIN=$TRIXIE_ROOT/root/scangate-build/debug/scangate
  fi
  [ -x "$TRIXIE_BIN" ] || { why="no scangate built against trixie at $TRIXIE_BIN"; return; }
  [ -x "$TRIXIE_ROOT/usr/bin/env" ] || { why="no trixie root at $TRIXIE_ROOT"; return; }
  [ -d "$TRIXIE_ROOT$SWIFT_DIR" ] || why="the trixie root has no mount point for the Swift runtime at $SWIFT_DIR"
}
for u in $USERLANDS; do
  case $u in
    bookworm) ;;
    trixie) why=""; trixie; [ -z "$why" ] || { result FAIL "trixie: $why"; USERLANDS=${USERLANDS/trixie/}; } ;;
    *) die "unknown userland '$u' in HIL_USERLANDS (bookworm, trixie)" ;;
  esac
done

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
W=$(arg hil.work); JOB=$(arg hil.job); K=$(arg hil.kernel); U=$(arg hil.userland); SW=$(arg hil.swift)
O=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $O,ro,cache=loose hostroot /host || { echo "HIL: 9p mount failed"; poweroff -f; }
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
# devtmpfs has no /dev/fd: bash process substitution and /dev/stdin need these.
ln -sfn /proc/self/fd /host/dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -sfn /proc/self/fd/${i%%:*} /host/dev/${i#*:}; done
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run
ip link set lo up  # the console's loopback listener
# Mounted after the tmpfs: the kernel tree and the work folder (which holds the binary) are
# visible wherever they live on the host, /tmp included.
mkdir -p /host$K; mount -t 9p -o $O,ro hilkernel /host$K || echo "HIL: 9p kernel mount failed"
mkdir -p /host$W; mount -t 9p -o $O hilwork /host$W || echo "HIL: 9p work mount failed"
# Another userland for the service: its root read-only at /run/userland in the job's root, with
# this guest's /proc, /sys, /dev, /tmp (the work folder included) and the Swift runtime.
if [ -n "$U" ]; then
  T=/host/run/userland; mkdir -p $T
  mount -t 9p -o $O,ro,cache=loose hiluserland $T || echo "HIL: 9p userland mount failed"
  mount -t proc proc $T/proc; mount -t sysfs sys $T/sys; mount -o bind /host/dev $T/dev
  mount -o rbind /host/tmp $T/tmp; mount -t tmpfs run $T/run
  [ -n "$SW" ] && { mount -o bind /host$SW $T$SW || echo "HIL: Swift runtime bind failed"; }
  echo "HIL: userland $U at /run/userland: $(. $T/etc/os-release; echo $PRETTY_NAME)"
fi
echo "HIL: guest ready uptime=$(cut -d' ' -f1 /proc/uptime)"
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb /bin/bash $JOB
echo "HIL: job exit=$?"
sync; poweroff -f
EOF
chmod +x "$IR/init"
# The core_pattern helper for the crash checks. It runs in this root, not in the job's chroot:
# it holds the dying process (and so its GPIO request) for 1.5 s, then logs the core.
cat > "$IR/core-sink" <<'EOF'
#!/bb/sh
/bb/sleep 1.5
W=$(/bb/sed -n "s/.* hil.work=\([^ ]*\).*/\1/p" /proc/cmdline)
echo "pid $1 signal $2 core $(/bb/wc -c) bytes" >> /host$W/cores.txt
EOF
chmod +x "$IR/core-sink"
( cd "$IR" && find . | cpio -o -H newc --quiet ) | gzip -1 > "$RUN/initramfs.cpio.gz"

# ---------------------------------------------------------------- frames, scripts, the allocation counter
python3 "$ROOT/deploy/hil/frames.py" "$RUN" || die "frame generation"
gcc -O2 -shared -fPIC -pthread -o "$RUN/alloc-count.so" "$ROOT/deploy/hil/alloc-count.c" \
  || die "building the allocation counter (deploy/hil/alloc-count.c)"
g++ -O0 -pthread -o "$RUN/alloc-count-check" "$ROOT/deploy/hil/alloc-count-check.cpp" -ldl \
  || die "building the allocation counter's check (deploy/hil/alloc-count-check.cpp)"
gcc -O2 -o "$RUN/gpio-chatter" "$ROOT/deploy/hil/gpio-chatter.c" || die "building deploy/hil/gpio-chatter.c"
gcc -O2 -o "$RUN/uinput-keypad" "$ROOT/deploy/hil/uinput-keypad.c" || die "building deploy/hil/uinput-keypad.c"

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

# One work folder per userland (the guest's writable 9p export): frames, the guest scripts, the
# binary (and any library it loads from /tmp or /run, which the guest does not see).
prepare() {  # userland binary
  local w=$RUN/$1
  mkdir -p "$w/bin"
  cp "$RUN"/*.grey "$RUN"/*.yuyv "$RUN"/*.mjpeg "$RUN/allow-list.txt" "$w/" 2>/dev/null
  cp "$ROOT"/deploy/hil/guest-*.sh "$ROOT"/deploy/hil/{stall-thread,frames,wiegand-trace}.py "$w/"
  cp "$RUN/alloc-count.so" "$RUN/alloc-count-check" "$RUN/gpio-chatter" "$RUN/uinput-keypad" "$w/bin/"
  local libpath="" exe=$w/bin/scangate
  if [ "$1" = bookworm ]; then
    cp "$2" "$exe" || die "copying $2"
    for lib in $(ldd "$2" 2>/dev/null | awk '$3 ~ "^/(tmp|run)/" {print $3}'); do
      cp "$lib" "$w/bin/" && libpath=$w/bin
    done
  else
    # The service runs chrooted in the userland's root (exec all the way: the job's $! is its pid).
    cp "$2" "$w/bin/scangate.$1" || die "copying $2"
    printf '#!/bin/sh\nexec chroot /run/userland %s "$@"\n' "$w/bin/scangate.$1" > "$exe"
    chmod +x "$exe"
  fi
  { echo "BIN='$exe'"; echo "W='$w'"; echo "K='$K'"; echo "USERLAND='$1'"
    echo "ALLOC_SO='$w/bin/alloc-count.so'"; echo "ALLOC_CHECK='$w/bin/alloc-count-check'"
    [ -n "$libpath" ] && echo "export LD_LIBRARY_PATH='$libpath'"
    # The test binary beside it (bookworm: the libcamera allocation tests run in the guest), copied
    # like the service: the checkout may be under /tmp, which the guest does not see.
    local tests; tests=$(dirname "$2")/ScanGatePackageTests.xctest
    if [ "$1" = bookworm ] && [ -x "$tests" ]; then cp "$tests" "$w/bin/" && echo "TESTS='$w/bin/ScanGatePackageTests.xctest'"; fi
  } > "$w/env.sh"
}

# ---------------------------------------------------------------- boot
ACCEL=${HIL_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  ACCEL=tcg
  [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && ACCEL=kvm
fi
if [ "$ACCEL" = kvm ]; then ACC="-enable-kvm -cpu host"; else ACC="-accel tcg -cpu max"; fi

boot() {  # userland
  local u=$1 w=$RUN/$1 extra=() append=""
  if [ "$u" = bookworm ]; then prepare "$u" "$BIN"; else
    prepare "$u" "$TRIXIE_BIN"
    extra=(-virtfs "local,path=$TRIXIE_ROOT,mount_tag=hiluserland,security_model=none,readonly=on,multidevs=remap")
    append=" hil.userland=$u hil.swift=$SWIFT_DIR"
  fi
  # The host side of the UART: a pty bridged to the guest's ttyS1, and the technician on it.
  socat UNIX-LISTEN:"$w/uart1.sock",unlink-early PTY,link="$w/ttyHOST",raw,echo=0 2>"$w/socat.log" &
  local socat=$!
  python3 "$ROOT/deploy/hil/uart-host.py" "$w/ttyHOST" "$w/uart-host.txt" > "$w/uart-host.log" 2>&1 &
  local uarthost=$!
  for _ in $(seq 50); do [ -S "$w/uart1.sock" ] && break; sleep 0.1; done
  local t0; t0=$(date +%s)
  log "$u: booting linux $KVER ($ACCEL) with scangate $([ "$u" = bookworm ] && echo "$BIN" || echo "$TRIXIE_BIN")"
  timeout "${HIL_TIMEOUT:-1200}" qemu-system-x86_64 $ACC -M pc -smp 1 -m 1024 -nographic -no-reboot -net none \
    -kernel "$K/vmlinux" -initrd "$RUN/initramfs.cpio.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 hil.work=$w hil.job=$w/guest-run.sh hil.kernel=$K$append" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs local,path="$K",mount_tag=hilkernel,security_model=none,readonly=on \
    -virtfs local,path="$w",mount_tag=hilwork,security_model=none "${extra[@]}" \
    -serial mon:stdio -chardev socket,id=uart1,path="$w/uart1.sock" -serial chardev:uart1 \
    < /dev/null 2>&1 | tr -d '\r' | { if [ "${HIL_VERBOSE:-0}" = 1 ]; then tee "$w/console.log"; else cat > "$w/console.log"; fi; }
  local qemu=${PIPESTATUS[0]}
  kill $socat $uarthost 2>/dev/null; wait $socat $uarthost 2>/dev/null
  echo "$qemu" > "$w/qemu-exit"
  log "$u: guest finished (qemu exit $qemu) in $(( $(date +%s) - t0 ))s"
}

# ---------------------------------------------------------------- verdict, per userland
verdict() {  # userland
  local u=$1 w=$RUN/$1
  local qemu; qemu=$(cat "$w/qemu-exit" 2>/dev/null || echo none)
  local before=$((passed + failed)) before_failed=$failed
  [ "$qemu" = 0 ] && result PASS "$u: boot: qemu exited cleanly ($ACCEL)" || result FAIL "$u: boot: qemu exit $qemu (124 = timeout); see $w/console.log"
  [ -e "$w/guest-done" ] && result PASS "$u: guest: job ran to completion" || result FAIL "$u: guest: job did not complete"
  if [ -s "$w/results.txt" ]; then
    while read -r status rest; do result "$status" "$u: $rest"; done < "$w/results.txt"
  fi
  # The allocation proof over all threads: every sampled call stack of what allocated after
  # warm-up must be off the frame path, in the audit log writer (SQLite is its alone).
  local prefix=""; [ "$u" = bookworm ] || prefix=$TRIXIE_ROOT
  while read -r fmt _ frames _ seconds _ n _ bytes _ per _ loop; do
    [ -s "$w/alloc-${fmt,,}-counts.txt" ] || continue
    python3 "$ROOT/deploy/hil/alloc-where.py" "$w/alloc-${fmt,,}-counts.txt" "$w/alloc-${fmt,,}.maps" "$prefix" \
      'libsqlite3|Audit' > "$w/alloc-${fmt,,}-where.txt" 2>&1
    read -r _ samples _ matching <<< "$(tail -1 "$w/alloc-${fmt,,}-where.txt")"
    if [ "$n" = 0 ] || { [ "${samples:-0}" -gt 0 ] && [ "$samples" = "$matching" ]; }; then st=PASS; else st=FAIL; fi
    result $st "$u: allocations on real drivers, $fmt, all threads: $n ($bytes bytes) in $frames frames over $seconds s ($per per frame; $loop on the loop's thread); of ${samples:-0} sampled call stacks ${matching:-0} are the audit log writer's (its SQLite prune every 10 s, off the frame path; $w/alloc-${fmt,,}-where.txt)"
  done < <(cat "$w/alloc-summary.txt" 2>/dev/null)
  if grep -q "OK status" "$w/uart-host.txt" 2>/dev/null; then
    result PASS "$u: serial console: STATUS from the host pty over the guest's ttyS1 got 'OK status'"
  else
    result FAIL "$u: serial console: no STATUS reply on the host pty ($(head -c 200 "$w/uart-host.txt" 2>/dev/null))"
  fi
  [ $((passed + failed - before)) -ge 14 ] || result FAIL "$u: guest: fewer checks than expected ran"
  if [ $failed != "$before_failed" ]; then
    # Indented: the guest's own PASS/FAIL lines in these tails must not be counted twice.
    echo "--- $u: guest console (tail)"; tail -40 "$w/console.log" | sed 's/^/  | /'
    for f in "$w"/*.out; do [ -e "$f" ] && { echo "--- $f (tail)"; tail -15 "$f" | sed 's/^/  | /'; }; done
  fi
}
# The guests are single-CPU qemu processes: with two host cores or more both userlands boot side
# by side (HIL_PARALLEL=0: one after the other), each on a core of its own.
if [ "${HIL_PARALLEL:-$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)}" = 1 ]; then
  pids=()
  for u in $USERLANDS; do boot "$u" & pids+=($!); done
  wait "${pids[@]}"
else
  for u in $USERLANDS; do boot "$u"; done
fi
for u in $USERLANDS; do verdict "$u"; done
# The work folder (about 120 MB: the initramfs, frames, guest logs) is kept only when a check
# failed, for its logs; a run that passed leaves nothing in /tmp.
if [ $failed = 0 ]; then rm -rf "$RUN"; log "done in $(( $(date +%s) - T0 ))s"
else log "done in $(( $(date +%s) - T0 ))s; work folder kept for its logs: $RUN"; fi
echo "hil: $passed passed, $failed failed"
[ $failed = 0 ]
