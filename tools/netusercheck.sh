#!/bin/sh
# Checks `make run NET=user` as a user meets it: boots the ISO it boots
# (tools/netuser.sh, with free host ports instead of 8080 and 6380) on
# QEMU user networking with the same two host forwards on 127.0.0.1, then
# from the host fetches a random 2 MB file from the guest's nginx with
# curl and compares its SHA-256, and with redis-cli (APPS_DIR's static
# musl build, which runs on the host too) SETs a random value in the
# guest's redis-server and GETs it back. The guest must also have printed
# the host's ports. Readiness is polled from the host (up to 240 s: the
# guest boots under TCG on a possibly busy host); then QEMU is told to
# quit through QMP. On failure the console's tail is shown.
# Exit status 0 iff all of it worked.
# usage: [CPUS=1] [NIC=virtio-net-pci|e1000|e1000e|igb] tools/netusercheck.sh [APPS_DIR]
#   (after make kernel build/stub.elf user apps; APPS_DIR defaults to
#   build/apps). e1000 boots the pc machine, the others q35, as make run does.
# Needs: python3 (free ports, the QMP client), curl, sha256sum.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
apps=${1:-$root/build/apps}
nic=${NIC:-virtio-net-pci} cpus=${CPUS:-1}
MACHINE=q35
[ "$nic" = e1000 ] && MACHINE=pc
export MACHINE
what="netusercheck ($nic on $MACHINE, $cpus CPUs)"
tmp=$(mktemp -d)
qmp=$tmp/qmp.sock
vm=
# quit: QEMU ends through QMP (killing tools/qemu.sh would leave QEMU
# running under its timeout); then waits for tools/qemu.sh.
quit() {
  python3 - "$qmp" <<'PY' || kill "$vm" 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ({"execute": "qmp_capabilities"}, {"execute": "quit"}):
    f.write(json.dumps(cmd) + "\n"); f.flush()
    r = json.loads(f.readline())
    while "event" in r:
        r = json.loads(f.readline())
PY
  wait "$vm" || true
  vm=
}
trap '[ -z "$vm" ] || quit; rm -rf "$tmp"' EXIT
fail() {
  echo "$what: FAIL: $*"
  echo "$what: the console's last lines:"
  tail -40 "$tmp/console"
  exit 1
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hport=$(port) rport=$(port)
mkdir -p "$tmp/extra/usr/share/nginx/html"
head -c 2000000 /dev/urandom > "$tmp/extra/usr/share/nginx/html/rand.bin"
want=$(sha256sum < "$tmp/extra/usr/share/nginx/html/rand.bin" | cut -d' ' -f1)
"$root/tools/netuser.sh" "$tmp/net.iso" "$apps" "$hport" "$rport" "$tmp/extra"
t0=$(date +%s)
(s=0; "$root/tools/qemu.sh" "$tmp/net.iso" "$cpus" 300 \
  -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$hport-:80,hostfwd=tcp:127.0.0.1:$rport-:6379" \
  -device "$nic,netdev=n0" -qmp "unix:$qmp,server=on,wait=off" > "$tmp/console" 2>&1 || s=$?
  echo "$s" > "$tmp/qemu.status") &
vm=$!
# up CMD...: poll CMD once a second for up to 240 s while QEMU runs and
# the guest has not said that a server of its own failed to answer.
up() {
  i=0
  until "$@" > /dev/null 2>&1; do
    [ ! -e "$tmp/qemu.status" ] || { echo "$what: QEMU ended (tools/qemu.sh status $(cat "$tmp/qemu.status"))"; return 1; }
    ! grep -q "^netuser: .* does not answer" "$tmp/console" || return 1
    i=$((i + 1)); [ $i -lt 240 ] || return 1
    sleep 1
  done
}
up curl -sf -m 5 -o /dev/null "http://127.0.0.1:$hport/index.html" || fail "no answer from nginx at 127.0.0.1:$hport"
echo "$what: nginx answered through 127.0.0.1:$hport after $(( $(date +%s) - t0 ))s"
curl -sf -m 120 -o "$tmp/got" "http://127.0.0.1:$hport/rand.bin" || fail "curl of rand.bin exited $?"
got=$(sha256sum < "$tmp/got" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "rand.bin: SHA-256 $got, want $want ($(wc -c < "$tmp/got") bytes)"
echo "$what: host fetched 2 MB from nginx with curl, SHA-256 equal"
# Bounded: a guest that accepts and never answers must not hang the test.
cli() { timeout 60 "$apps/redis-cli" -h 127.0.0.1 -p "$rport" "$@"; }
up cli ping || fail "no answer from redis-server at 127.0.0.1:$rport"
val=$(head -c 24 /dev/urandom | sha256sum | cut -c1-40)
r=$(cli SET netuser "$val" 2>&1) || true
[ "$r" = OK ] || fail "redis SET: $r"
r=$(cli GET netuser 2>&1) || true
[ "$r" = "$val" ] || fail "redis GET: '$r', want '$val'"
echo "$what: host redis-cli SET then GET through 127.0.0.1:$rport, value equal"
# The guest prints its lines once it has checked both servers itself,
# which may be a moment after the host's checks.
up grep -q "curl http://127.0.0.1:$hport/" "$tmp/console" || fail "the guest did not print the host's HTTP port"
up grep -q "redis-cli -p $rport ping" "$tmp/console" || fail "the guest did not print the host's redis port"
echo "$what: the guest printed the host's ports $hport and $rport"
quit
echo "$what: passed in $(( $(date +%s) - t0 ))s"
