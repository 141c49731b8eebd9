#!/bin/sh
# Kernel heap allocations per request of the three workloads (issue 14,
# "allocation on hot paths"): boots Shortbread at 1 CPU with allocstat,
# runs redis-benchmark (TCP, SET and GET), wrk against nginx (1 KiB) and
# mailbench in the apps initramfs, and prints for each the heap objects
# and bytes the kernel allocated per request (/proc/shortbread/kmem's
# cumulative counts around the run) and the system calls that allocated
# most (/proc/shortbread/allocs). One CPU: the counts are global, so with
# more CPUs other work would mix in. Not timed: counts only.
#
# usage: bench/allocs/run.sh [APPS_OUTDIR] > report    (make apps, make user, make kernel first)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/apps}
tmp=$(mktemp -d /tmp/sb-allocs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
"$root/apps/stage.sh" "$out" "$stage" >/dev/null
cat >"$stage/etc/allocs.sh" <<'EOF2'
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
k() { grep "^$1 " /proc/shortbread/kmem | awk '{print $2}'; }
wait_for() { i=0; until "$@" >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 100 ] || return 1; usleep 200000; done; }
# measure NAME REQUESTS_CMD: runs the workload in $run, prints per-request
# counts; REQUESTS_CMD prints the number of requests it made
measure() {
	name=$1
	echo x > /proc/shortbread/allocs
	o0=$(k /gc/heap/allocs:objects); b0=$(k /gc/heap/allocs:bytes)
	sh -c "$run" > /tmp/run.out 2>&1
	o1=$(k /gc/heap/allocs:objects); b1=$(k /gc/heap/allocs:bytes)
	n=$(sh -c "$2")
	echo "allocs: $name requests=$n objects=$((o1-o0)) bytes=$((b1-b0)) objects_per_request=$(( (o1-o0) / n )) bytes_per_request=$(( (b1-b0) / n ))"
	head -n 8 /proc/shortbread/allocs | sed "s/^/allocs-top: $name /"
}
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
wait_for redis-cli -h 127.0.0.1 ping
run='redis-benchmark -h 127.0.0.1 -n 20000 -c 4 -t set,get -q'
measure redis 'echo 40000'
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
wait
nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html
run='wrk -t1 -c4 -d5s http://127.0.0.1:80/1k.bin'
measure nginx "awk '/requests in/ {print \$1}' /tmp/run.out"
kill %1 2>/dev/null; killall nginx 2>/dev/null
run='mailbench -c 2 -n 200 -s 2000 -d /tmp'
measure mail 'echo 400'
EOF2
KARGS="allocstat" CPUS=1 TIMEOUT=900 "$root/tools/run-cmd.sh" "$stage" 'sh /etc/allocs.sh' > "$tmp/log" 2>&1 || true
echo "# kernel heap allocations per request, Shortbread at 1 CPU (bench/allocs/run.sh)"
echo "# date $(date -u +%Y-%m-%d) commit $(git -C "$root" rev-parse --short HEAD)"
tr -d '\r' < "$tmp/log" | grep '^allocs' || { tail -n 30 "$tmp/log" >&2; exit 1; }
