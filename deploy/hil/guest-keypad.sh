#!/bin/bash
# Runs inside the rig's guest, sourced by guest-run.sh, on both userlands. A PIN keypad on the
# kernel's real input subsystem: uinput-keypad.c (built by the rig) makes "ScanGate test keypad"
# through /dev/uinput, found here by its name in /sys/class/input, and `scangate keypad listen`
# reads it through libevdev as the reader would: the keys typed (each pressed, autorepeated once,
# released) print once each; a second owner is refused while the first holds the grab; paths
# that are not a keypad (an input device without digit keys among them) are refused with their
# reason; and unplugging it (the feeder destroys the device) ends the listener with "device
# gone". About 15 s under TCG.
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
