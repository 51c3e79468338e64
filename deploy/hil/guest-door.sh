#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh after the V4L2 checks, on both userlands
# (bookworm: libgpiod 1.6, the v1 API, software debounce on the kernel's edge timestamps;
# trixie: libgpiod 2.2, the v2 API, the kernel's debounce). The door on real gpio-sim lines of a
# second chip, 'door-io': the inputs are driven through gpio-sim's sysfs `pull` attribute (what a
# switch to a pull resistor does), the outputs read back from its `value`.
#   line 0 buzzer, 1 relay (strike), 2 contact, 3 exit button, 4 tamper, 5 alarm, 6 second relay,
#   7 8 9 the feedback lamps (green, red, amber)
DG=/sys/kernel/config/gpio-sim/door
mkdir $DG $DG/bank0
for i in 0 1 2 3 4 5 6 7 8 9; do mkdir $DG/bank0/line$i; done
echo 10 > $DG/bank0/num_lines; echo door-io > $DG/bank0/label
names=(buzzer relay contact exit tamper alarm aux green red amber)
for i in 0 1 2 3 4 5 6 7 8 9; do echo ${names[$i]} > $DG/bank0/line$i/name; done
echo 1 > $DG/live
D=/sys/devices/platform/$(cat $DG/dev_name)/$(cat $DG/bank0/chip_name)
check "door: gpio-sim chip 'door-io' is live with 10 lines" test -e $D/sim_gpio9/value
lamps() { echo "$(cat $D/sim_gpio7/value) $(cat $D/sim_gpio8/value) $(cat $D/sim_gpio9/value)"; }  # green red amber
press() { echo pull-up > $D/sim_gpio$1/pull; }     # the switch closes to the pull: the input reads 1
let_go() { echo pull-down > $D/sim_gpio$1/pull; }
for i in 2 3 4; do let_go $i; done                  # door shut, button up, housing closed
door_sampler=""
door_sample() {  # "ms relay alarm aux green" every few ms into $1 (builtins only)
  ( exec 9<> /tmp/hil-tick
    while true; do
      read -r r < $D/sim_gpio1/value; read -r a < $D/sim_gpio5/value; read -r x < $D/sim_gpio6/value
      read -r g < $D/sim_gpio7/value
      t=${EPOCHREALTIME/./}; echo "${t:0:13} $r $a $x $g"
      read -rt 0.005 -u 9; [ $? -gt 128 ] || sleep 0.005
    done ) > "$1" &
  door_sampler=$!
}
stop_door_sample() { kill $door_sampler 2>/dev/null; wait $door_sampler 2>/dev/null; }
# Runs of column $2 at 1 in sample file $1: "count longest_ms".
runs() { awk -v c=$2 '$c==1 && !on {on=1; s=$1; n++} $c==0 && on {on=0; d=$1-s; if (d>m) m=d} END {if (on) {d=$1-s; if (d>m) m=d}; print n+0, m+0}' "$1"; }
events() { grep -c -- "$1" "$W/door.out"; }
# A 3 s strike pulse and 5 frames a second: under TCG the guest's one CPU is slow, and the shell
# that plays the door must not wait behind the decoder (the door opens well inside the pulse).
config door grey 3000 ""
sed -i -e 's/^chip = "door-reader"/chip = "door-io"/' -e 's/^format = "grey"$/&\nfps = 5/' \
  -e 's/^listen = \[\]$/listen = ["127.0.0.1:4572"]/' "$W/door.toml"
cat >> "$W/door.toml" <<TOML
[door]
enabled = true
contact_line = 2
contact_active_low = false
contact_bias = "as-is"
contact_debounce_ms = 100
exit_line = 3
exit_active_low = false
exit_bias = "as-is"
exit_debounce_ms = 50
tamper_line = 4
tamper_active_low = false
tamper_bias = "as-is"
tamper_debounce_ms = 50
held_open_ms = 2000
forced_alarm_ms = 1500
alarm_line = 5
aux_relay_line = 6
[feedback]
green_line = 7
red_line = 8
amber_line = 9
TOML
feed GREY "$W/blank.grey"
check "door: the service started with contact, exit button, tamper, alarm and second relay on gpio-sim" start door
sleep 1
check "feedback: waiting for a code, the amber lamp alone is lit on gpio-sim (green red amber: $(lamps))" test "$(lamps)" = "0 0 1"

# A debounced exit press releases the strike for its pulse.
door_sample "$W/door-exit.txt"
press 3; sleep 0.3; let_go 3; sleep 4
stop_door_sample
read -r n p <<< "$(runs "$W/door-exit.txt" 2)"
check "door: an exit press (300 ms) is one exit request and a strike release by the exit button" \
  bash -c "[ $(events 'exit-request') = 1 ] && grep -q 'door-unlocked exit-button' '$W/door.out'"
check "door: gpio-sim saw the strike pulse for the exit button ($n pulse, $p ms for relay_pulse_ms 3000, tolerance 2900-3400)" \
  test "$n" = 1 -a "$p" -ge 2900 -a "$p" -le 3400
read -r gn gp <<< "$(runs "$W/door-exit.txt" 5)"
check "feedback: the green lamp was lit while the strike was open ($gn run, $gp ms; the pulse $p ms), amber again after ($(lamps))" \
  bash -c "[ $gn = 1 ] && [ $gp -ge $((p - 400)) ] && [ $gp -le $((p + 400)) ] && [ '$(lamps)' = '0 0 1' ]"
check "door: the strike locked again after the pulse" grep -q 'door-locked' "$W/door.out"

# A press shorter than the debounce time (two sysfs writes back to back) is no press.
t0=${EPOCHREALTIME/./}; press 3; let_go 3; t1=${EPOCHREALTIME/./}
sleep 1
check "door: a $(( (t1 - t0) / 1000 )) ms press (debounce 50 ms) is ignored: still one exit request" test "$(events 'exit-request')" = 1

# Forced: the door opened while the strike is locked; the alarm line and the second relay sound.
door_sample "$W/door-forced.txt"
press 2
forced_alarm=0
for _ in $(seq 30); do forced_alarm=$(cat $D/sim_gpio5/value); [ "$forced_alarm" = 1 ] && break; sleep 0.1; done
forced_aux=$(cat $D/sim_gpio6/value)
sleep 3; after_alarm=$(cat $D/sim_gpio5/value)
let_go 2; sleep 0.5
stop_door_sample
read -r an ap <<< "$(runs "$W/door-forced.txt" 3)"
check "door: opened without an unlock is a forced door" grep -q 'door-forced' "$W/door.out"
check "door: forced: the alarm line read back active ($forced_alarm) with the second relay ($forced_aux), off after forced_alarm_ms ($after_alarm)" \
  test "$forced_alarm" = 1 -a "$forced_aux" = 1 -a "$after_alarm" = 0
check "door: forced: the alarm sounded once, steadily, for forced_alarm_ms ($an run, $ap ms, tolerance 1400-1900)" \
  test "$an" = 1 -a "$ap" -ge 1400 -a "$ap" -le 1900
check "door: the relay stayed locked through the forced door" test "$(runs "$W/door-forced.txt" 2)" = "0 0"

# Held open: unlocked by the exit button, opened, left open past held_open_ms: the alarm beeps.
door_sample "$W/door-held.txt"
press 3; sleep 0.2; let_go 3; sleep 0.3
press 2; opened=$(date +%s%N | cut -c1-13)
waitfor "$W/door.out" 'door-held-open' 10; held=$(date +%s%N | cut -c1-13)
sleep 2.2
let_go 2; sleep 3.5  # the rest of the strike's pulse
stop_door_sample
read -r bn bp <<< "$(runs "$W/door-held.txt" 3)"
# Seen from the shell: the contact's debounce (100 ms), the loop's lag and the journal's are in it.
check "door: left open after an unlock: door-opened, then door-held-open after held_open_ms ($(( held - opened )) ms, want 2000-5000)" \
  bash -c "grep -q 'door-opened' '$W/door.out' && [ $(( held - opened )) -ge 2000 ] && [ $(( held - opened )) -le 5000 ]"
check "door: held open: the alarm line beeped until the door closed ($bn beeps of $bp ms, held_open_beep 200/800)" \
  test "$bn" -ge 2 -a "$bn" -le 7 -a "$bp" -ge 150 -a "$bp" -le 400
check "door: closed again: door-closed with the seconds it stood open" grep -q 'door-closed [3-9]s' "$W/door.out"

# Contact bounce: the door unlocked and opening with 21 edges in a few ms is one transition, and
# the door is open after it. The edges come faster than the loop reads them (libgpiod 1.6's
# kernel FIFO keeps 16 and drops the newest: the line's level after the read is what counts).
opened_before=$(events 'door-opened'); closed_before=$(events 'door-closed')
press 3; sleep 0.2; let_go 3; sleep 0.2
span_us=$("$W/bin/gpio-chatter" $D/sim_gpio2/pull 21)
sleep 1
door_now=$(console_line DOOR door)
lost=$(sed -n 's/.*lost edges made up \([0-9]*\).*/\1/p' <<< "$door_now")
check "door: contact bounce, 21 edges in $(( ${span_us:-0} / 1000 )).$(( ${span_us:-0} % 1000 / 100 )) ms (debounce 100 ms), is one door-opened, and DOOR says open (lost edges made up: ${lost:-0})" \
  bash -c "[ $(( $(events 'door-opened') - opened_before )) = 1 ] && [ -n '$span_us' ] && [ '${span_us:-0}' -lt 100000 ] && grep -q 'contact open' <<< '$door_now'"
let_go 2; sleep 1
check "door: and one door-closed when it shut, the strike relocked at once (relock on close)" \
  bash -c "[ $(( $(events 'door-closed') - closed_before )) = 1 ] && [ $(cat $D/sim_gpio1/value) = 0 ]"

# Tamper: both ways, the alarm line on while it lasts.
press 4; sleep 0.5; tamper_alarm=$(cat $D/sim_gpio5/value)
let_go 4; sleep 0.5; tamper_after=$(cat $D/sim_gpio5/value)
check "door: tamper active and restored are events; the alarm line on while active ($tamper_alarm), off after ($tamper_after)" \
  bash -c "grep -q 'tamper active' '$W/door.out' && grep -q 'tamper restored' '$W/door.out' && [ $tamper_alarm = 1 ] && [ $tamper_after = 0 ]"

kill -TERM $pid; wait $pid
check "feedback: the lamps are dark after the service stopped ($(lamps))" test "$(lamps)" = "0 0 0"
check "door: the audit log verifies and holds the door's events (forced, held open, exit requests, tamper)" \
  bash -c "'$BIN' log verify --db /tmp/door.db && '$BIN' log --db /tmp/door.db > '$W/door-log.txt' && grep -q door-forced '$W/door-log.txt' && grep -q door-held-open '$W/door-log.txt' && grep -q exit-request '$W/door-log.txt' && grep -q tamper '$W/door-log.txt'"
# An unlock window (shop hours) holds the strike released; the loop thread stalled (a hung driver
# call) stops renewing the hold's 3 s lease, and the relay watchdog drives the strike locked
# within a lease and its margin; the loop, running again, takes the hold up once more.
printf 'schedule always mon-sun 00:00-24:00\nunlock always\n' > "$W/door-schedule.txt"
sed -e 's|/tmp/door.db|/tmp/door-window.db|' "$W/door.toml" > "$W/door-window.toml"
printf '[schedule]\npath = "%s"\n' "$W/door-schedule.txt" >> "$W/door-window.toml"
# The guest runs no NTP: its clock is unsynchronised, and by default a window is then held off.
"$BIN" run --config "$W/door-window.toml" > "$W/door-window-unsync.out" 2>&1 &
pid=$!
waitfor "$W/door-window-unsync.out" "state started" 90
sleep 4
check "unlock window: with the clock unsynchronised (no NTP in the guest) the window is held off and the strike stays locked ($(cat $D/sim_gpio1/value))" \
  bash -c "grep -q 'unlock-window clock-unsynchronised' '$W/door-window-unsync.out' && [ $(cat $D/sim_gpio1/value) = 0 ] && ! grep -q 'door-unlocked schedule' '$W/door-window-unsync.out'"
kill -TERM $pid; wait $pid
echo "unlock_needs_synchronized_clock = false" >> "$W/door-window.toml"
"$BIN" run --config "$W/door-window.toml" > "$W/door-window.out" 2>&1 &
pid=$!
waitfor "$W/door-window.out" "state started" 90
check "unlock window: the strike is held released (door-unlocked schedule)" waitfor "$W/door-window.out" 'door-unlocked schedule' 20
check "unlock window: recorded as unlock-window holding" grep -q 'unlock-window holding' "$W/door-window.out"
sleep 5
check "unlock window: still released 5 s on, past any pulse's cap ($(cat $D/sim_gpio1/value))" test "$(cat $D/sim_gpio1/value)" = 1
door_sample "$W/door-window.txt"
python3 "$W/stall-thread.py" $pid $D/sim_gpio1/value 6 > "$W/stall-window.txt" 2>&1
sleep 4; stop_door_sample
stopped=$(awk '$1 == "stopped" {print $2}' "$W/stall-window.txt"); resumed=$(awk '$1 == "resumed" {print $2}' "$W/stall-window.txt")
off=$(awk -v s="${stopped:-0}" '$1 > s && $2 == 0 {print $1; exit}' "$W/door-window.txt")
back=$(awk -v r="${resumed:-0}" '$1 > r && $2 == 1 {print $1; exit}' "$W/door-window.txt")
check "unlock window: with the loop stalled the watchdog locked the strike $(( ${off:-0} - ${stopped:-0} )) ms into the stall (lease 3000 + margin 250; want < 3700), before it ended" \
  bash -c "[ -n '$off' ] && [ -n '$stopped' ] && [ $(( ${off:-0} - ${stopped:-0} )) -lt 3700 ] && [ ${off:-0} -lt ${resumed:-0} ]"
check "unlock window: running again, the loop held the strike again $(( ${back:-0} - ${resumed:-0} )) ms after (after the 1 s rest; want < 4000) and recorded the watchdog's trip" \
  bash -c "[ -n '$back' ] && [ $(( ${back:-0} - ${resumed:-0} )) -lt 4000 ] && grep -q 'fault relay-watchdog' '$W/door-window.out'"
kill -TERM $pid; wait $pid
echo 0 > $DG/live
