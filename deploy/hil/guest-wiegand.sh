#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh after the V4L2 checks, on both userlands:
# panel mode with Wiegand out. Passes with card= on the allow-list, shown to vivid as QR codes,
# are sent as card reads on D0/D1, lines of a gpio-sim chip 'wiegand-io'. gpio-sim has no loopback
# from an output line to an input (only its sysfs pull makes edges on inputs), so the receiver is
# the kernel's own record of every value gpiolib drives: the gpio_value tracepoint (ftrace, with
# the trace clock's microsecond timestamps), decoded by wiegand-trace.py.
# The panel's beeper and LED wires into the reader are inputs driven through gpio-sim's sysfs
# `pull`, pulled low for on as a panel's open collector does.
#   line 0 buzzer, 1 relay, 2 D0, 3 D1, 4 beeper wire, 5 LED wire
WG=/sys/kernel/config/gpio-sim/wiegand
mkdir $WG $WG/bank0
for i in 0 1 2 3 4 5; do mkdir $WG/bank0/line$i; done
echo 6 > $WG/bank0/num_lines; echo wiegand-io > $WG/bank0/label
echo 1 > $WG/live
WD=/sys/devices/platform/$(cat $WG/dev_name)/$(cat $WG/bank0/chip_name)
for i in 4 5; do echo pull-up > $WD/sim_gpio$i/pull; done  # the wires idle high
base=""
for c in /sys/class/gpio/gpiochip*; do [ "$(cat $c/label 2>/dev/null)" = wiegand-io ] && base=$(cat $c/base); done
check "wiegand: gpio-sim chip 'wiegand-io' is live (GPIO base ${base:-unknown})" test -n "$base"
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
check "wiegand: the kernel's gpio_value tracepoint is there" test -d $T/events/gpio/gpio_value

cards=(26:212:7041 34:4660:65535 37:1000:524287 raw:12:abc)
specs=()
: > "$W/wiegand-allow.txt"
for i in "${!cards[@]}"; do
  echo "text:CARD-$i label=card$i card=${cards[$i]}" >> "$W/wiegand-allow.txt"
  specs+=("card$i=CARD-$i")
done
python3 ./frames.py --grey "$W" "${specs[@]}"

config wiegand grey 1000 ""
sed -i -e 's/^chip = "door-reader"/chip = "wiegand-io"/' -e "s|^path = \"$W/allow-list.txt\"|path = \"$W/wiegand-allow.txt\"|" \
  -e 's/^format = "grey"$/&\nfps = 5/' -e 's/^listen = \[\]$/listen = ["127.0.0.1:4572"]/' \
  "$W/wiegand.toml"  # 5 fps: the guest's one CPU is the Wiegand thread's too
cat >> "$W/wiegand.toml" <<TOML
[panel]
mode = "panel"
link = "wiegand"
wiegand_d0_line = 2
wiegand_d1_line = 3
wiegand_pulse_us = 50
wiegand_interval_us = 2000
wiegand_beeper_line = 4
wiegand_led_line = 5
TOML
feed GREY "$W/blank.grey"
check "wiegand: the service started in panel mode with Wiegand out" start wiegand
echo 0 > $T/tracing_on; echo > $T/trace
echo mono > $T/trace_clock
echo "gpio >= $base && gpio < $((base + 4))" > $T/events/gpio/gpio_value/filter
echo 1 > $T/events/gpio/gpio_value/enable; echo 1 > $T/tracing_on
for i in "${!cards[@]}"; do
  feed GREY "$W/card$i.grey"
  waitfor "$W/wiegand.out" "label=card$i" 60 || fail "wiegand: card$i was not decoded"
  feed GREY "$W/blank.grey"; sleep 2.5
done
echo 0 > $T/tracing_on; echo 0 > $T/events/gpio/gpio_value/enable
cp $T/trace "$W/wiegand-trace.txt"
# The reader's own count of frames a stall broke and sent again (resent=, broken=): a stopped
# guest can hold the thread between two bits past what a panel waits for.
panel=$(console_line STATUS panel)
echo "guest: wiegand: the reader counts $(grep -o 'cards=[0-9]*\|late_bits=[0-9]*\|resent=[0-9]*\|broken=[0-9]*\|realtime=[a-z]*' <<< "$panel" | tr '\n' ' ')"
resent=$(grep -o 'resent=[0-9]*' <<< "$panel"); broken=$(grep -o 'broken=[0-9]*' <<< "$panel")
check "wiegand: the reader's STATUS counts its frames (${resent:-no resent=}, ${broken:-no broken=})" test -n "$resent" -a "$broken" = broken=0
check "wiegand: each pass was forwarded as a card read ($(grep -c 'panel-card' "$W/wiegand.out") panel-card events)" \
  test "$(grep -c 'panel-card' "$W/wiegand.out")" = ${#cards[@]}
python3 ./wiegand-trace.py "$W/wiegand-trace.txt" $((base + 2)) $((base + 3)) $((base + 1)) 50 2000 "${resent:-resent=0}" "${cards[@]}" > "$W/wiegand-check.txt"
grep -v '^PASS\|^FAIL' "$W/wiegand-check.txt" | sed 's/^/guest: /'
while read -r verdict rest; do
  case $verdict in PASS) pass "$rest" ;; FAIL) fail "$rest" ;; esac
done < <(grep '^PASS\|^FAIL' "$W/wiegand-check.txt")
# The panel answers on its wires: the beeper wire held low sounds the buzzer for as long (held
# for about 600 ms, timed by the shell around its two writes); the LED wire (its green) is
# recorded. The buzzer line is sampled from gpio-sim's value.
S_reader=$S; S=$WD; sample "$W/wiegand-beeper.txt"; S=$S_reader
exec 8<> /tmp/hil-tick
read -rt 0.5 -u 8
b0=${EPOCHREALTIME/./}; echo pull-down > $WD/sim_gpio4/pull; b1=${EPOCHREALTIME/./}
read -rt 0.6 -u 8
b2=${EPOCHREALTIME/./}; echo pull-up > $WD/sim_gpio4/pull; b3=${EPOCHREALTIME/./}
echo pull-down > $WD/sim_gpio5/pull; read -rt 0.3 -u 8; echo pull-up > $WD/sim_gpio5/pull
read -rt 1 -u 8; exec 8<&-
stop_sample
held_min=$(( (b2 - b1) / 1000 )); held_max=$(( (b3 - b0) / 1000 ))
read -r bn bp <<< "$(runs "$W/wiegand-beeper.txt" 3)"
# The sampler reads the line every 5-10 ms (more under TCG): a run is seen up to a sample late
# at either end, so the tolerance widens by the sampler's own longest gap in this run (a loaded
# guest: 440 ms seen for a 602 ms hold).
gap=$(sample_gap_ms "$W/wiegand-beeper.txt")
check "wiegand: the panel's beeper wire held low $held_min-$held_max ms sounded the buzzer once for as long ($bn run, $bp ms, tolerance -150/+250 ms and the sampler's longest gap, $gap ms)" \
  test "$bn" = 1 -a "$bp" -ge $(( held_min - 150 - gap )) -a "$bp" -le $(( held_max + 250 + gap ))
check "wiegand: the beeper and LED wires' changes are panel-command events (on and off each)" \
  bash -c "grep -q 'wiegand-beeper-on' '$W/wiegand.out' && grep -q 'wiegand-beeper-off' '$W/wiegand.out' && grep -q 'wiegand-led-on' '$W/wiegand.out' && grep -q 'wiegand-led-off' '$W/wiegand.out'"
kill -TERM $pid; wait $pid
echo 0 > $WG/live
