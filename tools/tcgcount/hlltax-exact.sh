#!/bin/sh
# Exact cross-check of the sampled HLL-tax report: boots the kernel with
# bench=hlltax under QEMU TCG with -icount and the pccount plugin, which
# counts every executed kernel instruction, and prints the exact class
# shares of the sampled window next to the sampled ones of the same run.
#
# usage: [BENCH="bench.files=N bench.ops=N ..."] [KERNEL=build/kernel.elf]
#        [OUT=build/tcgcount/run] [BASELINE=1] [TIMEOUT=1800]
#        tools/tcgcount/hlltax-exact.sh
#
# BENCH defaults to "bench.files=50000 bench.ops=200000". The stub and the
# initramfs are taken from next to KERNEL (make kernel build/stub.elf
# build/initramfs.cpio builds them). BASELINE=1 also runs the same ISO
# without the plugin, to state the plugin's slowdown. One vCPU (-smp 1):
# the plugin's counters are exact only when one thread runs the guest.
#
# Output in OUT: counts (whole run) and counts.window (the sampled
# window: from the entry of runtime.sbProfStart to the entry of
# sampler.(*Session).Stop), serial.log, qemu.err, exact.md.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
kernel=${KERNEL:-build/kernel.elf}
kdir=$(dirname "$kernel")
out=${OUT:-build/tcgcount/run}
bench=${BENCH:-bench.files=50000 bench.ops=200000}
limit=${TIMEOUT:-1800}
mkdir -p "$out"

for f in "$kernel" "$kdir/stub.elf" "$kdir/initramfs.cpio"; do
  [ -f "$f" ] || { echo "hlltax-exact: $f missing (make kernel build/stub.elf build/initramfs.cpio)" >&2; exit 1; }
done
tools/deps.sh qemu-system-x86 grub-pc-bin grub-common xorriso mtools
tools/tcgcount/build.sh build/tcgcount >/dev/null
args=$(go run ./bench/hlltax/exact/cmd -kernel "$kernel" -plugin-args)
iso=$out/exact.iso
tools/mkiso.sh "$iso" "$kdir/stub.elf" "$kernel" "bench=hlltax loglevel=warn $bench" "$kdir/initramfs.cpio"

# -cpu max,-x2apic: QEMU 10 stops with "Bad icount read" when an x2APIC
# register (an MSR) is accessed under -icount; MMIO (xAPIC) is fine.
icount="-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-x2apic"
now() { date +%s.%N; }

t0=$(now)
# shellcheck disable=SC2086
tools/qemu.sh "$iso" 1 "$limit" $icount \
  -plugin "build/tcgcount/libpccount.so,$args,out=$out/counts" >"$out/serial.log" 2>"$out/qemu.err" || {
  echo "hlltax-exact: the run with the plugin failed (see $out/serial.log, $out/qemu.err)" >&2; exit 1; }
t1=$(now)
with=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
cat "$out/qemu.err" >&2
echo "hlltax-exact: with the plugin: ${with}s wall" >&2

if [ "${BASELINE:-0}" = 1 ]; then
  t0=$(now)
  # shellcheck disable=SC2086
  tools/qemu.sh "$iso" 1 "$limit" $icount >"$out/serial-baseline.log" 2>&1 || {
    echo "hlltax-exact: the run without the plugin failed (see $out/serial-baseline.log)" >&2; exit 1; }
  t1=$(now)
  without=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
  echo "hlltax-exact: without the plugin: ${without}s wall; slowdown $(awk "BEGIN { printf \"%.2f\", $with / $without }")x (wall time; the machine's load counts too)" >&2
fi

go run ./bench/hlltax/exact/cmd -kernel "$kernel" -counts "$out/counts.window" -whole "$out/counts" \
  -log "$out/serial.log" -md "$out/exact.md" \
  -title "Exact vs sampled HLL tax (1 CPU, QEMU TCG -icount shift=0, $bench)"
echo "report: $out/exact.md" >&2
