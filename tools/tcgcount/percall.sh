#!/bin/sh
# Exact kernel instructions per operation, by function: runs a guest
# command (from the user initramfs) twice under QEMU -icount with the
# pccount plugin, at two sizes, and divides the difference of the counts
# by the difference in operations (tools/tcgcount/percall), so boot and
# set-up cancel out. One vCPU unless CPUS is set.
#
# usage: tools/tcgcount/percall.sh 'CMD' N1 N2 [TOP]
#   CMD is run with N appended as its last argument (e.g. '/bench/ubench getppid')
#   and is expected to do N*PER operations (PER=1 by default; ubench
#   repeats its measured loop 5 times: PER=5).
#   The user programs of build/user/bench are at /bench in the guest;
#   EXTRA=DIR merges another directory into its initramfs instead.
#   If CMD prints a line "ops N", N is its count of operations instead.
# CPUS=N runs N vCPUs (in turn under -icount); ICOUNT=0 leaves -icount
# out, so they run in parallel (counts then depend on timing: scheduling,
# spinning, timers) as in bench/results/twocpu-2026-11-30.md.
# Needs: make iso user (build/kernel.elf, build/user).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmd=$1 n1=$2 n2=$3 top=${4:-40}
tools/tcgcount/build.sh build/tcgcount >/dev/null
args=$(go run ./bench/hlltax/exact/cmd -kernel build/kernel.elf -plugin-args | sed 's/,on=.*//')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
extra=${EXTRA:-}
if [ -z "$extra" ]; then
  extra=$out/extra
  mkdir -p "$extra" && cp -a build/user/bench "$extra/bench"
fi
icount="-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-x2apic"
[ "${ICOUNT:-1}" = 1 ] || icount=""
for n in "$n1" "$n2"; do
  QEMU_EXTRA="$icount -plugin build/tcgcount/libpccount.so,$args,out=$out/$n ${QEMU_EXTRA:-}" CPUS=${CPUS:-1} TIMEOUT=${TIMEOUT:-1200} \
    tools/run-cmd.sh "$extra" "$cmd $n" > "$out/log.$n" 2>&1 || { cat "$out/log.$n" >&2; exit 1; }
done
# A command whose output has a line "ops N" did N operations (e.g. wrk's
# request count for a run of N seconds), as in tools/tcgcount/events.sh.
ops() { sed -n 's/^ops \([0-9][0-9]*\).*/\1/p' "$out/log.$1" | tail -n 1; }
o1=$(ops "$n1") o2=$(ops "$n2")
if [ -n "$o1" ] && [ -n "$o2" ]; then d=$((o2 - o1)); else d=$(((n2 - n1) * ${PER:-1})); fi
[ "$d" -gt 0 ] || { echo "percall: no operations between the runs ($d)" >&2; exit 1; }
go run ./tools/tcgcount/percall -kernel build/kernel.elf -a "$out/$n1" -b "$out/$n2" -ops "$d" -top "$top"
