#!/bin/sh
# Two guests on one wire: guest A (Shortbread, or Debian's Linux with
# SERVER=linux) on card NIC at 10.0.3.2, its QEMU listening on a free
# 127.0.0.1 port of QEMU's socket netdev, and guest B (always Debian's
# Linux on virtio-net, 10.0.3.1) whose QEMU connects to it. Each guest runs
# one shell command once its side of the wire is up; the commands do their
# own hand-over (tools/wire-guest.sh: serve until the peer pushes onto a
# redis list). Shared by tools/wiretest.sh (each kernel the other's
# client) and bench/apps -mode wire (a Linux client, either server).
#
# usage: [SERVER=shortbread|linux] [NIC=virtio-net-pci] [CPUS=1] [TIMEOUT=900] [SB_KARGS=...]
#        tools/wirepair.sh STAGE LOGDIR 'A-COMMAND' 'B-COMMAND'
#   STAGE   directory merged over the user initramfs (tools/run-cmd.sh);
#           Linux's network modules and /etc/wire-guest.sh are added to it
#   LOGDIR  receives a.log and b.log, the two consoles
#   NIC     guest A's card: virtio-net-pci, e1000 (on the pc machine, as
#           QEMU places it), e1000e, igb (q35), for either kernel (Linux
#           loads Debian's modules for all four).
#   WIRE_DUMP FILE: guest A's side of the wire as a pcap file (QEMU's
#           filter-dump on its netdev; read with tcpdump -r FILE)
#   SB_KARGS more Shortbread command-line options for guest A (e.g. prof:
#           go run ./bench/hlltax -all -log LOGDIR/a.log)
#   WIRE    socket (default): QEMU's socket netdev, which has no virtio
#           header, so QEMU offers neither card checksum or segmentation
#           offload. tap: each QEMU on a tap device with virtio headers
#           (vnet_hdr), both on one bridge in a network namespace of
#           their own (unshare -n, so nothing on the host is touched; needs
#           root), so virtio-net cards are offered CSUM, GUEST_CSUM and
#           TSO as on a host's tap or vhost back end.
# Both QEMUs get the same -cpu, -m and -smp (tools/qemu.sh and
# tools/linux/run.sh share them). Exit status: 0 iff both commands exited
# 0; otherwise the tail of each failing console goes to stderr.
set -eu
wire=${WIRE:-socket}
case $wire in
  socket) ;;
  tap)
    if [ -z "${WIREPAIR_NETNS:-}" ]; then
      # Again, in a network namespace of its own.
      WIREPAIR_NETNS=1 exec unshare -n sh "$0" "$@"
    fi
    ip link set lo up
    ip link add wbr type bridge
    ip link set wbr up
    for t in wtapA wtapB; do
      ip tuntap add dev $t mode tap
      ip link set $t master wbr
      ip link set $t up
    done ;;
  *) echo "wirepair: WIRE is socket or tap, not $wire" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -eq 4 ] || { echo "usage: $0 STAGE LOGDIR 'A-COMMAND' 'B-COMMAND'" >&2; exit 2; }
stage=$1 logs=$2 acmd=$3 bcmd=$4
server=${SERVER:-shortbread}
nic=${NIC:-virtio-net-pci}
cpus=${CPUS:-1}
limit=${TIMEOUT:-900}
case $nic in
  e1000) machine=pc ;;
  *) machine=q35 ;;
esac
case $server in
  shortbread) ;;
  linux) ;;
  *) echo "wirepair: SERVER is shortbread or linux, not $server" >&2; exit 2 ;;
esac
mkdir -p "$logs"

# Linux's network drivers are modules in Debian's kernel: the one set
# every guest uses (tools/linux/modules.sh caches one).
tools/linux/modules.sh build/linux >/dev/null
mkdir -p "$stage/lib/modules" "$stage/etc"
cp build/linux/modules/*.ko build/linux/modules/load-order "$stage/lib/modules/"
cp tools/wire-guest.sh "$stage/etc/wire-guest.sh"

apid=
trap '[ -z "$apid" ] || kill "$apid" 2>/dev/null || true' EXIT
if [ "$wire" = tap ]; then
  anet="-netdev tap,id=w0,ifname=wtapA,script=no,downscript=no,vnet_hdr=on -device $nic,netdev=w0,mac=52:54:00:00:03:02"
  bnet="-netdev tap,id=w0,ifname=wtapB,script=no,downscript=no,vnet_hdr=on"
else
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  anet="-netdev socket,id=w0,listen=127.0.0.1:$port -device $nic,netdev=w0,mac=52:54:00:00:03:02"
  bnet="-netdev socket,id=w0,connect=127.0.0.1:$port"
fi
if [ -n "${WIRE_DUMP:-}" ]; then
  anet="$anet -object filter-dump,id=wdump,netdev=w0,file=$WIRE_DUMP"
fi
if [ "$server" = shortbread ]; then
  # Shortbread configures itself from ip= (Linux's syntax).
  QEMU_EXTRA="$anet" KARGS="ip=10.0.3.2::10.0.3.1:255.255.255.0::eth0:off${SB_KARGS:+ $SB_KARGS}" MACHINE=$machine \
    CPUS=$cpus TIMEOUT=$limit tools/run-cmd.sh "$stage" "$acmd" >"$logs/a.log" 2>&1 &
else
  LINUX=1 QEMU_EXTRA="$anet" MACHINE=$machine CPUS=$cpus TIMEOUT=$limit \
    tools/run-cmd.sh "$stage" ". /etc/wire-guest.sh && netup 10.0.3.2 && $acmd" >"$logs/a.log" 2>&1 &
fi
apid=$!
# QEMU's connect side gives up at once if nothing listens yet.
i=0
[ "$wire" = tap ] || until python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$port)))" 2>/dev/null; do
  i=$((i+1))
  [ $i -lt 300 ] || { echo "wirepair: guest A's QEMU never listened on $port" >&2; exit 1; }
  sleep 0.2
done
bstatus=0
LINUX=1 QEMU_EXTRA="$bnet -device virtio-net-pci,netdev=w0,mac=52:54:00:00:03:01" \
  CPUS=$cpus TIMEOUT=$limit tools/run-cmd.sh "$stage" ". /etc/wire-guest.sh && netup 10.0.3.1 && $bcmd" >"$logs/b.log" 2>&1 || bstatus=$?
astatus=0
wait "$apid" || astatus=$?
apid=
[ $astatus -eq 0 ] || { tail -n 30 "$logs/a.log" >&2; echo "wirepair: guest A ($server) exited $astatus" >&2; }
[ $bstatus -eq 0 ] || { tail -n 30 "$logs/b.log" >&2; echo "wirepair: guest B (linux) exited $bstatus" >&2; }
[ $astatus -eq 0 ] && [ $bstatus -eq 0 ]
