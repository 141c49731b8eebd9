#!/bin/sh
# The HLL-tax table per real workload (issue 14, item 2): boots Shortbread
# with the apps initramfs and prof=997 (the NMI sampler on every CPU while
# init runs; the samples are dumped when it exits), runs one workload with
# its client in the guest, and prints bench/hlltax's table: the shares of
# GC, function prologues, write barriers and safety checks in non-idle
# kernel time, with 95% intervals, and the runtime's GC counters (cycles,
# pauses, assist time). Under TCG the sampler sees mostly basic-block
# starts, so prologues are over-counted and in-block checks under-counted
# (the report says so); GC's share is sampled by function and is not
# skewed that way.
# usage: [CPUS=1] tools/hlltax-apps.sh redis|nginx|mail [APPS_OUTDIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
workload=${1:?usage: tools/hlltax-apps.sh redis|nginx|mail [APPS_OUTDIR]}
out=${2:-build/apps}
cpus=${CPUS:-1}
tmp=$(mktemp -d /tmp/sb-hlltax.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
apps/stage.sh "$out" "$stage" >/dev/null
{
  echo 'export PATH=/usr/bin:/bin:/usr/sbin:/sbin'
  echo 'ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up'
  echo 'wait_for() { i=0; until "$@" >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 100 ] || exit 1; usleep 200000; done; }'
  case $workload in
  redis) cat <<'EOF2'
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
wait_for redis-cli -h 127.0.0.1 ping
redis-benchmark -h 127.0.0.1 -n 30000 -c 4 -t set,get -q 2>&1 | tr '\r' '\n' | grep 'requests per second' | sed 's/^/workload: /'
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
wait
EOF2
  ;;
  nginx) cat <<'EOF2'
nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html
wrk -t1 -c4 -d60s http://127.0.0.1:80/1k.bin 2>&1 | grep 'Requests/sec\|requests in' | sed 's/^/workload: /'
killall nginx
wait
EOF2
  ;;
  mail) cat <<'EOF2'
mailbench -c 2 -n 1000 -s 2000 -d /tmp 2>&1 | grep '^MAILBENCH' | sed 's/^/workload: /'
EOF2
  ;;
  *) echo "hlltax-apps: unknown workload $workload (redis, nginx or mail)" >&2; exit 2 ;;
  esac
} > "$stage/etc/hlltax-workload.sh"
log=$tmp/log
KARGS="prof=997" CPUS=$cpus TIMEOUT=1800 tools/run-cmd.sh "$stage" 'sh /etc/hlltax-workload.sh' > "$log" 2>&1 || {
  tail -n 30 "$log" >&2; echo "hlltax-apps: the guest failed" >&2; exit 1; }
echo "## $workload on Shortbread ($cpus CPU, QEMU TCG, commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d))"
echo
tr -d '\r' < "$log" | grep -a '^workload: ' | sed 's/^workload: /    /'
echo
go run ./bench/hlltax -kernel build/kernel.elf -log "$log" -top 10 2>/dev/null | sed '1,/^source/d'
