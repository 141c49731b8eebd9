#!/bin/sh
# The HLL-tax report: boots the kernel with bench=hlltax (the vnode
# workload, sampled by the profiler) under QEMU with -icount, twice, and
# prints the GC / prologue / write-barrier / safety table of each run with
# bench/hlltax, the difference between the runs (the determinism
# tolerance), and writes the report and a pprof profile to bench/results/.
# usage: [CPUS=1] [RUNS=2] [BENCH="bench.files=N bench.ops=N bench.hz=N"] tools/hlltax.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cpus=${CPUS:-1}
runs=${RUNS:-2}
date=$(date -u +%Y-%m-%d)
iso=build/hlltax.iso
tools/mkiso.sh "$iso" build/stub.elf build/kernel.elf "bench=hlltax loglevel=warn ${BENCH:-}"
out=bench/results/hlltax-$date
: > "$out.md"
for i in $(seq 1 "$runs"); do
  log=build/hlltax-$i.log
  # xAPIC: QEMU 10 stops with "Bad icount read" on x2APIC MSR accesses.
  tools/qemu.sh "$iso" "$cpus" 1800 -icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm \
    -cpu max,-x2apic > "$log" 2>&1 || {
    echo "hlltax: run $i failed (see $log)"; exit 1; }
  go run ./bench/hlltax -kernel build/kernel.elf -log "$log" -md "build/hlltax-$i.md" -pprof "$out-$i.pb.gz"
  {
    echo "## Run $i ($cpus CPU, QEMU TCG -icount shift=0,sleep=off, commit $(git rev-parse --short HEAD), $date)"
    echo
    cat "build/hlltax-$i.md"
    echo
  } >> "$out.md"
done
# Determinism: how far apart the runs' shares are (percentage points).
awk -F'|' '/^\| (GC|function prologues|write barriers|safety checks|\*\*high-level)/ {
    name=$2; gsub(/^ +| +$/, "", name); v=$4; gsub(/[ %]/, "", v)
    if (!(name in lo) || v < lo[name]) lo[name]=v
    if (!(name in hi) || v > hi[name]) hi[name]=v
  }
  END {
    print "\n## Determinism across runs\n\n| class | lowest % | highest % | spread (points) |\n|---|---:|---:|---:|"
    for (n in lo) printf "| %s | %.2f | %.2f | %.2f |\n", n, lo[n], hi[n], hi[n]-lo[n]
  }' "$out.md" | tee -a "$out.md"
echo "report: $out.md; profiles: $out-*.pb.gz (go tool pprof -top FILE)"
