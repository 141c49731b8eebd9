#!/bin/sh
# Costly instructions per operation on either kernel: runs a guest command
# twice, with N1 and N2 appended, under the evcount plugin (MOV to CR3,
# HLT, WRMSR, INVLPG, and instructions per address-space half; no -icount,
# so several vCPUs run in parallel), and prints the difference of the
# counts divided by the operations between the runs. Counts, not times:
# they hold on a loaded host.
#
# usage: [LINUX=1] [CPUS=2] [PER=1] [ALL=1] [EXTRA=DIR] [QEMU_EXTRA=ARGS] tools/tcgcount/events.sh 'CMD' N1 N2
#   CMD is run with N appended (e.g. 'sh /etc/redis-get.sh') and does
#   N*PER operations; or, if its output has a line "ops N", that many.
#   EXTRA=DIR is merged into the initramfs (tools/run-cmd.sh), e.g. a tree
#   made by apps/stage.sh; the default is build/user/bench at /bench.
#   ALL=1 adds each event per vCPU and WRMSRs by vCPU and MSR (evcount.c).
# Needs: make kernel user (and make linux-kernel for LINUX=1), QEMU >= 8.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmd=$1 n1=$2 n2=$3
tools/tcgcount/build.sh build/tcgcount >/dev/null
[ -f build/tcgcount/libevcount.so ] || { echo "events: this QEMU's plugin API has no scoreboards" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
extra=${EXTRA:-}
if [ -z "$extra" ]; then
  extra=$out/extra
  mkdir -p "$extra" && cp -a build/user/bench "$extra/bench"
fi
for n in "$n1" "$n2"; do
  QEMU_EXTRA="-plugin build/tcgcount/libevcount.so,out=$out/$n ${QEMU_EXTRA:-}" CPUS=${CPUS:-2} TIMEOUT=${TIMEOUT:-1200} \
    tools/run-cmd.sh "$extra" "$cmd $n" > "$out/log.$n" 2>&1 || { cat "$out/log.$n" >&2; exit 1; }
done
ops() { sed -n 's/^ops \([0-9][0-9]*\).*/\1/p' "$out/log.$1" | tail -n 1; }
o1=$(ops "$n1") o2=$(ops "$n2")
if [ -n "$o1" ] && [ -n "$o2" ]; then d=$((o2 - o1)); else d=$(((n2 - n1) * ${PER:-1})); fi
[ "$d" -gt 0 ] || { echo "events: no operations between the runs ($d)" >&2; exit 1; }
echo "events per operation ($d operations, ${CPUS:-2} CPUs, $( [ "${LINUX:-0}" = 1 ] && echo Linux || echo Shortbread))"
# Lines matched by name: the per-MSR rows of one run need not be in the
# other's. ALL=1 prints the per-vCPU and per-MSR rows too, those that
# round to 0.00 left out (else only the totals).
awk -v d="$d" -v all="${ALL:-0}" '
  NR == FNR { a[$1] = $2; next }
  { v = ($2 - a[$1]) / d }
  $1 !~ /[.]/ || all == 1 && (v >= 0.005 || v <= -0.005) { printf "  %-28s %12.2f\n", $1, v }
' "$out/$n1" "$out/$n2"
