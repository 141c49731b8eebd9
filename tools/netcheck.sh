#!/bin/sh
# Checks Shortbread's virtio-net card over QEMU user networking, both
# ways: the guest fetches a random 4 MB file from an HTTP server on the
# host's 127.0.0.1 (10.0.2.2 from inside) and compares its SHA-256; the
# host fetches a page from busybox httpd in the guest through a hostfwd
# on 127.0.0.1. Exit status 0 iff both worked.
# usage: [CPUS=2] tools/netcheck.sh        (after make kernel build/stub.elf user)
# Needs: python3 (the host's HTTP server), curl, sha256sum.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
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
# The host side of the reverse check runs while the guest serves.
(for i in $(seq 1 60); do
  r=$(curl -s -m 2 "http://127.0.0.1:$fport/index.html") && [ "$r" = "served-by-the-guest" ] && { echo ok > "$tmp/reverse"; exit 0; }
  sleep 1
done) &
rev=$!
cmd="wget -q -O /tmp/big http://10.0.2.2:$hport/big.bin && sha256sum /tmp/big;
mkdir -p /www && echo served-by-the-guest > /www/index.html && httpd -p 80 -h /www && sleep 20"
out=$(QEMU_EXTRA="-netdev user,id=n0,hostfwd=tcp:127.0.0.1:$fport-:80 -device virtio-net-pci,netdev=n0" \
  KARGS="ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off" CPUS=${CPUS:-2} TIMEOUT=300 \
  "$root/tools/run-cmd.sh" - "$cmd" 2>&1) || true
wait $rev
status=0
if echo "$out" | grep -q "^$want "; then
  echo "netcheck: guest fetched 4 MB from the host, SHA-256 equal"
else
  echo "netcheck: FAIL: guest download (want $want)"; echo "$out" | tail -20; status=1
fi
if [ -f "$tmp/reverse" ]; then
  echo "netcheck: host fetched the guest's page through hostfwd"
else
  echo "netcheck: FAIL: host could not reach the guest's httpd"; status=1
fi
exit $status
