#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh, on both userlands (the PIN door below on
# trixie's only). A PIN keypad on the kernel's real input subsystem: uinput-keypad.c (built by the
# rig) makes "ScanGate test keypad" through /dev/uinput, found here by its name in
# /sys/class/input, and `scangate keypad listen` reads it through libevdev as the reader would:
# the keys typed (each pressed, autorepeated once, released) print once each; a second owner is
# refused while the first holds the grab; paths that are not a keypad (an input device without
# digit keys among them) are refused with their reason; and unplugging it (the feeder destroys the
# device) ends the listener with "device gone". About 15 s under TCG. Then the PIN door (below).
modprobe -d "$K" evdev 2>/dev/null  # built in or a module: the /dev/input/event* nodes
modprobe -d "$K" uinput || fail "keypad: modprobe uinput"
kp_node() {  # the /dev/input/eventN whose device is named $1
  local e n
  for e in /sys/class/input/event*; do
    read -r n < "$e/device/name" 2>/dev/null
    [ "$n" = "$1" ] && { echo "/dev/input/${e##*/}"; return; }
  done
}
kp_refused() {  # path reason: listen exits 1 and names the reason
  "$BIN" keypad listen --device "$1" --seconds 1 > "$W/keypad-refused.out" 2>&1
  local rc=$?
  check "keypad: $1 refused (exit $rc: $(head -c 160 "$W/keypad-refused.out"))" \
    bash -c "[ $rc = 1 ] && grep -qF -- '$1: $2' '$W/keypad-refused.out'"
}
KO=$W/keypad-feeder.out; KL=$W/keypad-listen.out
"$W/bin/uinput-keypad" 150 1000 1 2 3 4 enter backspace 9 > "$KO" 2>&1 &
kfeeder=$!
waitfor "$KO" "^ready" 20
KP=$(kp_node "ScanGate test keypad")
check "keypad: the uinput keypad appeared as ${KP:-nothing} (found by its name in /sys/class/input; the feeder said $(head -1 "$KO"))" \
  test -n "$KP" -a -c "${KP:-/nonexistent}"
"$BIN" keypad listen --device "$KP" --seconds 20 > "$KL" 2>&1 &
klisten=$!
check "keypad: listen opened and grabbed it and printed its name" waitfor "$KL" "^keypad: ScanGate test keypad$" 20
"$BIN" keypad listen --device "$KP" --seconds 1 > "$W/keypad-second.out" 2>&1
rc=$?
check "keypad: a second listener is refused while the first holds the grab (exit $rc: $(head -c 160 "$W/keypad-second.out"))" \
  bash -c "[ $rc = 1 ] && grep -qF 'already grabbed by another program' '$W/keypad-second.out'"
kill -USR1 $kfeeder
waitfor "$KO" "^destroyed" 30
t=$(now)
for _ in $(seq 100); do kill -0 $klisten 2>/dev/null || break; sleep 0.1; done
gone=$(( $(now) - t ))
kill -0 $klisten 2>/dev/null && { kill $klisten; gone="never (killed)"; }
wait $klisten; krc=$?
wait $kfeeder
got=$(grep '^key ' "$KL" | tr '\n' ' ')
want="key 1 key 2 key 3 key 4 key enter key clear key 9 "
check "keypad: typed 1 2 3 4 enter backspace 9 (each pressed, autorepeated once, released), listen read '$got'" test "$got" = "$want"
check "keypad: unplugged (the feeder destroyed the device), listen ended with 'device gone', exit $krc, $gone ms after (want 1, < 5000)" \
  bash -c "[ $krc = 1 ] && grep -q 'device gone' '$KL' && [ '$gone' -lt 5000 ] 2>/dev/null"
# What is not a keypad.
kp_refused /dev/null "a character device outside the input subsystem: not a keypad"
mkdir -p /tmp/keypad-dir
kp_refused /tmp/keypad-dir "a directory, not a character device: not a keypad"
kp_refused "$KP" "not found"
# An input event device with keys but no digit keys.
"$W/bin/uinput-keypad" --buttons > "$W/keypad-buttons.out" 2>&1 &
kbuttons=$!
waitfor "$W/keypad-buttons.out" "^ready" 20
KB=$(kp_node "ScanGate test buttons")
kp_refused "${KB:-/dev/input/no-buttons-device}" "an input device without the ten digit keys: not a keypad"
kill -USR1 $kbuttons; wait $kbuttons

# The PIN door runs on the trixie guest only (the keypad itself is read on both above): the
# bookworm guest alone runs the libcamera checks, and the two boots should end together.
[ "${USERLAND:-trixie}" = trixie ] || return 0 2>/dev/null || exit 0
# The reader with the keypad (issue 31's PIN door): alice's entry carries pin= for 2468 under a
# site PIN key; her pass is pin-required (the strike stays locked), the keypad types
# 2 4 6 8 Enter, and the strike opens once, after the last key. About 30 s under TCG.
printf 'text:ALICE-0001 label=alice\n' > "$W/pin-allow.txt"  # its own list (the camera checks empty the shared one)
config pindoor grey 1000 ""
sed -i "s|^path = \"$W/allow-list.txt\"$|path = \"$W/pin-allow.txt\"|" "$W/pindoor.toml"
"$W/bin/uinput-keypad" 150 1500 2 4 6 8 enter > "$W/pindoor-feeder.out" 2>&1 &
kfeeder=$!
waitfor "$W/pindoor-feeder.out" "^ready" 20
KP=$(kp_node "ScanGate test keypad")
cat >> "$W/pindoor.toml" <<TOML
[keypad]
device = "$KP"
pin_key_file = "$W/pin.key"
TOML
"$BIN" allow-list pin-key "$W/pin.key" > "$W/pindoor-pin.out" 2>&1
echo 2468 | "$BIN" allow-list pin --config "$W/pindoor.toml" --label alice >> "$W/pindoor-pin.out" 2>&1
check "PIN door: alice's entry got pin= from 'allow-list pin' ($(tail -1 "$W/pindoor-pin.out" | head -c 120))" \
  grep -q "label=alice.*pin=\|pin=.*label=alice" "$W/pin-allow.txt"
feed GREY "$W/blank.grey"
check "PIN door: the service started with the keypad (${KP:-none})" start pindoor
sample "$W/gpio-pindoor.txt"
feed GREY "$W/alice.grey"
check "PIN door: alice's pass is pin-required" waitfor "$W/pindoor.out" "decision pin-required qr label=alice" 60
sleep 1
typed=$(now)
kill -USR1 $kfeeder
check "PIN door: after 2 4 6 8 Enter on the keypad, alice is granted" waitfor "$W/pindoor.out" "decision granted qr label=alice" 30
sleep 1.5
stop_sample
feed GREY "$W/blank.grey"
first_on=$(awk '$2 == 1 {print $1; exit}' "$W/gpio-pindoor.txt")
chirps=$(awk -v t=$typed '$1 < t && $3 == 1 && !on {on=1; n++} $3 == 0 {on=0} END {print n+0}' "$W/gpio-pindoor.txt")
p=$(pulse_ms "$W/gpio-pindoor.txt")
near=no; pulse_near "$p" 1000 "$W/gpio-pindoor.txt" && near=yes
check "PIN door: the strike stayed locked until the PIN was typed (first active ${first_on:-never}, typing began $typed) and then pulsed $p ms (relay_pulse_ms 1000, tolerance 900 to 1200 + the sampler's longest gap, $(sample_gap_ms "$W/gpio-pindoor.txt") ms); the prompt's two 40 ms chirps: $chirps buzzer run(s) seen (reported only: the sampler's gaps, up to $(sample_gap_ms "$W/gpio-pindoor.txt") ms, can miss a 40 ms chirp)" \
  bash -c "[ -n '$first_on' ] && [ '${first_on:-0}' -ge $typed ] && [ $near = yes ]"
kill -TERM $pid; wait $pid
wait $kfeeder
# The PIN as a word of its own (not inside a hex tag or key id), or a key line as `keypad listen` prints them.
check "PIN door: the journal never printed the PIN or its keys" bash -c "! grep -qE '(^|[^0-9a-f])2468([^0-9a-f]|$)|^key ' '$W/pindoor.out'"
