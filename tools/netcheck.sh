#!/bin/sh
# Checks one of Shortbread's network cards over QEMU user networking,
# both ways: the guest fetches a random 4 MB file from an HTTP server on
# the host's 127.0.0.1 (10.0.2.2 from inside) and compares its SHA-256;
# the host fetches a page from busybox httpd in the guest through a
# hostfwd on 127.0.0.1. Then the host takes the link down and up again
# through QEMU's QMP set_link, and the guest must see the interface lose
# and regain RUNNING (the card's link-change interrupt). /proc/net/dev
# must count the transfer on eth0 without errors. With IPCONF=dhcp the
# card is configured by ip=dhcp from QEMU's DHCP server instead of a
# static ip=, and the lease must show in the address, the default route
# and /proc/net/pnp's name server.
# Exit status 0 iff all of it worked.
# usage: [CPUS=2] [NIC=virtio-net-pci|e1000|e1000e|igb] [MACHINE=q35|pc] [IPCONF=static|dhcp] tools/netcheck.sh
#   (after make kernel build/stub.elf user). e1000 defaults to the pc
#   machine, where QEMU puts it; the others to q35.
# Needs: python3 (the host's HTTP server and QMP client), curl, sha256sum.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
nic=${NIC:-virtio-net-pci}
if [ -z "${MACHINE:-}" ]; then
  MACHINE=q35
  [ "$nic" = e1000 ] && MACHINE=pc
fi
export MACHINE
tmp=$(mktemp -d)
srv=
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
head -c 4000000 /dev/urandom > "$tmp/big.bin"
want=$(sha256sum < "$tmp/big.bin" | cut -d' ' -f1)
# Free ports picked by the kernel: bind to 0, read back.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hport=$(port) fport=$(port)
(cd "$tmp" && exec python3 -m http.server "$hport" --bind 127.0.0.1) > "$tmp/http.log" 2>&1 &
srv=$!
qmp=$tmp/qmp.sock
# set_link UP: true or false, through QMP.
set_link() {
  python3 - "$qmp" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ({"execute": "qmp_capabilities"},
            {"execute": "set_link", "arguments": {"name": "n0", "up": sys.argv[2] == "true"}}):
    f.write(json.dumps(cmd) + "\n"); f.flush()
    r = json.loads(f.readline())
    while "event" in r:
        r = json.loads(f.readline())
    if "error" in r:
        sys.exit(r["error"])
PY
}
# The host side runs while the guest serves: fetch the page, then take
# the link down and, once the guest has seen it, up again.
(for i in $(seq 1 90); do
  r=$(curl -s -m 2 "http://127.0.0.1:$fport/index.html") && [ "$r" = "served-by-the-guest" ] && { echo ok > "$tmp/reverse"; break; }
  sleep 1
done
[ -f "$tmp/reverse" ] || exit 0
sleep 2
set_link false && echo down > "$tmp/linkdown"
sleep 6
set_link true && echo up > "$tmp/linkup") &
rev=$!
# The guest: the download, the page, then watch eth0's RUNNING flag go
# and come back (bounded), and show the counters.
cmd="cat /proc/net/pnp; ip -4 addr show dev eth0; ip route;
t0=\$(cut -d' ' -f1 /proc/uptime); wget -q -O /tmp/big http://10.0.2.2:$hport/big.bin && sha256sum /tmp/big;
echo download-time \$t0 \$(cut -d' ' -f1 /proc/uptime);
mkdir -p /www && echo served-by-the-guest > /www/index.html && httpd -p 80 -h /www;
running() { ifconfig eth0 | grep -q RUNNING; };
i=0; while running && [ \$i -lt 120 ]; do sleep 1; i=\$((i+1)); done; running || echo link-went-down;
i=0; while ! running && [ \$i -lt 30 ]; do sleep 1; i=\$((i+1)); done; running && echo link-came-up;
cat /proc/net/dev"
ipconf=${IPCONF:-static}
kargs="ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off"
[ "$ipconf" = dhcp ] && kargs="ip=dhcp"
out=$(QEMU_EXTRA="-netdev user,id=n0,hostfwd=tcp:127.0.0.1:$fport-:80 -device $nic,netdev=n0 -qmp unix:$qmp,server=on,wait=off" \
  KARGS="$kargs" CPUS=${CPUS:-2} TIMEOUT=300 \
  "$root/tools/run-cmd.sh" - "$cmd" 2>&1) || true
wait $rev || true
status=0
what="netcheck ($nic on $MACHINE, ${CPUS:-2} CPUs, $ipconf address)"
if [ "$ipconf" = dhcp ]; then
  if echo "$out" | grep -q "inet 10.0.2.15/24" && echo "$out" | grep -q "^default via 10.0.2.2 dev eth0" &&
     echo "$out" | grep -q "^#PROTO: DHCP" && echo "$out" | grep -q "^nameserver 10.0.2.3"; then
    echo "$what: ip=dhcp leased 10.0.2.15/24, default route via 10.0.2.2, name server 10.0.2.3"
  else
    echo "$what: FAIL: DHCP lease not applied"; echo "$out" | head -30; status=1
  fi
elif echo "$out" | grep -q "^#MANUAL"; then
  echo "$what: static ip= shown in /proc/net/pnp"
else
  echo "$what: FAIL: /proc/net/pnp does not say #MANUAL"; status=1
fi
if echo "$out" | grep -q "^$want "; then
  secs=$(echo "$out" | awk '/^download-time/ { printf "%.2f", $3 - $2 }')
  echo "$what: guest fetched 4 MB from the host in ${secs}s, SHA-256 equal"
else
  echo "$what: FAIL: guest download (want $want)"; echo "$out" | tail -20; status=1
fi
if [ -f "$tmp/reverse" ]; then
  echo "$what: host fetched the guest's page through hostfwd"
else
  echo "$what: FAIL: host could not reach the guest's httpd"; status=1
fi
if [ -f "$tmp/linkdown" ] && echo "$out" | grep -q "^link-went-down" && echo "$out" | grep -q "^link-came-up"; then
  echo "$what: guest saw the link go down and come back up"
else
  echo "$what: FAIL: link state change not seen"; echo "$out" | tail -30; status=1
fi
# eth0: rx bytes, packets, errs, drop ... tx bytes, packets, errs, drop
line=$(echo "$out" | sed -n 's/^ *eth0://p' | tail -1)
set -- $line
if [ $# -ge 12 ] && [ "$1" -ge 4000000 ] && [ "$3" -eq 0 ] && [ "${11}" -eq 0 ]; then
  echo "$what: /proc/net/dev eth0: rx $1 bytes $2 packets $3 errors $4 dropped; tx $9 bytes ${10} packets ${11} errors ${12} dropped"
else
  echo "$what: FAIL: /proc/net/dev eth0 line: $line"; status=1
fi
exit $status
