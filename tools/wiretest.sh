#!/bin/sh
# Two guests on one wire: Shortbread and Debian's Linux, each in its own
# QEMU, joined by QEMU's socket netdev (Shortbread's QEMU listens on a
# free 127.0.0.1 port, Linux's connects). The paper's setup, with the
# clients on another machine, and a check that Shortbread's TCP works
# with Linux's.
#   1. Shortbread serves (redis, nginx) and Linux is the client: ping,
#      a 4 MiB file and 64 KiB from nginx checked by SHA-256, redis
#      SET/GET, a small redis-benchmark and wrk with every body checked.
#   2. Then the roles swap: Linux serves and Shortbread runs the same
#      clients.
# The guests hand over through the wire itself (the client pushes onto a
# list the server's redis blocks on), so no timing is assumed. Correctness only: nothing here is
# timed.
#
# usage: [NIC=virtio-net-pci|e1000|e1000e|igb] [CPUS=1] [TIMEOUT=900]
#        tools/wiretest.sh [APPS_OUTDIR]   (default build/apps)
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
case $nic in
  e1000) machine=pc ;;
  *) machine=q35 ;;
esac
tmp=$(mktemp -d /tmp/sb-wire.XXXXXX)
sbpid=
cleanup() {
  [ -z "$sbpid" ] || kill "$sbpid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "wiretest: FAIL: $*" >&2; exit 1; }

# Linux's virtio-net driver is a module in Debian's kernel: the same list
# tools/linux/run.sh asks for, so both share one cached set.
tools/linux/modules.sh build/linux virtio_pci virtio_blk crc32c_generic ext4 sd_mod ahci nvme virtio_net >/dev/null

stage=$tmp/stage
apps/stage.sh "$apps" "$stage" >/dev/null
html=$stage/usr/share/nginx/html
head -c 4194304 /dev/urandom >"$html/4m.bin"
sum4m=$(sha256sum <"$html/4m.bin" | cut -d' ' -f1)
sum64k=$(sha256sum <"$html/64k.bin" | cut -d' ' -f1)
mkdir -p "$stage/lib/modules"
cp build/linux/modules/*.ko build/linux/modules/load-order "$stage/lib/modules/"
cp apps/wrk-verify.lua "$stage/etc/wrk-verify.lua"

# What both sides run: serve until the peer says it is done, or be the
# client of the peer's servers. $1 = this side's name, $2 = the peer's
# address.
cat >"$stage/etc/wire-lib.sh" <<EOF
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
side=\$1 peer=\$2
ok() { echo "wire: \$side ok \$*"; }
bad() { echo "wire: \$side FAIL \$*"; exit 1; }
wait_for() { i=0; until "\$@" >/dev/null 2>&1; do i=\$((i+1)); [ \$i -lt 600 ] || return 1; usleep 200000; done; }

serve() {
  redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
  nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
  ngx=\$!
  wait_for redis-cli -h 127.0.0.1 ping || { cat /tmp/redis.log; bad "redis-server does not answer"; }
  wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html || { cat /tmp/nginx.err; bad "nginx does not answer"; }
  echo "wire: \$side serving"
  # The peer's clients are done when they push onto this list (BLPOP
  # blocks without polling; 0: no time limit but the guest's).
  [ "\$(redis-cli -h 127.0.0.1 BLPOP handover 0 | tail -n 1)" = clients-done ] || bad "waiting for the peer's clients"
  redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
  kill \$ngx 2>/dev/null
  wait
  ok "served the peer's clients"
}

clients() {
  wait_for redis-cli -h \$peer ping || bad "the peer's redis does not answer"
  ping -c 3 -W 5 \$peer >/tmp/ping.out 2>&1 || { cat /tmp/ping.out; bad "ping"; }
  grep -q ' 0% packet loss' /tmp/ping.out || { cat /tmp/ping.out; bad "ping lost packets"; }
  ok "ping"
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
serve
clients
echo "wire: shortbread all ok"
EOF
cat >"$stage/etc/wire-linux.sh" <<'EOF'
. /etc/wire-lib.sh linux 10.0.3.2
while read -r m; do insmod "/lib/modules/$m.ko" 2>/dev/null || true; done </lib/modules/load-order
ip link set lo up
ip link set eth0 up || bad "no eth0"
ip addr add 10.0.3.1/24 dev eth0 || bad "address"
clients
serve
echo "wire: linux all ok"
EOF

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$(date +%s)
QEMU_EXTRA="-netdev socket,id=w0,listen=127.0.0.1:$port -device $nic,netdev=w0,mac=52:54:00:00:03:02" \
  KARGS="ip=10.0.3.2::10.0.3.1:255.255.255.0::eth0:off" MACHINE=$machine CPUS=$cpus TIMEOUT=$limit \
  tools/run-cmd.sh "$stage" 'sh /etc/wire-sb.sh' >"$tmp/sb.log" 2>&1 &
sbpid=$!
# QEMU's connect side gives up at once if nothing listens yet.
i=0
until python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$port)))" 2>/dev/null; do
  i=$((i+1)); [ $i -lt 300 ] || fail "Shortbread's QEMU never listened on $port"; sleep 0.2
done
lstatus=0
LINUX=1 QEMU_EXTRA="-netdev socket,id=w0,connect=127.0.0.1:$port -device virtio-net-pci,netdev=w0,mac=52:54:00:00:03:01" \
  CPUS=$cpus TIMEOUT=$limit tools/run-cmd.sh "$stage" 'sh /etc/wire-linux.sh' >"$tmp/linux.log" 2>&1 || lstatus=$?
sstatus=0
wait "$sbpid" || sstatus=$?
sbpid=
for side in shortbread linux; do
  tr -d '\r' <"$tmp/$( [ $side = shortbread ] && echo sb || echo linux).log" | grep "^wire: $side " || true
done
[ $sstatus -eq 0 ] || { tail -n 30 "$tmp/sb.log" >&2; fail "Shortbread's guest exited $sstatus"; }
[ $lstatus -eq 0 ] || { tail -n 30 "$tmp/linux.log" >&2; fail "Linux's guest exited $lstatus"; }
for f in sb linux; do
  side=shortbread
  [ $f = linux ] && side=linux
  # 5 checks as the client, 1 as the server, then "all ok"
  [ "$(tr -d '\r' <"$tmp/$f.log" | grep -c "^wire: $side ok ")" = 6 ] || fail "$side: not all checks passed"
  tr -d '\r' <"$tmp/$f.log" | grep -q "^wire: $side all ok\$" || fail "$side: no 'all ok'"
done
echo "wiretest: $nic, $cpus CPU(s): ok in $(( $(date +%s) - start )) s"
