#!/bin/sh
# The runtime on several CPUs (issue 21, item 4): boots Shortbread with
# bench=gcscale at each CPU count and tabulates the vnode workload (a
# GC-heavy kernel workload: about 380 bytes allocated per operation) with
# 1..N workers: throughput, speed-up over one worker in the same boot, GC
# cycles, the stop-the-world pauses, and how the GC's CPU time splits
# into assists, dedicated and idle mark workers.
# usage: [CPUS="1 2 4"] [OPS=200000] [FILES=100000] bench/gcscale/run.sh [OUT.md]
# The table goes to OUT.md (default bench/results/gcscale-DATE.md).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cpus_list=${CPUS:-1 2 4} ops=${OPS:-200000} files=${FILES:-100000}
date=$(date -u +%Y-%m-%d)
out=${1:-bench/results/gcscale-$date.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
up0=$(uptime)
for c in $cpus_list; do
  tools/mkiso.sh "$tmp/g.iso" build/stub.elf build/kernel.elf "bench=gcscale bench.files=$files bench.ops=$ops loglevel=warn" build/user/initramfs.cpio >/dev/null
  tools/qemu.sh "$tmp/g.iso" "$c" 1800 > "$tmp/boot-$c.log" 2>&1 || true
  grep -q '^gcscale-end' "$tmp/boot-$c.log" || { tail -n 20 "$tmp/boot-$c.log" >&2; echo "gcscale: the $c-CPU boot did not finish" >&2; exit 1; }
  sed -n 's/^gcscale \(.*\)$/cpus='"$c"' \1/p' "$tmp/boot-$c.log" >> "$tmp/lines"
done
up1=$(uptime)
python3 - "$tmp/lines" "$out" "$(git rev-parse --short HEAD)" "$up0" "$up1" "$ops" "$files" <<'PY'
import sys, statistics
lines, out, commit, up0, up1, ops, files = sys.argv[1:]
rows = [dict(kv.split("=", 1) for kv in l.split()) for l in open(lines)]
def f(r, k): return float(r[k])
by = {}
for r in rows:
    by.setdefault((int(r["cpus"]), int(r["workers"])), []).append(r)
md = ["# The GC-heavy kernel workload on several CPUs, commit %s" % commit, "",
      "`bench/gcscale/run.sh`: Shortbread booted with `bench=gcscale` (the kernel-resident vnode workload of "
      "the HLL-tax and GC-headroom experiments, %s live vnodes, %s operations per worker), QEMU TCG q35, 512 MiB, "
      "`-smp` as the CPU count; in each boot 1..N workers (goroutines), 3 repetitions. Medians over the repetitions. "
      "Host: `%s` at the start, `%s` at the end: TCG on a shared 2-core host, so a 4-CPU guest has "
      "at most 2 host cores and speed-ups past 2 cannot show." % (files, ops, up0.strip(), up1.strip()), "",
      "| CPUs | workers | ops/s | speed-up over 1 worker | GC cycles | GC share of CPU | assist | dedicated | idle marking | longest pause | median pause |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for (c, w) in sorted(by):
    rs = by[(c, w)]
    med = lambda k: statistics.median(f(r, k) for r in rs)
    base = {int(r["rep"]): f(r, "ops_per_s") for r in by[(c, 1)]}
    sp = statistics.median(f(r, "ops_per_s") / base[int(r["rep"])] for r in rs)
    gc = med("gc_cpu_ns") or 1
    md.append("| %d | %d | %.0f | %.2f× | %.0f | %.1f%% | %.0f%% | %.0f%% | %.0f%% | %.0f µs | %.0f µs |" % (
        c, w, med("ops_per_s"), sp, med("gc_cycles"), 100 * med("gc_share"),
        100 * med("gc_assist_ns") / gc, 100 * med("gc_dedicated_ns") / gc, 100 * med("gc_idle_ns") / gc,
        med("gc_max_pause_ns") / 1e3, med("gc_p50_pause_ns") / 1e3))
md += ["", "The assist, dedicated and idle columns are shares of the GC's CPU time (the rest is the stop-the-world "
       "pauses' CPU time × GOMAXPROCS). Pauses are the runtime's stop-the-world pauses per cycle (MemStats.PauseNs).", ""]
open(out, "w").write("\n".join(md))
print("\n".join(md))
PY
