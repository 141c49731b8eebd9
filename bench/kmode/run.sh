#!/bin/sh
# bench/kmode/run.sh: the kernel-mode experiment (issue 14, item 7).
# One Go echo server and one Go HTTP server, the same source
# (kernel/kmode/servers), run (a) as a static user program over
# Shortbread's sockets (bench/kmode/kmserver) and (b) as kernel
# goroutines directly on netstack (the kmode boot option), each under
# the same in-guest client: bench/kmode/kmclient (4 connections of
# 64-byte round trips) and wrk (4 connections, 1 KiB page). The two
# modes alternate REPS times in one boot, so host load hits both alike.
#
#   bench/kmode/run.sh [OUT.md]     (CPUS=1, REPS=5, SECONDS_RUN=8)
#
# Not part of make test. ICOUNT=1 runs QEMU with -icount shift=0: the
# guest's clock counts instructions, so the host's load cannot favour
# either mode.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${1:-bench/results/kmode-$(date -u +%Y-%m-%d).md}
cpus=${CPUS:-1}
reps=${REPS:-5}
secs=${SECONDS_RUN:-8}
apps=${APPS:-build/apps}
icount= clock="wall clock under TCG"
if [ "${ICOUNT:-0}" = 1 ]; then
  # xAPIC: QEMU 10 stops with "Bad icount read" on x2APIC MSR accesses.
  icount="-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-x2apic"
  clock="instruction-counted time (QEMU -icount shift=0: 1 ns per instruction)"
fi
tmp=$(mktemp -d /tmp/sb-kmode.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
make -s kernel >/dev/null
cp build/kernel.elf "$tmp/kernel.elf"
apps/stage.sh "$apps" "$tmp/stage" >/dev/null
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$tmp/stage/usr/bin/kmserver" ./bench/kmode/kmserver
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$tmp/stage/usr/bin/kmclient" ./bench/kmode/kmclient
cat > "$tmp/stage/etc/kmode.sh" <<EOF2
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
kmserver -echo 127.0.0.1:7200 -http 127.0.0.1:8200 &
i=0; until wget -q -O /dev/null http://127.0.0.1:8200/ 2>/dev/null; do i=\$((i+1)); [ \$i -lt 100 ] || exit 1; usleep 200000; done
wget -q -O /tmp/user.page http://127.0.0.1:8200/ && wget -q -O /tmp/kernel.page http://127.0.0.1:8100/ && cmp /tmp/user.page /tmp/kernel.page && echo "kmode: both pages alike, \$(wc -c < /tmp/user.page) bytes"
r=0
while [ \$r -lt $reps ]; do
  for m in user kernel; do
    if [ \$m = user ]; then e=7200; h=8200; else e=7100; h=8100; fi
    echo "kmode: echo \$m \$(kmclient -addr 127.0.0.1:\$e -conns 4 -size 64 -seconds $secs | sed 's/^round trips.s: //; s/ .*//')"
    echo "kmode: http \$m \$(wrk -t1 -c4 -d${secs}s http://127.0.0.1:\$h/ | grep Requests/sec | sed 's/.*: *//')"
  done
  r=\$((r+1))
done
EOF2
log=$tmp/log
QEMU_EXTRA=$icount KARGS="kmode" CPUS=$cpus TIMEOUT=$((reps * secs * 4 + 600)) SB_KERNEL=$tmp/kernel.elf tools/run-cmd.sh "$tmp/stage" 'sh /etc/kmode.sh' > "$log" 2>&1 || {
  tail -n 30 "$log" >&2; echo "kmode: the guest failed" >&2; exit 1; }
tr -d '\r' < "$log" | grep -a '^kmode: ' >&2
tr -d '\r' < "$log" | grep -a '^kmode: both pages alike' >/dev/null || { echo "kmode: the two servers' pages differ" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tr -d '\r' < "$log" | grep -a '^kmode: \(echo\|http\) ' | python3 -c '
import sys, statistics
cpus, reps, secs, commit, load, clock = sys.argv[1:7]
v = {}
for line in sys.stdin:
    _, test, mode, x = line.split()
    v.setdefault((test, mode), []).append(float(x))
print("# Kernel-mode experiment: the same Go servers as a user program and as kernel goroutines\n")
print("Commit %s; Shortbread, %s CPU(s), QEMU TCG, %s; host load %s at the start; %s alternating runs of %s s per mode in one boot; `bench/kmode/run.sh`.\n" % (commit, cpus, clock, load, reps, secs))
print("Echo: bench/kmode/kmclient, 4 connections of 64-byte round trips. HTTP: wrk -t1 -c4 on a 1 KiB page, keep-alive. Servers: kernel/kmode/servers (user: bench/kmode/kmserver over the system calls; kernel: the kmode boot option, on netstack through gonet). Clients are user programs in both cases. Wasmer (kernel-mode WebAssembly) found the kernel-mode TCP echo server ~10% and the HTTP server ~6% faster.\n")
print("| test | user program, median (runs) | kernel goroutines, median (runs) | kernel / user |")
print("|---|---|---|---|")
for test, unit in (("echo", "round trips/s"), ("http", "requests/s")):
    u, k = v.get((test, "user"), []), v.get((test, "kernel"), [])
    if not u or not k:
        continue
    mu, mk = statistics.median(u), statistics.median(k)
    fmt = lambda xs: ", ".join("%.0f" % x for x in xs)
    print("| %s (%s) | %.0f (%s) | %.0f (%s) | %.2f× |" % (test, unit, mu, fmt(u), mk, fmt(k), mk / mu))
' "$cpus" "$reps" "$secs" "$(git rev-parse --short HEAD)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$clock" > "$out"
cat "$out"
