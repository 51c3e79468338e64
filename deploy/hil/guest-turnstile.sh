#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh after the V4L2 checks, on both userlands
# (bookworm: libgpiod 1.6, the v1 API; trixie: libgpiod 2.2, the v2 API). The turnstile and the
# fire release on real gpio-sim lines of a chip of their own, 'turnstile-io', with codes shown
# through vivid: the inputs are driven through gpio-sim's sysfs `pull` attribute, the outputs read
# back from its `value` (as guest-door.sh does).
#   line 0 buzzer, 1 relay (strike), 2 entry unlock, 3 exit unlock, 4 entry passage,
#   5 exit passage, 6 turnstile alarm, 7 fire panel's contact
# The passage inputs are requested with the pull-up on and active low (a contact to ground): the
# sensor is active while its pull is down. The fire input is active high with its bias as-is.
TG=/sys/kernel/config/gpio-sim/turnstile
mkdir $TG $TG/bank0
for i in 0 1 2 3 4 5 6 7; do mkdir $TG/bank0/line$i; done
echo 8 > $TG/bank0/num_lines; echo turnstile-io > $TG/bank0/label
tnames=(buzzer relay entry-unlock exit-unlock entry-passage exit-passage alarm fire)
for i in 0 1 2 3 4 5 6 7; do echo ${tnames[$i]} > $TG/bank0/line$i/name; done
echo 1 > $TG/live
T=/sys/devices/platform/$(cat $TG/dev_name)/$(cat $TG/bank0/chip_name)
check "turnstile: gpio-sim chip 'turnstile-io' is live with 8 lines" test -e $T/sim_gpio7/value
passage_off() { echo pull-up > $T/sim_gpio$1/pull; }  # the sensor open: its pull-up reads inactive
for i in 4 5; do passage_off $i; done
echo pull-down > $T/sim_gpio7/pull                      # the fire panel at rest
tsampler=""
ts_sample() {  # "ms entry-unlock exit-unlock relay fire-input" every few ms into $1 (builtins only)
  ( exec 9<> /tmp/hil-tick
    while true; do
      read -r e < $T/sim_gpio2/value; read -r x < $T/sim_gpio3/value
      read -r r < $T/sim_gpio1/value; read -r f < $T/sim_gpio7/value
      t=${EPOCHREALTIME/./}; echo "${t:0:13} $e $x $r $f"
      read -rt 0.005 -u 9; [ $? -gt 128 ] || sleep 0.005
    done ) > "$1" &
  tsampler=$!
}
ts_stop() { kill $tsampler 2>/dev/null; wait $tsampler 2>/dev/null; }
# Runs of column $2 at 1 in sample file $1: "count longest_ms".
ts_runs() { awk -v c=$2 '$c==1 && !on {on=1; s=$1; n++} $c==0 && on {on=0; d=$1-s; if (d>m) m=d} END {if (on) {d=$1-s; if (d>m) m=d}; print n+0, m+0}' "$1"; }
# The shell's waits use builtins only: under TCG, with the decoder busy on a code in view, a fork
# takes up to seconds (a `cat` and `sleep` poll missed a 3 s unlock). Fd 6: the tick FIFO.
exec 6<> /tmp/hil-tick
ts_until() {  # line value seconds: waits for gpio-sim line's value
  local v t=${EPOCHREALTIME/./} end
  end=$(( ${t:0:13} + $3 * 1000 ))
  while :; do
    read -r v < $T/sim_gpio$1/value; [ "$v" = "$2" ] && return 0
    t=${EPOCHREALTIME/./}; [ "${t:0:13}" -lt $end ] || return 1
    read -rt 0.02 -u 6
  done
}
ts_pause() { read -rt "$1" -u 6; }  # a sleep without a fork
twalker=""
ts_walk() {  # into $1: waits for the entry unlock, then one person walks through (sensor active 300 ms)
  ( v=0; t=${EPOCHREALTIME/./}; end=$(( ${t:0:13} + 60000 ))
    until [ "$v" = 1 ]; do
      read -r v < $T/sim_gpio2/value; t=${EPOCHREALTIME/./}
      [ "${t:0:13}" -lt $end ] || { echo "timeout ${t:0:13}"; exit 1; }
      read -rt 0.01 -u 6
    done
    echo "unlocked ${t:0:13}"; read -rt 0.3 -u 6
    echo pull-down > $T/sim_gpio4/pull; t=${EPOCHREALTIME/./}; echo "active ${t:0:13}"; read -rt 0.3 -u 6
    echo pull-up > $T/sim_gpio4/pull; t=${EPOCHREALTIME/./}; echo "inactive ${t:0:13}" ) > "$1" &
  twalker=$!
}

TD=/tmp/turnstile; rm -rf $TD; mkdir -p $TD/state
printf 'text:ALICE-0001 label=alice\ntext:BOB-0002 label=bob\n' > $TD/allow.txt
python3 ./frames.py --grey $TD bob=BOB-0002
# 5 frames a second, as the door: the shell that plays the person at the turnstile must not wait
# behind the decoder under TCG.
config turnstile grey 1000 ""
sed -i -e 's/^chip = "door-reader"/chip = "turnstile-io"/' -e 's/^format = "grey"$/&\nfps = 5/' \
  -e "s|^path = \"$W/allow-list.txt\"|path = \"$TD/allow.txt\"|" "$W/turnstile.toml"
cat >> "$W/turnstile.toml" <<TOML
[state]
directory = "$TD/state"
[turnstile]
enabled = true
wiring = "held"
passage_timeout_ms = 3000
direction = "entry"
passback = "hard"
entry_unlock_line = 2
exit_unlock_line = 3
entry_passage_line = 4
exit_passage_line = 5
alarm_line = 6
[emergency]
fire_line = 7
fire_bias = "as-is"
TOML
"$BIN" check-config --config "$W/turnstile.toml" > "$W/turnstile-check.out" 2>&1; cc=$?
check "turnstile: check-config accepts [turnstile] (held, hard anti-passback) and [emergency] fire_line (status $cc)" test $cc = 0
feed GREY "$W/blank.grey"
check "turnstile: the service started with the turnstile's lines and the fire input on gpio-sim" start turnstile
check "turnstile: locked at the start (entry $(cat $T/sim_gpio2/value), exit $(cat $T/sim_gpio3/value), relay $(cat $T/sim_gpio1/value))" \
  test "$(cat $T/sim_gpio2/value)$(cat $T/sim_gpio3/value)$(cat $T/sim_gpio1/value)" = 000

# 1. A listed code: the entry unlocks and stays unlocked until the passage sensor has seen one
#    person through (active, then inactive); then it locks.
ts_sample "$W/turnstile-pass.txt"
ts_walk "$W/turnstile-walk.txt"
feed GREY "$W/alice.grey"
check "turnstile: alice's code was decoded and granted" waitfor "$W/turnstile.out" "decision granted qr label=alice" 60
feed GREY "$W/blank.grey"  # the decoder off the CPU
wait $twalker
ts_until 2 0 5; relocked=$(cat $T/sim_gpio2/value)
ts_pause 0.5; ts_stop
read -r _ unlocked _ active _ inactive <<< "$(tr '\n' ' ' < "$W/turnstile-walk.txt")"
# When the sampler saw the entry unlock end.
ended=$(awk '$2 == 1 {on=1} on && $2 == 0 {print $1; exit}' "$W/turnstile-pass.txt")
read -r pn pl <<< "$(ts_runs "$W/turnstile-pass.txt" 2)"
check "turnstile: grant: the entry unlock line went active and held until the passage sensor's active edge ($(( ${ended:-0} - ${active:-0} )) ms after it, $(( ${active:-0} - ${unlocked:-0} )) ms after the unlock), the exit stayed locked ($(ts_runs "$W/turnstile-pass.txt" 3))" \
  test -n "$unlocked" -a -n "$active" -a -n "$ended" -a "${ended:-0}" -ge "${active:-0}" -a "$(ts_runs "$W/turnstile-pass.txt" 3)" = "0 0"
check "turnstile: the entry passage sensor pulsed ($(( ${inactive:-0} - ${active:-0} )) ms): the entry unlock went inactive ($relocked; one unlock of $pl ms), no relay pulse" \
  test "$relocked" = 0 -a "$pn" = 1 -a "$(ts_runs "$W/turnstile-pass.txt" 4)" = "0 0"
check "turnstile: 'passage entry grant label=alice' recorded" waitfor "$W/turnstile.out" "passage entry grant label=alice" 10

# 2. A listed code and nobody walks through: locked again at the passage timeout (3 s, seen from
#    the shell: the decoder's and the sampler's lag under TCG are in it), granted-not-passed.
ts_pause 2.5  # alice's presence ends (leave_after_ms 1500)
ts_sample "$W/turnstile-timeout.txt"
feed GREY "$TD/bob.grey"
waitfor "$W/turnstile.out" "decision granted qr label=bob" 60
feed GREY "$W/blank.grey"
ts_until 2 1 10
ts_until 2 0 10
ts_pause 0.5; ts_stop
read -r tn tl <<< "$(ts_runs "$W/turnstile-timeout.txt" 2)"
check "turnstile: bob granted and nobody passed: the entry unlock was held $tl ms ($tn run; passage_timeout_ms 3000, tolerance 2500-6000)" \
  test "$tn" = 1 -a "$tl" -ge 2500 -a "$tl" -le 6000
check "turnstile: 'granted-not-passed entry grant label=bob' recorded" \
  waitfor "$W/turnstile.out" "granted-not-passed entry grant label=bob" 10

# 3. Alice again, the way she went last: refused by hard anti-passback, the turnstile stays locked.
ts_pause 2.5
ts_sample "$W/turnstile-passback.txt"
feed GREY "$W/alice.grey"
check "turnstile: alice's code shown again after her entry is denied-passback (hard)" \
  waitfor "$W/turnstile.out" "decision denied-passback qr label=alice" 60
feed GREY "$W/blank.grey"
ts_pause 2; ts_stop
check "turnstile: denied-passback: the entry unlock line stayed inactive ($(ts_runs "$W/turnstile-passback.txt" 2) runs/ms) and the exit's too ($(ts_runs "$W/turnstile-passback.txt" 3))" \
  test "$(ts_runs "$W/turnstile-passback.txt" 2)" = "0 0" -a "$(ts_runs "$W/turnstile-passback.txt" 3)" = "0 0"
check "turnstile: one passage, one granted-not-passed and no forced rotation in all" \
  test "$(grep -c 'passage entry' "$W/turnstile.out")" = 1 -a "$(grep -c 'granted-not-passed' "$W/turnstile.out")" = 1 \
  -a "$(grep -c 'turnstile-forced' "$W/turnstile.out")" = 0

# 4. The fire panel's contact: every direction and the strike released promptly, locked again
#    when it clears. Timed from the first sample that read the fire input active (the same
#    sampler, so its own lag under TCG is taken out; the shell's write is timed too); the
#    property is "released promptly" (100 ms on a Pi, emergency.debounce_ms 50 of it): under
#    TCG at most 1000 ms.
ts_pause 1
ts_sample "$W/turnstile-fire.txt"; ts_pause 0.3
t=${EPOCHREALTIME/./}; fw=${t:0:13}; echo pull-up > $T/sim_gpio7/pull
ts_until 2 1 5; ts_until 3 1 5; ts_until 1 1 5
ts_pause 1.5
t=${EPOCHREALTIME/./}; fc=${t:0:13}; echo pull-down > $T/sim_gpio7/pull
ts_until 2 0 5; ts_until 3 0 5; ts_until 1 0 5
ts_pause 0.5; ts_stop
fin=$(awk '$5 == 1 {print $1; exit}' "$W/turnstile-fire.txt")
fout=$(awk -v s="${fin:-0}" '$1 >= s && $2 == 1 && $3 == 1 && $4 == 1 {print $1; exit}' "$W/turnstile-fire.txt")
cin=$(awk -v s="${fout:-0}" '$1 > s && $5 == 0 {print $1; exit}' "$W/turnstile-fire.txt")
cout=$(awk -v s="${cin:-0}" '$1 >= s && $2 == 0 && $3 == 0 && $4 == 0 {print $1; exit}' "$W/turnstile-fire.txt")
held=$(awk -v a="${fout:-0}" -v b="${cin:-0}" '$1 >= a && $1 < b && !($2 == 1 && $3 == 1 && $4 == 1)' "$W/turnstile-fire.txt" | wc -l)
release_ms=$(( ${fout:-0} - ${fin:-0} )); relock_ms=$(( ${cout:-0} - ${cin:-0} ))
check "turnstile: fire active: entry, exit and the strike relay active $release_ms ms after the sampler read the fire input (debounce 50 ms; want <= 1000 under TCG; $(( ${fout:-0} - fw )) ms after the shell's write)" \
  bash -c "[ -n '$fin' ] && [ -n '$fout' ] && [ $release_ms -ge 0 ] && [ $release_ms -le 1000 ]"
check "turnstile: fire: all three stayed released while the input was active ($held samples not) and 'fire-alarm active' recorded" \
  bash -c "[ $held = 0 ] && grep -q 'fire-alarm active' '$W/turnstile.out'"
check "turnstile: fire cleared: entry, exit and relay inactive $relock_ms ms after the sampler read the input inactive (want <= 1000; $(( ${cout:-0} - fc )) ms after the write), 'fire-alarm cleared' recorded" \
  bash -c "[ -n '$cin' ] && [ -n '$cout' ] && [ $relock_ms -ge 0 ] && [ $relock_ms -le 1000 ] && grep -q 'fire-alarm cleared' '$W/turnstile.out'"
echo "guest: turnstile fire release $release_ms ms, relock $relock_ms ms (from the sampled input); events:"
grep -E 'turnstile|passage|granted-not-passed|fire-alarm|decision|edge relay' "$W/turnstile.out" | sed 's/^/  | /'

kill -TERM $pid; wait $pid; rc=$?
check "turnstile: SIGTERM: exit status 0 (got $rc), every line inactive after ($(cat $T/sim_gpio2/value)$(cat $T/sim_gpio3/value)$(cat $T/sim_gpio1/value))" \
  test "$rc" = 0 -a "$(cat $T/sim_gpio2/value)$(cat $T/sim_gpio3/value)$(cat $T/sim_gpio1/value)" = 000
check "turnstile: the audit log verifies and holds the passage, the granted-not-passed and the fire alarm" \
  bash -c "'$BIN' log verify --db /tmp/turnstile.db && '$BIN' log --db /tmp/turnstile.db > '$W/turnstile-log.txt' && grep -q passage '$W/turnstile-log.txt' && grep -q granted-not-passed '$W/turnstile-log.txt' && grep -q fire-alarm '$W/turnstile-log.txt'"
exec 6<&-
echo 0 > $TG/live
