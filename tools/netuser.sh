#!/bin/sh
# Builds the ISO `make run NET=user` boots: the user initramfs plus nginx
# and redis (apps/stage.sh), the card configured statically as QEMU's user
# networking expects (10.0.2.15/24, router and host 10.0.2.2, name server
# 10.0.2.3), and /etc/netuser.sh as the first program. That script starts
# nginx on port 80 and redis-server on 6379, waits until both answer
# inside the guest, prints how to reach them from the host and then runs
# busybox's shell on the console as `make run` does (`exit` powers off).
# HTTP_PORT and REDIS_PORT are the host's ends of QEMU's hostfwd rules; the
# guest cannot see them, so they travel on the command line (upper-case
# KEY=value options become init's environment) to be printed.
# tools/netusercheck.sh boots the same ISO in make test.
#
# usage: tools/netuser.sh OUT.iso APPS_DIR HTTP_PORT REDIS_PORT [EXTRA_DIR]
#   EXTRA_DIR  copied over / last (the test adds a file for nginx to serve)
#   KARGS="..." more kernel command-line options
# Needs: build/kernel.elf, build/stub.elf, build/user (make user) and
# APPS_DIR (make apps).
set -eu
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  echo "usage: $0 OUT.iso APPS_DIR HTTP_PORT REDIS_PORT [EXTRA_DIR]" >&2; exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1 apps=$2 hport=$3 rport=$4 extra=${5:-}
build=$root/build
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
(cd "$stage" && cpio -id --quiet < "$build/user/initramfs.cpio")
"$root/apps/stage.sh" "$apps" "$stage"
# The static ip= below gives no name server; QEMU's is at 10.0.2.3.
echo "nameserver 10.0.2.3" > "$stage/etc/resolv.conf"
cat > "$stage/etc/netuser.sh" <<'SCRIPT'
#!/bin/sh
# make run NET=user's first program (tools/netuser.sh): the servers, then
# the shell.
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
mount -t proc proc /proc 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /tmp
ip link set lo up 2>/dev/null
# Redis refuses clients from other hosts (QEMU's forwards arrive from
# 10.0.2.2) while it has no password unless protected mode is off.
redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no \
  --dir /tmp --logfile /tmp/redis.log &
nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.log &
# Readiness, bounded (a slow TCG host can take seconds): say what is not
# answering instead of claiming it is up.
up() { i=0; until "$@" >/dev/null 2>&1; do i=$((i + 1)); [ $i -lt 300 ] || return 1; usleep 200000; done; }
if up wget -q -O /dev/null http://127.0.0.1:80/index.html; then
  echo "netuser: nginx serves /usr/share/nginx/html on port 80: from the host, curl http://127.0.0.1:$HTTP_PORT/"
else
  echo "netuser: nginx does not answer; its log:"; cat /tmp/nginx.log
fi
if up redis-cli -h 127.0.0.1 ping; then
  echo "netuser: redis-server listens on port 6379: from the host, redis-cli -p $REDIS_PORT ping"
else
  echo "netuser: redis-server does not answer; its log:"; cat /tmp/redis.log
fi
echo "netuser: logs in /tmp/nginx.log and /tmp/redis.log; exit powers off"
exec /bin/sh
SCRIPT
chmod 755 "$stage/etc/netuser.sh"
if [ -n "$extra" ]; then
  cp -a "$extra"/. "$stage"/
fi
initrd=$stage/initramfs.cpio
(cd "$stage" && find . -mindepth 1 ! -name initramfs.cpio | LC_ALL=C sort | cpio -o -H newc --quiet --owner=0:0) > "$initrd"
"$root/tools/mkiso.sh" "$out" "$build/stub.elf" "$build/kernel.elf" \
  "init=/bin/sh ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off HTTP_PORT=$hport REDIS_PORT=$rport ${KARGS:-} -- /etc/netuser.sh" "$initrd"
