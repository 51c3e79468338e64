# Sourced by guest-run.sh after guest-job.sh (its helpers and devices): the fixed-memory claim on
# real drivers. The service runs under the LD_PRELOAD allocation counter (alloc-count.c: every
# thread, malloc/calloc/realloc/posix_memalign/aligned_alloc/memalign and operator new through
# them) on vivid frames in each format, with its gpio-sim lines claimed; after warm-up (a grant,
# its relay pulse over) the counter is read twice, ALLOC_FRAMES frames apart, and the frame count
# is taken from STATS on the loopback console just outside that window. Goal: 0 per frame.
ALLOC_FRAMES=${ALLOC_FRAMES:-400}  # 20-40 s a format under TCG: over the audit writer's 10 s prune tick
RUNIN=""; [ "$USERLAND" = bookworm ] || RUNIN="chroot /run/userland"
fifo=/tmp/alloc-count.fifo
rm -f $fifo; mkfifo $fifo
# The counter counts: a known 600 allocations and 600 frees from a second thread, seen through
# the FIFO the service is read with, in this userland.
rm -f /tmp/alloc-check.txt
got=$(LD_PRELOAD=$ALLOC_SO ALLOC_COUNT_FIFO=$fifo ALLOC_COUNT_OUT=/tmp/alloc-check.txt $RUNIN "$ALLOC_CHECK" 2>&1)
check "allocation counter: counts a known 600 allocations and 600 frees on another thread (got '$got')" \
  test "$got" = "allocations 600 frees 600"

stats_frames() {  # "frames with-codes" from STATS on the service's loopback console
  local line
  exec 7<> /dev/tcp/127.0.0.1/4571 || return 1
  printf 'STATS\r\n' >&7
  while IFS= read -r -t 10 line <&7; do
    case $line in *"| frames "*) set -- ${line#*| frames }; echo "$1 $3"; break ;; esac
  done
  exec 7<&- 7>&-
}
counter() {  # the counter now: "allocations bytes main-thread-allocations"
  local n; n=$(grep -c '^allocations' /tmp/alloc-counts.txt 2>/dev/null)
  printf s > $fifo
  for _ in $(seq 100); do [ "$(grep -c '^allocations' /tmp/alloc-counts.txt 2>/dev/null)" -gt "${n:-0}" ] && break; sleep 0.1; done
  grep '^allocations' /tmp/alloc-counts.txt | tail -1 | awk '{print $2, $6, $8}'
}
for fmt in grey yuyv mjpeg; do
  FMT=${fmt^^}
  [ -e "$W/alice.$fmt" ] || continue
  if [ $fmt = mjpeg ] && ! v4l2-ctl -d $CAP --list-formats 2>/dev/null | grep -q "'MJPG'"; then
    echo "guest: vivid offers no MJPEG: the MJPEG allocation figure comes from the host's HotPathAllocationTests"
    continue
  fi
  config alloc-$fmt $fmt 500 ""
  sed -i 's/^listen = \[\]$/listen = ["127.0.0.1:4571"]/' "$W/alloc-$fmt.toml"
  feed $FMT "$W/alice.$fmt"
  rm -f /tmp/alloc-counts.txt
  # ALLOC_COUNT_TRACE: every 97th allocation after the first reading keeps its call stack
  # (alloc-$fmt-counts.txt, with the process's maps beside it to place the addresses).
  LD_PRELOAD=$ALLOC_SO ALLOC_COUNT_FIFO=$fifo ALLOC_COUNT_OUT=/tmp/alloc-counts.txt ALLOC_COUNT_TRACE=1 \
    "$BIN" run --config "$W/alloc-$fmt.toml" > "$W/alloc-$fmt.out" 2>&1 &
  pid=$!
  ok=1
  waitfor "$W/alloc-$fmt.out" "decision granted" 90 || ok=0
  sleep 3  # warm-up: the grant's relay pulse (500 ms) and its events are over
  read -r f0 _ <<< "$(stats_frames)"; sleep 4; read -r f1 _ <<< "$(stats_frames)"
  fps=$(( (${f1:-0} - ${f0:-0}) / 4 )); [ "$fps" -ge 1 ] || { fps=1; ok=0; }
  # Windows until ALLOC_FRAMES frames are counted (the rate under TCG varies with the host's
  # load): each opens and closes with a counter reading, STATS just outside it.
  frames=0 codes=0 n=0 bytes=0 main=0 seconds=0 windows=0
  while [ $ok = 1 ] && [ $frames -lt $ALLOC_FRAMES ] && [ $windows -lt 8 ]; do
    windows=$((windows + 1))
    read -r fa ca <<< "$(stats_frames)"; sleep 1
    read -r a0 b0 m0 <<< "$(counter)"; s0=$(date +%s)
    sleep $(( ((ALLOC_FRAMES - frames) * 12 / 10) / fps + 1 ))
    read -r a1 b1 m1 <<< "$(counter)"; s1=$(date +%s)
    sleep 1; read -r fb cb <<< "$(stats_frames)"
    [ -n "$a0" ] && [ -n "$a1" ] && [ -n "$fa" ] && [ -n "$fb" ] || { ok=0; break; }
    frames=$((frames + fb - fa)); codes=$((codes + cb - ca)); n=$((n + a1 - a0)); bytes=$((bytes + b1 - b0))
    main=$((main + m1 - m0)); seconds=$((seconds + s1 - s0))
    fps=$(( (fb - fa) / (s1 - s0 + 2) )); [ "$fps" -ge 1 ] || fps=1
  done
  cp /proc/$pid/maps "$W/alloc-$fmt.maps" 2>/dev/null
  kill -TERM $pid; wait $pid
  cp /tmp/alloc-counts.txt "$W/alloc-$fmt-counts.txt" 2>/dev/null
  per=$(awk -v n=$n -v f=$frames 'BEGIN {printf "%.3f", (f > 0 ? n / f : -1)}')
  # All threads: reported here, judged on the host (run.sh places the sampled call stacks).
  echo "$FMT frames $frames seconds $seconds allocations $n bytes $bytes per-frame $per loop-thread $main" >> "$W/alloc-summary.txt"
  check "allocations on real drivers, $FMT, the loop's thread (capture, decode, decide, GPIO): $main in $frames frames after warm-up, $windows window(s) (want 0 in >= $ALLOC_FRAMES frames; $codes frames decoded the code)" \
    test $ok = 1 -a "$frames" -ge "$ALLOC_FRAMES" -a "$main" = 0
done
