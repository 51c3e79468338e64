#!/bin/bash
# Builds the .deb and installs it into a clean Debian 12 root (debootstrap minbase plus systemd
# and udev, as on any installed system; cached), where it
# must: resolve its dependencies from the Debian mirror, create its user, install its config and
# allow-list 0640 root:scangate, pass `systemd-analyze verify`, `scangate check-config` and
# `scangate demo`, and run as the service does (its unit's command line, as user scangate, in
# demo mode: replayed frames, simulated GPIO) and answer STATUS on its console. Then the root is
# booted with systemd as PID 1 (its own PID, mount, cgroup and network namespaces) and the
# installed unit runs unchanged (ProtectSystem=strict and the rest of its sandbox) against Debian's
# mosquitto on the root's loopback: a signed fleet bundle pushed to it takes effect, and one that
# would write into /etc/scangate is refused. Prints PASS/FAIL lines and "package: N passed, M failed".
# Usage (as root): deploy/package-test.sh   (SCANGATE_SCRATCH: the release build's scratch path)
set -uo pipefail
cd "$(dirname "$0")/.."
R=${BOOKWORM_ROOT:-/var/cache/scangate-bookworm/root}
passed=0; failed=0
check() { local name=$1; shift; if "$@"; then echo "PASS $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi; }
finish() { echo "package: $passed passed, $failed failed"; [ $failed = 0 ]; exit $?; }
[ "$(id -u)" = 0 ] || { echo "FAIL package: needs root"; failed=1; finish; }

DEB=$(deploy/package.sh "${SCANGATE_SCRATCH:-.build}" | tail -1)
check "package: built $DEB" test -s "$DEB"

MIRROR=$(grep -rhoE '^(URIs:|deb)\s+\S+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | awk '{print $2}' | grep -E '/debian/?$' | head -1)
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
if [ ! -e "$R/.base-ready-2" ]; then
  rm -rf "$R"; mkdir -p "$R"
  debootstrap --variant=minbase --include=systemd,procps,udev --arch=amd64 bookworm "$R" "$MIRROR" > "$R.debootstrap.log" 2>&1 \
    || { tail "$R.debootstrap.log"; check "package: debootstrap a clean Debian 12 root" false; finish; }
  touch "$R/.base-ready-2"
fi
# Each run starts from the clean root: install into a throwaway copy.
C=$(mktemp -d /var/tmp/scangate-pkgroot.XXXXXX)
cp -a "$R/." "$C/"
mounted=()
SVC=""; CG=""
stop_systemd() {  # every process of the booted root (its cgroup), then the cgroup itself
  [ -n "$CG" ] && [ -d "$CG" ] || return 0
  echo 1 > "$CG/cgroup.kill" 2>/dev/null
  for _ in $(seq 50); do [ -z "$(cat "$CG/cgroup.procs" 2>/dev/null)" ] && ! grep -q "populated 1" "$CG/cgroup.events" 2>/dev/null && break; sleep 0.1; done
  find "$CG" -depth -type d -exec rmdir {} \; 2>/dev/null
  CG=""
}
cleanup() {
  [ -n "$SVC" ] && kill -TERM "$SVC" 2>/dev/null
  stop_systemd
  for ((i=${#mounted[@]}-1; i>=0; i--)); do umount -l "${mounted[i]}" 2>/dev/null; done
  rm -rf "$C"
}
trap cleanup EXIT
mount -t proc proc "$C/proc" && mounted+=("$C/proc")
mount --bind /dev "$C/dev" && mounted+=("$C/dev")
mount -t tmpfs tmpfs "$C/tmp" && mounted+=("$C/tmp")
cp /etc/resolv.conf "$C/etc/resolv.conf" 2>/dev/null
cp "$DEB" "$C/tmp/scangate.deb"
IN() { chroot "$C" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
IN apt-get update -q > "$C/tmp/apt.log" 2>&1
check "install: apt-get install ./scangate.deb resolves its dependencies on a clean Debian 12" \
  IN bash -c 'apt-get install -y -q --no-install-recommends /tmp/scangate.deb >> /tmp/apt.log 2>&1'
check "install: service user scangate exists, in groups video, gpio and dialout" \
  IN bash -c 'id scangate | grep -q video && id scangate | grep -q gpio && id scangate | grep -q dialout'
check "install: /etc/scangate/config.toml is a conffile" IN bash -c 'grep -q config.toml /var/lib/dpkg/info/scangate.conffiles'
# The config names every secret file: readable by the service's group, not by other local users.
# The allow-list (text: entries are working passes) is the service's own, in its state directory.
check "install: config.toml is 0640 root:scangate ($(IN stat -c '%a %U:%G' /etc/scangate/config.toml))" \
  test "$(IN stat -c '%a %U:%G' /etc/scangate/config.toml)" = "640 root:scangate"
AL=/var/lib/scangate/allow-list.txt
check "install: the allow-list is made in the state directory, 0640 scangate:scangate ($(IN stat -c '%a %U:%G' $AL))" \
  test "$(IN stat -c '%a %U:%G' $AL)" = "640 scangate:scangate"
check "install: another local user cannot read the allow-list" IN runuser -u nobody -- sh -c "! cat $AL 2>/dev/null"
check "install: the service user can read the config and the allow-list" \
  IN runuser -u scangate -- sh -c "cat /etc/scangate/config.toml $AL >/dev/null"
check "check-config: no file-mode warning for the installed files" \
  IN bash -c '! scangate check-config --config /etc/scangate/config.toml | grep warning'
check "check-config: warns once the allow-list is made world-readable (chmod 0644)" \
  IN bash -c "chmod 0644 $AL; out=\$(scangate check-config --config /etc/scangate/config.toml); chmod 0640 $AL
    echo \"\$out\" | grep -q '^warning: allow-list $AL: readable by everyone (mode 0644)'"
# An upgrade from a package that kept the list in /etc: postinst copies it into the state
# directory once (never over one there), and says so.
IN bash -c "mv $AL /root/allow-list.installed; printf 'text:OLD-0001 label=kept\n' > /etc/scangate/allow-list.txt
  /var/lib/dpkg/info/scangate.postinst configure 0.0.9 > /tmp/upgrade.txt 2>&1"
check "upgrade: the list an earlier package kept in /etc is copied to the state directory, 0640 scangate:scangate ($(head -c 120 "$C/tmp/upgrade.txt"))" \
  IN bash -c "grep -q '^text:OLD-0001 label=kept' $AL && [ \"\$(stat -c '%a %U:%G' $AL)\" = '640 scangate:scangate' ] \
    && grep -q 'is now $AL (copied from /etc/scangate/allow-list.txt' /tmp/upgrade.txt"
IN bash -c "printf 'text:NEWER-0002 label=newer\n' > /etc/scangate/allow-list.txt; /var/lib/dpkg/info/scangate.postinst configure 0.0.9 >/dev/null 2>&1"
check "upgrade: a second configure never overwrites the list in the state directory" IN grep -q '^text:OLD-0001' $AL
IN bash -c "rm /etc/scangate/allow-list.txt; mv /root/allow-list.installed $AL"
check "unit: systemd-analyze verify passes" \
  bash -c "systemd-analyze verify --root='$C' /lib/systemd/system/scangate.service 2>&1 | tee -a /dev/stderr | { ! grep -q .; }"
check "check-config: the installed default configuration is valid" \
  IN scangate check-config --config /etc/scangate/config.toml
check "demo: runs and prints decisions" IN bash -c 'scangate demo --port 0 --fps 60 --dir /tmp/demo | grep -q "decision granted qr label=alice"'
# The service as its unit runs it (same command line, same user), in demo mode.
IN bash -c 'cat > /tmp/demo.toml <<TOML
[camera]
source = "replay"
replay_path = "/tmp/demo"
replay_fps = 30
[allow_list]
path = "/tmp/demo/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = "/var/lib/scangate/audit.db"
[console]
listen = ["127.0.0.1:4570"]
TOML
chmod -R a+rX /tmp/demo /tmp/demo.toml'
# chroot --userspec execs the service itself: $! is its pid (stopped by that pid below).
chroot --userspec=scangate:scangate --groups=video,gpio,dialout "$C" /usr/bin/env -i HOME=/var/lib/scangate LANG=C.UTF-8 \
  PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/scangate run --config /tmp/demo.toml --quiet-edges > "$C/tmp/service.out" 2>&1 &
SVC=$!
for _ in $(seq 100); do grep -q "console listening" "$C/tmp/service.out" 2>/dev/null && break; sleep 0.1; done
sleep 1
check "service: started as user scangate in demo mode, answers STATUS on its console" \
  IN bash -c 'scangate console --tcp 127.0.0.1:4570 --command STATUS | tee /tmp/status.txt | grep -q "^OK status"'
check "service: its audit log in /var/lib/scangate verifies" IN bash -c 'sleep 1; scangate log verify --db /var/lib/scangate/audit.db'
kill -TERM "$SVC"; wait "$SVC" 2>/dev/null; SVC=""

# ---------------------------------------------------------------- the installed unit under systemd: a fleet bundle
# Debian's mosquitto on the root's own loopback; the demo frame that shows ALICE-0001; an issuer
# key the reader trusts (/etc/scangate/trust.toml, read-only to it); the allow-list the fleet
# manages in /var/lib/scangate/fleet, absent until the first bundle (every code is denied until then).
# policy-rc.d: nothing is started inside the chroot by the package's maintainer scripts.
IN bash -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
  apt-get install -y -q --no-install-recommends mosquitto >> /tmp/apt.log 2>&1; rm -f /usr/sbin/policy-rc.d'
check "fleet: Debian's mosquitto installs into the root" IN test -x /usr/sbin/mosquitto
IN bash -c 'mkdir -p /srv/scangate-demo; for f in /tmp/demo/frame-*.pgm; do
    if scangate decode "$f" 2>/dev/null | grep -q "text ALICE-0001$"; then cp "$f" /srv/scangate-demo/; break; fi; done
  chmod -R a+rX /srv/scangate-demo
  scangate credential keygen --issuer /root/issuer.key --kid fleet-hq > /etc/scangate/trust.toml 2>/tmp/keygen.err
  printf "text:ALICE-0001 label=from-fleet\n" > /root/bundle-allow.txt
  cat > /etc/scangate/config.toml <<TOML
[camera]
source = "replay"
replay_path = "/srv/scangate-demo"
replay_fps = 5
[presence]
repeat_ms = 1000
[allow_list]
path = "/var/lib/scangate/fleet/allow-list.txt"
[gpio]
backend = "sim"
[log]
path = "/var/lib/scangate/audit.db"
[console]
listen = ["127.0.0.1:4570"]
[credentials]
trust_file = "/etc/scangate/trust.toml"
[fleet]
brokers = ["mqtt://127.0.0.1:1883"]
reader_id = "door-1"
TOML
  chown root:scangate /etc/scangate/config.toml /etc/scangate/trust.toml; chmod 0640 /etc/scangate/config.toml /etc/scangate/trust.toml'
check "fleet: a demo frame with ALICE-0001 for the replayed camera" IN bash -c 'ls /srv/scangate-demo | grep -q pgm'
IN scangate check-config --config /etc/scangate/config.toml > "$C/tmp/check-fleet.txt" 2>&1
check "check-config: names the fleet-managed allow-list, no warnings ($(grep -c warning "$C/tmp/check-fleet.txt") warnings)" \
  bash -c "grep -q '^fleet: a signed bundle may replace allow-list: /var/lib/scangate/fleet/allow-list.txt' '$C/tmp/check-fleet.txt' \
    && ! grep -q warning '$C/tmp/check-fleet.txt'"
# systemd as PID 1 of the root, in a cgroup (v2) of its own so that it can be stopped whole.
CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$CGROOT" ]; then
  CG=$CGROOT$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup | sed 's#/$##')/scangate-pkgtest-$$
  mkdir -p "$CG"
  (
    echo $BASHPID > "$CG/cgroup.procs"
    exec unshare --pid --fork --mount --uts --ipc --cgroup --net --propagation private bash -c '
      C=$1
      mount --bind "$C" "$C"; mount -t proc proc "$C/proc"; mount -t sysfs -o ro sysfs "$C/sys"
      mount -t tmpfs -o mode=755 tmpfs "$C/run"; mount -t tmpfs -o mode=1777 tmpfs "$C/tmp"; mount --rbind /dev "$C/dev"
      exec chroot "$C" /usr/bin/env -i container=scangate-package-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        SYSTEMD_PROC_CMDLINE="systemd.unified_cgroup_hierarchy=1" /lib/systemd/systemd --system' boot "$C"
  ) > "$C/tmp/boot.log" 2>&1 &
  BOOT=$!
  disown "$BOOT"  # stopped through its cgroup (stop_systemd), never reported as a killed job
fi
SDPID=""
for _ in $(seq 100); do SDPID=$(pgrep -P "${BOOT:-0}" 2>/dev/null | head -1); [ -n "$SDPID" ] && break; sleep 0.1; done
SD() { nsenter -t "$SDPID" -m -p -u -i -C -n -r -w /usr/bin/env -i LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
booted() { [ -n "$SDPID" ] || return 1; for _ in $(seq 120); do
  case $(SD systemctl is-system-running 2>/dev/null) in running|degraded) return 0;; esac; sleep 0.5; done; return 1; }
check "systemd: the root boots with systemd as PID 1 (cgroup v2 at ${CGROOT:-none})" booted
SD systemctl start mosquitto.service
SD systemctl start scangate.service
check "unit: scangate.service, as installed, starts under systemd (Type=notify, READY=1)" SD systemctl is-active --quiet scangate.service
MAIN=$(SD systemctl show -p MainPID --value scangate.service)
OWNER=$(SD stat -c %U "/proc/$MAIN" 2>/dev/null)
check "unit: runs as user scangate ($OWNER)" test "$OWNER" = scangate
check "unit: /etc/scangate is read-only in the service's mount namespace (ProtectSystem=strict)" \
  SD nsenter -t "$MAIN" -m sh -c '! touch /etc/scangate/written-by-the-service 2>/dev/null'
console() { SD scangate console --tcp 127.0.0.1:4570 --command STATUS 2>/dev/null; }
connected() { for _ in $(seq 60); do console | grep -q "connected to" && return 0; sleep 0.5; done; return 1; }
check "fleet: the service is connected to the broker (STATUS)" connected
sleep 1
journal() { SD journalctl -u scangate.service --no-pager -o cat; }
not_granted() { ! journal | grep -q "decision granted"; }
check "fleet: before any bundle the pass is not granted (no allow-list yet)" not_granted
SD scangate fleet publish-bundle --broker mqtt://127.0.0.1:1883 --reader door-1 --version 1 \
  --allow-list /root/bundle-allow.txt --issuer-key /root/issuer.key --kid fleet-hq > "$C/tmp/bundle1.txt" 2>&1
check "fleet: a signed bundle pushed to the installed service is applied ($(head -c 160 "$C/tmp/bundle1.txt"))" \
  grep -q '"ok":true' "$C/tmp/bundle1.txt"
check "fleet: the delivered allow-list is in /var/lib/scangate/fleet, 0640 scangate:scangate" \
  SD bash -c 'cmp -s /root/bundle-allow.txt /var/lib/scangate/fleet/allow-list.txt \
    && [ "$(stat -c "%a %U:%G" /var/lib/scangate/fleet/allow-list.txt)" = "640 scangate:scangate" ]'
granted() { for _ in $(seq 40); do journal | grep -q "decision granted.* label=from-fleet" && return 0; sleep 0.5; done; return 1; }
check "fleet: the bundle took effect: the pass is granted by the delivered list (journal)" granted
SD cp /etc/scangate/trust.toml /root/trust-before.toml
SD scangate fleet publish-bundle --broker mqtt://127.0.0.1:1883 --reader door-1 --version 2 \
  --allow-list /root/bundle-allow.txt --trust /etc/scangate/trust.toml --issuer-key /root/issuer.key --kid fleet-hq \
  > "$C/tmp/bundle2.txt" 2>&1
check "fleet: a bundle that would write into /etc/scangate (trust) is refused whole, saying where fleet files belong ($(grep -o '"reason":"[^"]*"' "$C/tmp/bundle2.txt"))" \
  bash -c "grep -q '\"ok\":false' '$C/tmp/bundle2.txt' \
    && grep -q '/etc/scangate/trust.toml is in /etc/scangate, which the service cannot write' '$C/tmp/bundle2.txt' \
    && grep -q 'belong in /var/lib/scangate/fleet' '$C/tmp/bundle2.txt' \
    && ! test -e '$C/etc/scangate/trust.toml.bundle' && ! test -e '$C/var/lib/scangate/fleet/allow-list.txt.bundle'"
check "fleet: the refused bundle changed nothing (version 1 kept, trust file untouched)" \
  bash -c "grep -q '\"version_kept\":1' '$C/tmp/bundle2.txt' && cmp -s '$C/root/trust-before.toml' '$C/etc/scangate/trust.toml'"
# Enrolling out of the box: the installed unit (ProtectSystem=strict) with the packaged
# allow-list in its state directory; ALICE-0001 is denied, then enrolled from a shell by its tag
# through the console, and granted from the next scan.
SD bash -c 'head -c 24 /dev/urandom | od -An -tx1 | tr -d " \n" > /etc/scangate/console-secret
  chown scangate:scangate /etc/scangate/console-secret; chmod 0600 /etc/scangate/console-secret
  sed -i -e "s#^path = \"/var/lib/scangate/fleet/allow-list.txt\"#path = \"/var/lib/scangate/allow-list.txt\"#" \
    -e "s#^listen = \[\"127.0.0.1:4570\"\]#listen = [\"127.0.0.1:4570\"]\nsecret_file = \"/etc/scangate/console-secret\"#" \
    -e "/^\[fleet\]/,\$d" /etc/scangate/config.toml
  systemctl restart scangate.service'
denied_tag() { for _ in $(seq 60); do
  t=$(journal | grep "decision denied-unknown" | grep -o "tag=[0-9a-f]*" | tail -1 | cut -d= -f2); [ -n "$t" ] && { echo "$t"; return; }; sleep 0.5; done; }
TAG=$(denied_tag)
check "enrol: with the packaged allow-list the demo badge is denied as unknown (tag ${TAG:-none})" test -n "$TAG"
SD scangate allow-list enrol --tag "${TAG:-0}" --label "Alice Example" --config /etc/scangate/config.toml > "$C/tmp/enrol.txt" 2>&1
check "enrol: scangate allow-list enrol through the installed service's console ($(head -c 160 "$C/tmp/enrol.txt"))" \
  bash -c "grep -q '^OK #[0-9]* enrolled Alice%20Example' '$C/tmp/enrol.txt' && grep -q 'label=Alice%20Example' '$C/var/lib/scangate/allow-list.txt'"
enrolled_granted() { for _ in $(seq 40); do journal | grep -q "decision granted.* label=Alice%20Example" && return 0; sleep 0.5; done; return 1; }
check "enrol: the next scan of the badge is granted (journal)" enrolled_granted
# The web admin page as installed: its own unit and user, the certificate made at install, an
# operator's "Open door" carried out by the reader's console and recorded with who (openssl
# s_client as the HTTPS client: the root has no browser).
check "admin: user scangate-admin, in group scangate; the key made at install is 0600 scangate-admin ($(IN stat -c '%a %U' /etc/scangate/admin.key 2>&1))" \
  IN bash -c 'id scangate-admin | grep -q "(scangate)" && [ "$(stat -c "%a %U" /etc/scangate/admin.key)" = "600 scangate-admin" ] && test -s /etc/scangate/admin.crt'
SD bash -c 'sed -i "s#^secret_file = \"/etc/scangate/console-secret\"#&\nunix_path = \"/run/scangate/console.sock\"\nunix_operators = [\"scangate-admin\"]#" /etc/scangate/config.toml
  printf "[admin]\nlisten = \"127.0.0.1:8443\"\n" >> /etc/scangate/config.toml
  echo "a long pass phrase" | scangate admin user add olga --role operator --config /etc/scangate/config.toml
  systemctl restart scangate.service && systemctl start scangate-admin.service' > "$C/tmp/admin-setup.txt" 2>&1
https() {  # request: the reply over TLS from inside the root
  SD bash -c 'printf "%b" "$1" | timeout 10 openssl s_client -quiet -connect 127.0.0.1:8443 2>/dev/null' https "$1"
}
form() { printf 'POST %s HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nOrigin: https://127.0.0.1:8443\r\n%sContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' "$1" "$2" "${#3}" "$3"; }
for _ in $(seq 40); do https 'GET /login HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nConnection: close\r\n\r\n' | grep -q "Sign in" && break; sleep 0.5; done
ADMIN_OWNER=$(SD stat -c %U "/proc/$(SD systemctl show -p MainPID --value scangate-admin.service)" 2>/dev/null)
check "admin: scangate-admin.service, as installed, serves the sign-in page as user scangate-admin ($ADMIN_OWNER; $(head -c 200 "$C/tmp/admin-setup.txt"))" \
  test "$ADMIN_OWNER" = scangate-admin
COOKIE=$(https "$(form /login "" "name=olga&password=a+long+pass+phrase")" | grep -o 'sg_session=[0-9a-f]*' | head -1)
check "admin: olga signs in (a session cookie: ${COOKIE:0:20}...)" test -n "$COOKIE"
CSRF=$(https "GET / HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nCookie: $COOKIE\r\nConnection: close\r\n\r\n" | grep -o 'name="csrf" value="[0-9a-f]*"' | head -1 | grep -o '[0-9a-f]\{64\}')
SAID=$(https "$(form /door/open "Cookie: $COOKIE\r\n" "csrf=$CSRF")" | grep -o 'said=[^[:space:]]*')
opened() { for _ in $(seq 20); do journal | grep -q "command OPEN by web:olga (uid $(IN id -u scangate-admin))" && return 0; sleep 0.5; done; return 1; }
check "admin: Open door on the page is the reader's OPEN, recorded by web:olga with the page's uid (${SAID:-no reply})" opened
SD systemctl stop scangate-admin.service
SD systemctl stop scangate.service
RESULT=$(SD systemctl show -p Result --value scangate.service)
check "unit: stops cleanly (Result=$RESULT)" test "$RESULT" = success
stop_systemd

check "remove: dpkg -r removes the package, the audit log stays" \
  IN bash -c 'dpkg -r scangate >/dev/null 2>&1 && ! test -e /usr/bin/scangate && test -e /var/lib/scangate/audit.db'
finish
