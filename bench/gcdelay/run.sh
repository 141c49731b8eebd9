#!/bin/sh
# bench/gcdelay/run.sh: the GC delays redis and nginx requests see in the
# kernel (issue 14, item 3). For each workload and each GC target
# (gogc=), one boot traces the kernel while the workload runs
# (/proc/shortbread/trace, with kernel/proc/reqtrace.go's request marks),
# copies the trace out as base64 and gives it to bench/gcdelay.
#
#   bench/gcdelay/run.sh [OUT.md]     (GOGCS="10 25 100", CPUS=1, REQUESTS=20000, SECONDS_RUN=20)
#
# Not part of make test. Times are the guest's wall clock under TCG on a
# shared host: a pause that the host's scheduler stretched counts whole,
# so the figures are upper bounds. ICOUNT=1 runs QEMU with -icount
# shift=0 instead: the guest's clock then counts instructions (one per
# ns, idle time skipped), so the figures do not depend on the host's
# load, and a 1 GHz one-instruction-per-cycle CPU is what they describe.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${1:-bench/results/gcdelay-$(date -u +%Y-%m-%d).md}
gogcs=${GOGCS:-10 25 100}
cpus=${CPUS:-1}
requests=${REQUESTS:-20000}
secs=${SECONDS_RUN:-20}
apps=${APPS:-build/apps}
icount= clock="the guest's wall clock under TCG" note=" Under host load a pause the host stretched counts whole: upper bounds."
if [ "${ICOUNT:-0}" = 1 ]; then
  # xAPIC: QEMU 10 stops with "Bad icount read" on x2APIC MSR accesses.
  icount="-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-x2apic"
  clock="instruction counts (QEMU -icount shift=0: 1 ns per instruction, load-independent)" note=""
fi
tmp=$(mktemp -d /tmp/sb-gcdelay.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
make -s kernel >/dev/null
cp build/kernel.elf "$tmp/kernel.elf" # a rebuild meanwhile changes nothing here
apps/stage.sh "$apps" "$tmp/stage" >/dev/null
common='export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
wait_for() { i=0; until "$@" >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 100 ] || exit 1; usleep 200000; done; }
dump() { echo stop > /proc/shortbread/trace; echo TRACE-BEGIN; base64 /proc/shortbread/trace; echo TRACE-END; }'
cat > "$tmp/stage/etc/gcd-redis.sh" <<EOF2
$common
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
wait_for redis-cli -h 127.0.0.1 ping
echo start > /proc/shortbread/trace
redis-benchmark -h 127.0.0.1 -n $requests -c 4 -t set,get -q 2>&1 | tr '\r' '\n' | grep 'requests per second' | sed 's/^/workload: /'
dump
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
EOF2
cat > "$tmp/stage/etc/gcd-nginx.sh" <<EOF2
$common
nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html
echo start > /proc/shortbread/trace
wrk -t1 -c4 -d${secs}s http://127.0.0.1:80/1k.bin 2>&1 | grep 'Requests/sec' | sed 's/^/workload: /'
dump
killall nginx
EOF2
{
  echo "# GC delays seen by requests, $(date -u +%Y-%m-%d)"
  echo
  echo "Commit $(git rev-parse --short HEAD); Shortbread, $cpus CPU(s), QEMU TCG ($(qemu-system-x86_64 --version | head -1 | sed 's/.*version //')), host load $(cut -d' ' -f1-3 /proc/loadavg) at the start; redis-benchmark -n $requests -c 4 -t set,get, wrk -t1 -c4 -d${secs}s on 1 KiB; \`bench/gcdelay/run.sh\`."
  echo
  echo "A request runs from the server thread's socket read to the socket write that answers it (kernel/proc/reqtrace.go); its GC delay is the collector's stop-the-world pauses inside it plus the mark assists of its own goroutine (Biscuit's measure: longest pause 115 µs, worst delay in one nginx request 600 µs). Times are $clock.$note"
  echo
  echo "| workload | gogc | requests | GCs | longest pause µs | worst request GC delay µs | p99.9 µs | requests delayed | request p50 µs | request p99 µs | throughput |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} > "$tmp/out.md"
for g in $gogcs; do
  for w in redis nginx; do
    log=$tmp/$w-$g.log
    QEMU_EXTRA=$icount KARGS="gogc=$g" CPUS=$cpus TIMEOUT=1800 SB_KERNEL=$tmp/kernel.elf tools/run-cmd.sh "$tmp/stage" "sh /etc/gcd-$w.sh" > "$log" 2>&1 || {
      tail -n 20 "$log" >&2; echo "gcdelay: the $w guest failed (gogc=$g)" >&2; exit 1; }
    awk '/TRACE-BEGIN/{f=1;next}/TRACE-END/{f=0}f' "$log" | tr -d '\r' | grep -a '^[A-Za-z0-9+/=]*$' | base64 -d > "$tmp/$w-$g.trace"
    tput=$(tr -d '\r' < "$log" | grep -a '^workload: ' | sed 's/^workload: //; s/, p50.*//' | tr '\n' ' ')
    go run ./bench/gcdelay -json "$tmp/$w-$g.trace" | sed 's/^[^ ]* //' > "$tmp/$w-$g.json"
    echo "gcdelay: $w gogc=$g: $(cat "$tmp/$w-$g.json")" >&2
    python3 - "$tmp/$w-$g.json" "$w" "$g" "$tput" >> "$tmp/out.md" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("| %s | %s | %d | %d | %.0f | %.0f | %.0f | %d | %.0f | %.0f | %s |" % (sys.argv[2], sys.argv[3], s["requests"], s["gcs"],
      s["longest_pause_us"], s["worst_request_gc_delay_us"], s["request_gc_delay_p999_us"], s["requests_delayed"],
      s["request_p50_us"], s["request_p99_us"], sys.argv[4].strip()))
PY
  done
done
mkdir -p "$(dirname "$out")"
cp "$tmp/out.md" "$out"
cat "$out"
