#!/bin/sh
# Exhaustion test (make exhaust-test; not in make test yet): boots Shortbread
# with -m 128M and a small initramfs (busybox and h_exhaust: GRUB runs out
# of memory loading the whole suite's 14 MiB archive at 128 MiB) and runs
# h_exhaust, which exhausts every kind of kernel memory programs drive with
# several processes at once and checks that the kernel refuses or
# OOM-kills, survives, and gives everything back.
# usage: [KARGS="memprofilerate=4096 ..."] tools/exhausttest.sh [CPUS]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/root"
(cd "$stage/root" && cpio -id --quiet < "$build/user/initramfs.cpio" && rm -rf tests && mkdir tests &&
  cp "$build/user/tests/h_exhaust" tests/ &&
  find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet --owner=0:0 > "$stage/small.cpio")
iso=$stage/x.iso
"$root/tools/mkiso.sh" "$iso" "$build/stub.elf" "$build/kernel.elf" "init=/tests/h_exhaust loglevel=warn ${KARGS:-}" "$stage/small.cpio"
MEM=128M "$root/tools/qemu.sh" "$iso" "${1:-2}" 600 > "$build/exhausttest.log" 2>&1
status=$?
grep -a "^not ok\|^# h_exhaust\|^# round .: MemFree\|^# second round" "$build/exhausttest.log"
[ "$status" -eq 0 ] || { echo "exhaustion test FAILED: status $status (log: $build/exhausttest.log)"; exit 1; }
echo "exhaustion test passed"
