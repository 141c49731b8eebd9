#!/bin/sh
# Checks the apps apps/build.sh built, on this (Linux) host: each binary is
# a static x86-64 ELF and does its job.
#   redis: redis-server on a local port, SET/GET with redis-cli,
#          redis-benchmark -n 1000
#   nginx + wrk: nginx with apps/nginx/nginx.conf (port, document root, pid
#          and lock moved under a scratch directory) serving a 1 KiB file,
#          one plain HTTP/1.0 request, then wrk for 2 s
#   mailbench: apps/mailbench/test.sh (delivery, verification, faults)
#
# usage: apps/check.sh [OUTDIR]      (default build/apps)
# The plain request uses the project's busybox nc (build/user/busybox) when
# it was built, else curl.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:-$root/build/apps}
fail() { echo "apps-check: $*" >&2; exit 1; }

for b in redis-server redis-cli redis-benchmark nginx wrk; do
  [ -x "$out/$b" ] || fail "$out/$b missing (run apps/build.sh)"
  case $(file -b "$out/$b") in
    *ELF\ 64-bit*x86-64*statically\ linked*) ;;
    *) fail "$b is not a static x86-64 ELF: $(file -b "$out/$b")" ;;
  esac
done
echo "apps-check: all five binaries are static x86-64 ELF"

tmp=$(mktemp -d /tmp/sb-apps-check.XXXXXX)
pids=
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$(( 20000 + $$ % 20000 ))

# wait_port PORT: until something listens on it (up to 5 s)
wait_port() {
  i=0
  while ! grep -q ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp; do
    i=$((i + 1))
    [ $i -lt 50 ] || return 1
    sleep 0.1
  done
}

# redis
"$out/redis-server" --version
"$out/redis-server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$tmp" --logfile "$tmp/redis.log" &
pids="$pids $!"
wait_port "$port" || fail "redis-server does not listen on $port, see its log above"
[ "$("$out/redis-cli" -p "$port" SET shortbread crumbs)" = OK ] || fail "redis SET"
[ "$("$out/redis-cli" -p "$port" GET shortbread)" = crumbs ] || fail "redis GET"
echo "apps-check: redis SET/GET ok"
"$out/redis-benchmark" -p "$port" -n 1000 -q -t set,get,incr,lpush,lpop ||
  fail "redis-benchmark"
"$out/redis-cli" -p "$port" shutdown nosave >/dev/null 2>&1 || true

# nginx, from the sample configuration
nport=$((port + 1))
mkdir "$tmp/html"
head -c 1024 /dev/zero | tr '\0' x >"$tmp/html/index.html"
sed -e "s|listen 80;|listen 127.0.0.1:$nport;|" \
    -e "s|root /usr/share/nginx/html;|root $tmp/html;|" \
    -e "s|/tmp/nginx|$tmp/nginx|g" \
    "$here/nginx/nginx.conf" >"$tmp/nginx.conf"
"$out/nginx" -v
"$out/nginx" -p "$tmp" -c "$tmp/nginx.conf" 2>"$tmp/nginx.err" &
pids="$pids $!"
wait_port "$nport" || { cat "$tmp/nginx.err" >&2; fail "nginx does not listen on $nport"; }
bb=$root/build/user/busybox
if [ -x "$bb" ]; then
  printf 'GET / HTTP/1.0\r\n\r\n' | "$bb" nc 127.0.0.1 "$nport" >"$tmp/resp"
else
  curl -s -0 -i "http://127.0.0.1:$nport/" >"$tmp/resp"
fi
head -n 1 "$tmp/resp" | grep -q '200 OK' || fail "nginx: no 200 OK: $(head -n 1 "$tmp/resp")"
grep -q 'Content-Length: 1024' "$tmp/resp" || fail "nginx: wrong length"
echo "apps-check: nginx served the 1 KiB file"
"$out/wrk" -t1 -c4 -d2s "http://127.0.0.1:$nport/" | tee "$tmp/wrk.out"
grep -q '^Requests/sec:' "$tmp/wrk.out" || fail "wrk printed no Requests/sec"
grep -q 'Non-2xx\|Socket errors' "$tmp/wrk.out" && fail "wrk saw errors"
"$here/mailbench/test.sh" "$out" || fail "mailbench"
echo "apps-check: ok"
