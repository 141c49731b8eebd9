#!/bin/sh
# Two guests on one wire: Shortbread and Debian's Linux, each in its own
# QEMU, joined by QEMU's socket netdev (tools/wirepair.sh: Shortbread's
# QEMU listens on a free 127.0.0.1 port, Linux's connects). The paper's setup, with the
# clients on another machine, and a check that Shortbread's TCP works
# with Linux's.
#   1. Shortbread serves (redis, nginx) and Linux is the client: ping,
#      ping -6 to Shortbread's IPv6 link-local address, a 4 MiB file and
#      64 KiB from nginx checked by SHA-256, redis SET/GET, a small
#      redis-benchmark and wrk with every body checked.
#   2. Then the roles swap: Linux serves and Shortbread runs the same
#      clients.
# The guests hand over through the wire itself (the client pushes onto a
# list the server's redis blocks on, tools/wire-guest.sh), so no timing
# is assumed. Correctness only: nothing here is timed (bench/apps -mode
# wire measures the same setup).
#
# usage: [NIC=virtio-net-pci|e1000|e1000e|igb] [CPUS=1] [TIMEOUT=900]
#        [WIRE=socket|tap] tools/wiretest.sh [APPS_OUTDIR]   (default build/apps)
#   WIRE=tap (tools/wirepair.sh) gives the cards offloads. Shortbread's
#   eth0 counters after serving are printed ("wire: shortbread eth0"):
#   transmit bytes per packet show whether TSO was used.
#   WIRE_LOGS=DIR keeps the two consoles as DIR/a.log (Shortbread) and
#   DIR/b.log (Linux), e.g. to look at a hang after a loop of runs.
#   NIC is Shortbread's card (e1000 on the pc machine, as QEMU places
#   it; the others on q35); Linux always has virtio-net.
# Needs: make apps user kernel, tools/linux/kernel.sh build/linux.
# Exit status 0 iff both guests passed every check.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
apps=${1:-build/apps}
nic=${NIC:-virtio-net-pci}
cpus=${CPUS:-1}
limit=${TIMEOUT:-900}
tmp=$(mktemp -d /tmp/sb-wire.XXXXXX)
keep() { [ -z "${WIRE_LOGS:-}" ] || { mkdir -p "$WIRE_LOGS" && cp "$tmp"/a.log "$tmp"/b.log "$WIRE_LOGS"/ 2>/dev/null; } || true; }
trap 'keep; rm -rf "$tmp"' EXIT
fail() { echo "wiretest: FAIL: $*" >&2; exit 1; }

stage=$tmp/stage
apps/stage.sh "$apps" "$stage" >/dev/null
html=$stage/usr/share/nginx/html
head -c 4194304 /dev/urandom >"$html/4m.bin"
sum4m=$(sha256sum <"$html/4m.bin" | cut -d' ' -f1)
sum64k=$(sha256sum <"$html/64k.bin" | cut -d' ' -f1)
cp apps/wrk-verify.lua "$stage/etc/wrk-verify.lua"

# What both sides run: serve until the peer says it is done, or be the
# client of the peer's servers. $1 = this side's name, $2 = the peer's
# address.
# What both sides run: serve until the peer says it is done
# (tools/wire-guest.sh), or be the client of the peer's servers. $1 = this
# side's name, $2 = the peer's address.
cat >"$stage/etc/wire-lib.sh" <<EOF
. /etc/wire-guest.sh
side=\$1 peer=\$2
ok() { echo "wire: \$side ok \$*"; }
bad() { echo "wire: \$side FAIL \$*"; exit 1; }

clients() {
  wait_for redis-cli -h \$peer ping || bad "the peer's redis does not answer"
  ping -c 3 -W 5 \$peer >/tmp/ping.out 2>&1 || { cat /tmp/ping.out; bad "ping"; }
  grep -q ' 0% packet loss' /tmp/ping.out || { cat /tmp/ping.out; bad "ping lost packets"; }
  ok "ping"
  if [ \$side = linux ]; then
    # IPv6 to Shortbread's link-local address (fe80:: and the EUI-64 of
    # its MAC, 52:54:00:00:03:02): neighbour discovery and ICMPv6 echo
    # over the card, with no configuration on either side. Linux's own
    # link-local address is usable only once its duplicate address
    # detection is over (about a second after eth0 came up).
    wait_for ping -6 -c 1 -W 2 fe80::5054:ff:fe00:302%eth0 || { ping -6 -c 1 -W 2 fe80::5054:ff:fe00:302%eth0; bad "ping -6 to the link-local address never answered"; }
    ping -6 -c 3 -W 5 fe80::5054:ff:fe00:302%eth0 >/tmp/ping6.out 2>&1 || { cat /tmp/ping6.out; bad "ping -6 to the link-local address"; }
    grep -q ' 0% packet loss' /tmp/ping6.out || { cat /tmp/ping6.out; bad "ping -6 lost packets"; }
    ok "ping -6 link-local"
  fi
  wget -q -O /tmp/4m http://\$peer:80/4m.bin || bad "wget 4m.bin"
  [ "\$(sha256sum </tmp/4m | cut -d' ' -f1)" = $sum4m ] || bad "4m.bin: wrong bytes"
  wget -q -O /tmp/64k http://\$peer:80/64k.bin || bad "wget 64k.bin"
  [ "\$(sha256sum </tmp/64k | cut -d' ' -f1)" = $sum64k ] || bad "64k.bin: wrong bytes"
  ok "4 MiB and 64 KiB from nginx, SHA-256 checked"
  [ "\$(redis-cli -h \$peer SET wire \$side)" = OK ] || bad "redis SET"
  [ "\$(redis-cli -h \$peer GET wire)" = \$side ] || bad "redis GET"
  ok "redis SET/GET"
  redis-benchmark -h \$peer -n 2000 -c 4 -t set,get -q >/tmp/rb.out 2>&1 || { cat /tmp/rb.out; bad "redis-benchmark"; }
  [ "\$(grep -c 'requests per second' /tmp/rb.out)" = 2 ] || { cat /tmp/rb.out; bad "redis-benchmark: not two results"; }
  ok "redis-benchmark: \$(tr '\r' '\n' </tmp/rb.out | grep 'requests per second' | tr '\n' ' ')"
  wrk -t1 -c2 -d2s -s /etc/wrk-verify.lua http://\$peer:80/1k.bin >/tmp/wrk.out 2>&1 || { cat /tmp/wrk.out; bad "wrk"; }
  grep -q 'Non-2xx\|Socket errors' /tmp/wrk.out && { cat /tmp/wrk.out; bad "wrk saw errors"; }
  grep -q '^wrk-verify good=[1-9][0-9]* bad=0\$' /tmp/wrk.out || { cat /tmp/wrk.out; bad "wrk: bodies differ or none arrived"; }
  ok "wrk: \$(grep '^Requests/sec' /tmp/wrk.out)"
  redis-cli -h \$peer RPUSH handover clients-done >/dev/null || bad "handover to the peer"
}
EOF
cat >"$stage/etc/wire-sb.sh" <<'EOF'
. /etc/wire-lib.sh shortbread 10.0.3.1
serve shortbread || exit 1
# The card's counters after serving (not a check here): bytes per frame
# sent show whether segmentation offload was used.
echo "wire: shortbread eth0 $(grep 'eth0:' /proc/net/dev | tr -s ' ')"
clients
echo "wire: shortbread all ok"
EOF
cat >"$stage/etc/wire-linux.sh" <<'EOF'
. /etc/wire-lib.sh linux 10.0.3.2
clients
serve linux || exit 1
echo "wire: linux all ok"
EOF

start=$(date +%s)
pstatus=0
NIC=$nic CPUS=$cpus TIMEOUT=$limit tools/wirepair.sh "$stage" "$tmp" 'sh /etc/wire-sb.sh' 'sh /etc/wire-linux.sh' || pstatus=$?
for side in shortbread linux; do
  tr -d '\r' <"$tmp/$( [ $side = shortbread ] && echo a || echo b).log" | grep "^wire: $side " || true
done
[ $pstatus -eq 0 ] || fail "a guest failed (above)"
for f in a b; do
  side=shortbread
  [ $f = b ] && side=linux
  # 5 checks as the client (Linux's 6th: ping -6), 1 as the server, then "all ok"
  want=6
  [ $side = linux ] && want=7
  [ "$(tr -d '\r' <"$tmp/$f.log" | grep -c "^wire: $side ok ")" = $want ] || fail "$side: not all checks passed"
  tr -d '\r' <"$tmp/$f.log" | grep -q "^wire: $side all ok\$" || fail "$side: no 'all ok'"
done
echo "wiretest: $nic, $cpus CPU(s)${WIRE:+, $WIRE wire}: ok in $(( $(date +%s) - start )) s"
