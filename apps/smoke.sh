#!/bin/sh
# Smoke test of the apps inside a guest: boots Debian's Linux (or, with
# KERNEL=shortbread, Shortbread) in QEMU with the user initramfs plus the
# apps (apps/stage.sh) and checks, with short bounded runs, that
#   redis:     SET/GET over TCP and the unix socket answer right, and a tiny
#              redis-benchmark completes;
#   nginx:     a 64 KiB file fetched with busybox wget and a 1 KiB file
#              fetched with a raw HTTP/1.0 request over nc have the right
#              bytes (sha256), and wrk for 1 s gets only 200s whose bodies
#              equal the file (a wrk Lua response check); then nginx with a
#              master and a worker per CPU: the workers all there, wrk's 64 KiB
#              bodies checked, and no worker left once the master stops;
#   mailbench: 2 clients x 20 messages are delivered and verified.
# Correctness only: nothing here is timed.
#
# usage: apps/smoke.sh [APPS_OUTDIR]   (default build/apps)
#        KERNEL=linux|shortbread CPUS=1 TIMEOUT=600 apps/smoke.sh
# Needs: make apps, make user, and for Linux tools/linux/kernel.sh build/linux
# (make apps-smoke does all three).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root/build/apps}
kernel=${KERNEL:-linux}
tmp=$(mktemp -d /tmp/sb-apps-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "apps-smoke: FAIL: $*" >&2; exit 1; }

stage=$tmp/stage
"$here/stage.sh" "$out" "$stage"
html=$stage/usr/share/nginx/html
sum1k=$(sha256sum <"$html/1k.bin" | cut -d' ' -f1)
sum64k=$(sha256sum <"$html/64k.bin" | cut -d' ' -f1)

cp "$here/wrk-verify.lua" "$stage/etc/wrk-verify.lua"

cat >"$stage/etc/apps-smoke.sh" <<EOF2
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ok() { echo "smoke: ok \$*"; }
bad() { echo "smoke: FAIL \$*"; exit 1; }
wait_for() { i=0; until "\$@" >/dev/null 2>&1; do i=\$((i+1)); [ \$i -lt 100 ] || return 1; usleep 200000; done; }
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || bad "loopback"

redis-server --port 6379 --bind 127.0.0.1 --unixsocket /tmp/redis.sock --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
wait_for redis-cli -h 127.0.0.1 ping || { cat /tmp/redis.log; bad "redis-server does not answer"; }
[ "\$(redis-cli -h 127.0.0.1 SET smoke shortbread)" = OK ] || bad "redis SET"
[ "\$(redis-cli -h 127.0.0.1 GET smoke)" = shortbread ] || bad "redis GET over TCP"
[ "\$(redis-cli -s /tmp/redis.sock GET smoke)" = shortbread ] || bad "redis GET over the unix socket"
ok "redis SET/GET"
redis-benchmark -h 127.0.0.1 -n 500 -c 4 -t set,get -q >/tmp/rb.out 2>&1 || { s=\$?; cat /tmp/rb.out; bad "redis-benchmark exited \$s"; }
[ "\$(grep -c 'requests per second' /tmp/rb.out)" = 2 ] || { cat /tmp/rb.out; bad "redis-benchmark: not two results"; }
ok "redis-benchmark"
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
wait

nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
ngx=\$!
wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html || { cat /tmp/nginx.err; bad "nginx does not answer"; }
wget -q -O /tmp/64k http://127.0.0.1:80/64k.bin || bad "wget 64k.bin"
[ "\$(sha256sum </tmp/64k | cut -d' ' -f1)" = $sum64k ] || bad "64k.bin: wrong bytes from wget"
ok "nginx 64 KiB over wget"
printf 'GET /1k.bin HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' | nc 127.0.0.1 80 >/tmp/1k.resp || bad "nc"
head -n 1 /tmp/1k.resp | grep -q ' 200 ' || bad "1k.bin: \$(head -n 1 /tmp/1k.resp)"
sed '1,/^\r\$/d' /tmp/1k.resp >/tmp/1k
[ "\$(sha256sum </tmp/1k | cut -d' ' -f1)" = $sum1k ] || bad "1k.bin: wrong bytes over nc"
ok "nginx 1 KiB over a raw HTTP/1.0 request"
wrk -t1 -c2 -d1s -s /etc/wrk-verify.lua http://127.0.0.1:80/1k.bin >/tmp/wrk.out 2>&1 || { s=\$?; cat /tmp/wrk.out; bad "wrk exited \$s"; }
cat /tmp/wrk.out
grep -q 'Non-2xx\|Socket errors' /tmp/wrk.out && bad "wrk saw errors"
grep -q '^wrk-verify good=[1-9][0-9]* bad=0\$' /tmp/wrk.out || bad "wrk: bodies differ from 1k.bin or none arrived"
ok "nginx 1 KiB to wrk, every body checked"
kill \$ngx
wait

# nginx as it usually runs: a master that forks one worker per CPU; every
# worker gone when the master is told to stop.
nginx -c /etc/nginx/nginx-workers.conf 2>/tmp/nginx.err &
ngx=\$!
wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html || { cat /tmp/nginx.err; bad "nginx with workers does not answer"; }
workers() { ps -o ppid,args | grep -c "^ *\$ngx  *nginx"; }
allup() { [ "\$(workers)" -eq "\$(nproc)" ]; }
wait_for allup || bad "nginx master: \$(workers) workers, want \$(nproc)"
wrk -t1 -c4 -d1s -s /etc/wrk-verify.lua http://127.0.0.1:80/64k.bin -- /usr/share/nginx/html/64k.bin >/tmp/wrk.out 2>&1 || { s=\$?; cat /tmp/wrk.out; bad "wrk (workers) exited \$s"; }
grep -q 'Non-2xx\|Socket errors' /tmp/wrk.out && { cat /tmp/wrk.out; bad "wrk (workers) saw errors"; }
grep -q '^wrk-verify good=[1-9][0-9]* bad=0\$' /tmp/wrk.out || { cat /tmp/wrk.out; bad "wrk (workers): bodies differ from 64k.bin or none arrived"; }
ok "nginx master and \$(nproc) worker(s): 64 KiB to wrk, every body checked"
kill \$ngx
wait
[ "\$(ps -o args | grep -c '^nginx')" -eq 0 ] || { ps -o pid,ppid,stat,args; bad "nginx workers left after the master stopped"; }
ok "nginx master stopped with its workers"

mailbench -c 2 -n 20 -s 2000 -d /tmp >/tmp/mail.out 2>&1 || { s=\$?; cat /tmp/mail.out; bad "mailbench exited \$s"; }
grep -q '^MAILBENCH .* accepted=40 delivered=40 bad=0 ' /tmp/mail.out || { cat /tmp/mail.out; bad "mailbench counts"; }
ok "mailbench 40 messages delivered and verified"
echo "smoke: all ok"
EOF2

start=$(date +%s)
status=0
case $kernel in
  linux) LINUX=1 "$root/tools/run-cmd.sh" "$stage" 'sh /etc/apps-smoke.sh' >"$tmp/log" 2>&1 || status=$? ;;
  shortbread) "$root/tools/run-cmd.sh" "$stage" 'sh /etc/apps-smoke.sh' >"$tmp/log" 2>&1 || status=$? ;;
  *) fail "KERNEL must be linux or shortbread" ;;
esac
tr -d '\r' <"$tmp/log" | grep '^smoke: ' || true
# what the kernel had to refuse (unimplemented calls are logged once each)
tr -d '\r' <"$tmp/log" | grep -E 'unimplemented|warn: ' | sed 's/^/apps-smoke: guest log: /' | head -n 20 || true
[ $status -eq 0 ] || { tail -n 30 "$tmp/log" >&2; fail "the guest exited $status"; }
# the guest's status alone could be 0 from a script that stopped early
[ "$(tr -d '\r' <"$tmp/log" | grep -c '^smoke: ok ')" = 8 ] || fail "not all eight checks passed"
tr -d '\r' <"$tmp/log" | grep -q '^smoke: all ok$' || fail "no 'all ok'"
echo "apps-smoke: $kernel ok in $(( $(date +%s) - start )) s"
